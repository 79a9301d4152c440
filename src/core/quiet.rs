//! The guard's one JSON reader: two passes, with messages that never print a float.
//!
//! serde's "invalid type" errors describe the value they met: for a number that is
//! `Unexpected::Float`, printed with `f64`'s `Display`. The guard never shows those texts: a
//! model's reader puts the field's own rule in their place ([`wire`](super::wire)). Here a JSON
//! text is parsed into a `serde_json::Value` within the usual limits ([`parse`]: [`AnyJson`], a
//! visitor that never refuses a value), and the models are read from the value through
//! [`Json`], a deserializer whose [`Error`] names the kind of value met without printing it.
//! Every JSON text is read this way: arguments, stored records and answer bodies. (A second
//! reader, straight from the text by serde_json's typed requests, was dropped for size in issue
//! #43: its errors print floats, which brought core's float formatting into the module, and
//! with its monomorphized visitors it cost 24,961 B of the module gzipped.)
//!
//! [`Json`] reads a value as serde-wasm-bindgen read a JS value: a typed request is answered when
//! the value is of its kind (numbers as `u64`, `i64` or `f64`, in that order of preference, for
//! the visitor to take or refuse) and refused otherwise (a struct from an object only);
//! `deserialize_any` answers with whatever the value is; an enum is a string (a unit variant)
//! or an object of one key.

use std::fmt::{self, Display};

use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, Deserializer, Expected, IntoDeserializer, Unexpected, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::wire::AnyJson;

/// A reading error; its text is serde's, with a number met where it was not expected named
/// "a number" instead of printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error(msg.to_string())
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        Error(format!("invalid type: {}, expected {exp}", Met(unexp)))
    }

    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        Error(format!("invalid value: {}, expected {exp}", Met(unexp)))
    }
}

/// What was met, as serde says it, but a float only as "a number".
struct Met<'a>(Unexpected<'a>);

impl Display for Met<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Unexpected::Bool(b) => write!(f, "boolean `{b}`"),
            Unexpected::Unsigned(n) => write!(f, "integer `{n}`"),
            Unexpected::Signed(n) => write!(f, "integer `{n}`"),
            Unexpected::Float(_) => f.write_str("a number"),
            Unexpected::Char(_) => f.write_str("a character"),
            Unexpected::Str(_) => f.write_str("a string"),
            Unexpected::Bytes(_) => f.write_str("bytes"),
            Unexpected::Unit => f.write_str("null"),
            Unexpected::Option => f.write_str("an optional value"),
            Unexpected::NewtypeStruct => f.write_str("a newtype struct"),
            Unexpected::Seq => f.write_str("a sequence"),
            Unexpected::Map => f.write_str("a map"),
            Unexpected::Enum => f.write_str("an enum"),
            Unexpected::UnitVariant => f.write_str("a unit variant"),
            Unexpected::NewtypeVariant => f.write_str("a newtype variant"),
            Unexpected::TupleVariant => f.write_str("a tuple variant"),
            Unexpected::StructVariant => f.write_str("a struct variant"),
            Unexpected::Other(other) => f.write_str(other),
        }
    }
}

/// JSON text as a `serde_json::Value`, within the limits every JSON from outside is read with
/// ([`AnyJson`]: at most [`MAX_DEPTH`](super::wire::MAX_DEPTH) levels deep, no `__proto__`
/// keys), the whole text (trailing characters are an error).
pub fn parse(text: &str) -> Result<Value, Error> {
    let text = &*super::surrogates::mend(text);
    let mut json = serde_json::Deserializer::from_str(text);
    let parsed = AnyJson::deserialize(&mut json).and_then(|AnyJson(value)| {
        json.end()?;
        Ok(value)
    });
    // serde_json ends its messages with the position, which says nothing about a text the
    // guard wrote itself (an argument); the rule broken is the message.
    parsed.map_err(|e| {
        let at = format!(" at line {} column {}", e.line(), e.column());
        let text = e.to_string();
        Error(text.strip_suffix(&at).unwrap_or(&text).to_owned())
    })
}

/// The longest answer body the guard reads (UTF-16 code units, as JS counts): a longer one is
/// not the endpoint's answer.
pub const MAX_BODY_CHARS: usize = 64 * 1024;

/// A body's text as JSON, if it is JSON within the limits every body is read with: at most
/// [`MAX_BODY_CHARS`] long and [`wire::MAX_DEPTH`](super::wire::MAX_DEPTH) levels deep.
pub fn json_within_limits(text: &str) -> Option<serde_json::Value> {
    if text.encode_utf16().count() > MAX_BODY_CHARS {
        return None;
    }
    parse(text).ok()
}

/// Reads JSON `text` with `read` in two passes: [`parse`], then the model from the value
/// through [`Json`]. `not_json` is the error for a text that is not JSON within the limits.
pub fn read<T, E>(
    text: &str,
    read: impl FnOnce(Json<'_>) -> Result<T, E>,
    not_json: impl FnOnce(Error) -> E,
) -> Result<T, E> {
    let value = parse(text).map_err(not_json)?;
    read(Json(&value))
}

/// Reads a `T` from JSON text ([`read`]).
pub fn from_json<T: de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    T::deserialize(Json(&parse(text)?))
}

/// A parsed JSON value as a deserializer that reports errors with [`Error`].
#[derive(Clone, Copy)]
pub struct Json<'a>(pub &'a Value);

