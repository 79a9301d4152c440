//! Reading a model from any serde deserializer (an argument's JSON, read through
//! [`quiet::Json`](super::quiet::Json); JSON text; a `serde_json::Value`).
//!
//! The models' wire structs hold each field as a [`Field`]: missing, of the expected type, or
//! not. A field of the wrong type does not end the reading, so validation (`TryFrom`, in each
//! model) sees every field and refuses the first bad one with that field's own rule as the
//! message, whether its type or its value was wrong.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::ids::MAX_SAFE_INTEGER;

/// A field as it arrived.
#[derive(Debug, Default)]
pub enum Field<T> {
    #[default]
    Missing,
    Valid(T),
    /// There, but not a `T`.
    Invalid,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match T::deserialize(deserializer) {
            Ok(value) => Ok(Field::Valid(value)),
            Err(_) => Ok(Field::Invalid),
        }
    }
}

/// A field of the wrong type.
#[derive(Debug)]
pub struct WrongType;

impl<T> Field<T> {
    /// The value, if it is there and of the expected type.
    pub fn valid(self) -> Option<T> {
        match self {
            Field::Valid(v) => Some(v),
            Field::Missing | Field::Invalid => None,
        }
    }

    /// An optional field: `None` when missing, an error when of the wrong type.
    pub fn optional(self) -> Result<Option<T>, WrongType> {
        match self {
            Field::Missing => Ok(None),
            Field::Valid(v) => Ok(Some(v)),
            Field::Invalid => Err(WrongType),
        }
    }
}

impl<T> Field<Option<T>> {
    /// An optional field where `null` means absent too.
    pub fn nullable(self) -> Result<Option<T>, WrongType> {
        self.optional().map(Option::flatten)
    }
}

/// Reads a `T`; when the value is not even of the shape `T` reads (an object, for the models),
/// the error is `expected`. Other errors are serde's.
pub fn read<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
    expected: &str,
) -> Result<T, String> {
    T::deserialize(deserializer).map_err(|e| message(e.to_string(), expected))
}

/// The message of a model's reading error: `expected` when the value was not of the shape
/// read, serde's own otherwise.
fn message(serde_message: String, expected: &str) -> String {
    if serde_message.starts_with("invalid type") {
        expected.to_owned()
    } else {
        serde_message
    }
}

/// The key a struct with `#[serde(deny_unknown_fields)]` did not know, and the names it knows,
/// from serde's message for it (`` unknown field `x`, expected one of `a`, `b` ``): the one
/// shape of that error every deserializer writes. `None` for any other message.
pub fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let end = rest
        .rfind("`, expected ")
        .or_else(|| rest.rfind("`, there are no fields"))?;
    let (key, known) = (rest.get(..end)?, rest.get(end + 1..)?);
    let known = known
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    Some((key.to_owned(), known))
}

/// A struct inside a model, read from an object only (serde_json's own deserializer would read a
/// struct from an array too).
#[derive(Debug, Default)]
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }

        deserializer
            .deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
}

/// How deep JSON of any shape (`errors`, `headers`) may nest: every JSON from outside (an
/// argument, a stored record, an answer body) is read at most this deep. serde_json's own
/// parser stops at 128; deeper values would cost stack that no caller can recover.
pub const MAX_DEPTH: usize = 64;

/// JSON of any shape, read as a `serde_json::Value` at most [`MAX_DEPTH`] levels deep, a whole
/// number beyond JS's safe integers as the float JS holds for it. A key `__proto__` is left out: handed back to JS as an object's key it would set that object's
/// prototype (serde-wasm-bindgen, which writes the answers, builds objects by assignment).
#[derive(Debug)]
pub struct AnyJson(pub Value);

impl<'de> Deserialize<'de> for AnyJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Depth(MAX_DEPTH).deserialize(deserializer).map(AnyJson)
    }
}

/// Reads one value with `.0` levels left below it.
#[derive(Clone, Copy)]
struct Depth(usize);

impl Depth {
    fn below<E: serde::de::Error>(self) -> Result<Depth, E> {
        self.0
            .checked_sub(1)
            .map(Depth)
            .ok_or_else(|| E::custom(format!("nested more than {MAX_DEPTH} levels deep")))
    }
}

impl<'de> DeserializeSeed<'de> for Depth {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Depth {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    // A whole number beyond 2^53 - 1 either side of 0 is kept as the float JS reads it as (the
    // value a JS app gave, or `JSON.parse` would give): handed back as it came, it could not be
    // a JS number at all (serde-wasm-bindgen refuses it).
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(if v.unsigned_abs() > MAX_SAFE_INTEGER {
            Value::from(v as f64)
        } else {
            Value::from(v)
        })
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(if v > MAX_SAFE_INTEGER {
            Value::from(v as f64)
        } else {
            Value::from(v)
        })
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let below = self.below()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(below)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let below = self.below()?;
        let mut entries = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "__proto__" {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value_seed(below)?;
            entries.insert(key, value);
        }
        Ok(Value::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_field_is_read_from_serdes_one_message_for_it() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Two {
            interval_ms: Option<u8>,
            max_interval_ms: Option<u8>,
        }
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Three {
            a: Option<u8>,
            b: Option<u8>,
            c: Option<u8>,
        }
        let err = |v: Value| -> String {
            match serde::Deserialize::deserialize(crate::core::quiet::Json(&v)) {
                Ok(Two { .. }) => String::new(),
                Err(e) => e.to_string(),
            }
        };
        let m = err(serde_json::json!({"interval": 1}));
        assert_eq!(
            unknown_field(&m),
            Some((
                "interval".to_owned(),
                vec!["intervalMs".to_owned(), "maxIntervalMs".to_owned()]
            ))
        );
        // A key with backticks and commas of its own, and serde_json's own deserializer.
        let odd = "a`, expected `x";
        let e = serde_json::from_value::<Three>(serde_json::json!({ odd: 1 })).unwrap_err();
        let (key, known) = unknown_field(&e.to_string()).unwrap();
        assert_eq!(
            (key.as_str(), known),
            (odd, vec!["a".to_owned(), "b".into(), "c".into()])
        );
        assert_eq!(unknown_field("invalid type: a number"), None);
    }

    #[test]
    fn any_json_keeps_everything_but_proto_keys_within_the_depth() {
        let text =
            r#"{"message":"m","__proto__":{"polluted":true},"extra":{"n":[1,2.5,null,"x"]}}"#;
        let AnyJson(value) = serde_json::from_str(text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"message": "m", "extra": {"n": [1, 2.5, null, "x"]}})
        );
        let deep = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(serde_json::from_str::<AnyJson>(&deep).is_ok());
        let deeper = format!("[{deep}]");
        let err = serde_json::from_str::<AnyJson>(&deeper).unwrap_err();
        assert!(err.to_string().contains("nested more than 64"), "{err}");
    }
}
