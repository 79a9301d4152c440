//! Reading a model from any serde deserializer (a JS value through serde-wasm-bindgen, JSON
//! text, a `serde_json::Value`).
//!
//! The models' wire structs hold each field as a [`Field`]: missing, of the expected type, or
//! not. A field of the wrong type does not end the reading, so validation (`TryFrom`, in each
//! model) sees every field and refuses the first bad one with that field's own rule as the
//! message, whether its type or its value was wrong.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

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
        Ok(T::deserialize(deserializer).map_or(Field::Invalid, Field::Valid))
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
    T::deserialize(deserializer).map_err(|e| {
        let message = e.to_string();
        if message.starts_with("invalid type") {
            expected.to_owned()
        } else {
            message
        }
    })
}

/// The keys an object may have; `nested` names one key whose value is an object with keys of
/// its own (the options' `retry`).
pub struct Keys {
    pub known: &'static [&'static str],
    pub nested: Option<(&'static str, &'static [&'static str])>,
}

impl Keys {
    /// The first key of the object `deserializer` holds that is not known (a nested one as
    /// `outer.inner`). Anything that is not an object has none: the model's reader says what
    /// is wrong with it. (The models read known fields only: serde-wasm-bindgen never shows
    /// them the other keys, so `deny_unknown_fields` cannot be used.)
    pub fn unknown<'de, D: Deserializer<'de>>(&self, deserializer: D) -> Option<String> {
        deserializer.deserialize_map(self).ok().flatten()
    }
}

impl<'de> Visitor<'de> for &Keys {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        // Every entry is read (a deserializer may refuse a map left half-read); the first
        // unknown key is the answer.
        let mut first = None;
        while let Some(key) = map.next_key::<String>()? {
            let unknown = match self.nested {
                Some((name, known)) if key == name => {
                    let inner = Keys {
                        known,
                        nested: None,
                    };
                    map.next_value_seed(&inner)?
                        .map(|inner| format!("{key}.{inner}"))
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    (!self.known.contains(&key.as_str())).then_some(key)
                }
            };
            first = first.or(unknown);
        }
        Ok(first)
    }
}

impl<'de> DeserializeSeed<'de> for &Keys {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Ok(self.unknown(deserializer))
    }
}