impl<'de> IntoDeserializer<'de, Error> for Json<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// Number requests answered as `deserialize_u64` answers them (a number of any kind).
macro_rules! numbers_as_u64 {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.deserialize_u64(visitor)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Json<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visit_seq(items, visitor),
            Value::Object(entries) => visit_map(entries, visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Object(entries) if entries.len() == 1 => {
                let map = MapDeserializer::new(entries.iter().map(|(k, v)| (k.as_str(), Json(v))));
                visitor.visit_enum(MapAccessDeserializer::new(map))
            }
            _ => Err(de::Error::custom(
                "expected a variant: a string or an object of one key",
            )),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Bool(b) => visitor.visit_bool(*b),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_borrowed_str(s),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(items) => visit_seq(items, visitor),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(entries) => visit_map(entries, visitor),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Number(n) => visit_number(n, visitor),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    // Every number the guard reads, whatever its Rust type: the visitor takes or refuses it.
    numbers_as_u64! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_f32 deserialize_f64
    }

    // Bytes and 128-bit numbers are nothing the guard reads: whatever the value is.
    serde::forward_to_deserialize_any! {
        i128 u128 bytes byte_buf
    }
}

fn visit_number<'de, V: Visitor<'de>>(
    n: &serde_json::Number,
    visitor: V,
) -> Result<V::Value, Error> {
    match (n.as_u64(), n.as_i64(), n.as_f64()) {
        (Some(u), _, _) => visitor.visit_u64(u),
        (None, Some(i), _) => visitor.visit_i64(i),
        (None, None, Some(f)) => visitor.visit_f64(f),
        (None, None, None) => Err(de::Error::custom("a number out of range")),
    }
}

fn visit_seq<'de, V: Visitor<'de>>(items: &'de [Value], visitor: V) -> Result<V::Value, Error> {
    let mut seq = SeqDeserializer::new(items.iter().map(Json));
    let value = visitor.visit_seq(&mut seq)?;
    seq.end()?;
    Ok(value)
}

fn visit_map<'de, V: Visitor<'de>>(
    entries: &'de serde_json::Map<String, Value>,
    visitor: V,
) -> Result<V::Value, Error> {
    let mut map = MapDeserializer::new(entries.iter().map(|(k, v)| (k.as_str(), Json(v))));
    let value = visitor.visit_map(&mut map)?;
    map.end()?;
    Ok(value)
}

impl Json<'_> {
    /// The error for a value of the wrong type: one function for every visitor, so that a
    /// typed request costs the module one branch, not a refusal per visitor.
    #[cold]
    fn invalid(self, expected: &dyn Expected) -> Error {
        let met = match self.0 {
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Number(_) => Unexpected::Float(0.0),
            Value::String(_) => Unexpected::Str(""),
            Value::Array(_) => Unexpected::Seq,
            Value::Object(_) => Unexpected::Map,
        };
        de::Error::invalid_type(met, expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Unit,
        Data(u8),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Shape {
        name: String,
        count: u32,
        ratio: f64,
        tags: Vec<String>,
        maybe: Option<bool>,
        kind: Kind,
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let v = json!({"name": "n", "count": 3, "ratio": 0.5, "tags": ["a"], "maybe": null,
                       "kind": {"data": 7}, "extra": [1, {"x": 2}]});
        let quiet = Shape::deserialize(Json(&v)).unwrap();
        assert_eq!(quiet, serde_json::from_value::<Shape>(v).unwrap());
        assert_eq!(quiet.kind, Kind::Data(7));
        assert_eq!(Kind::deserialize(Json(&json!("unit"))).unwrap(), Kind::Unit);
        assert!(Kind::deserialize(Json(&json!(5))).is_err());
        assert!(Kind::deserialize(Json(&json!({"unit": null, "data": 1}))).is_err());
        assert_eq!(from_json::<u64>(" 42 ").unwrap(), 42);
        assert_eq!(from_json::<i64>("-42").unwrap(), -42);
        assert_eq!(from_json::<f64>("42").unwrap(), 42.0);
    }

    #[test]
    fn errors_name_a_number_without_printing_it() {
        for (value, expected) in [
            (json!(1.5), "invalid type: a number, expected a string"),
            (
                json!(true),
                "invalid type: boolean `true`, expected a string",
            ),
            (json!([1]), "invalid type: a sequence, expected a string"),
        ] {
            let err = String::deserialize(Json(&value)).unwrap_err();
            assert_eq!(err.to_string(), expected);
        }
        // Through a visitor's own refusal (u8 out of range) and a struct from a non-object.
        let err = u8::deserialize(Json(&json!(300))).unwrap_err().to_string();
        assert_eq!(err, "invalid value: integer `300`, expected u8");
        let err = Shape::deserialize(Json(&json!(2.25)))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "invalid type: a number, expected struct Shape");
        let err = u8::deserialize(Json(&json!(2.25))).unwrap_err().to_string();
        assert!(!err.contains("2.25"), "{err}");
    }

    #[test]
    fn parse_keeps_the_limits_of_every_json_from_outside() {
        assert!(parse("{} x").is_err(), "trailing text");
        assert!(parse("{").is_err());
        let deep = format!("{}1{}", "[".repeat(64), "]".repeat(64));
        assert!(parse(&deep).is_ok());
        assert!(parse(&format!("[{deep}]")).is_err());
        assert_eq!(
            parse(r#"{"__proto__": 1, "a": 2}"#).unwrap(),
            json!({"a": 2})
        );
        // A `T` read from the text: the same limits, then `T`'s own rules.
        assert_eq!(from_json::<Vec<u8>>("[1, 2]").unwrap(), vec![1, 2]);
        assert!(from_json::<Vec<u8>>("[1.5]").is_err());
        assert!(from_json::<Vec<u8>>(&format!("[{deep}]")).is_err());
    }
}
