//! Reading JSON text straight into a model, in one pass.
//!
//! The guard's readers take any serde deserializer. [`quiet`] reads JSON in two passes: the text
//! into a `serde_json::Value` within the limits every JSON from outside is read with, then the
//! model from the value. That is the reading whose answers (and messages) are the guard's. Most
//! texts the guard reads are well-formed (arguments the page wrote as JSON, records the guard
//! wrote itself), so [`read`] first reads the model straight from the text with serde_json's
//! own deserializer ([`Text::Straight`]); a page's first calls then compile neither the `Value`
//! tree nor a second visitor per model. When anything about that read fails, the text is read
//! again the two-pass way ([`Text::Parsed`]), and that answer is the answer.
//!
//! So a straight read may only succeed where the two-pass read gives the same value. What could
//! make them differ is kept out:
//! - depth: a text nested more than [`MAX_DEPTH`] levels is not read straight (the two-pass
//!   read refuses it; serde_json alone would skip it in an unknown field);
//! - a field of the wrong type: the two-pass read keeps it as
//!   [`Field::Invalid`](super::wire::Field) and reads on; a straight reader cannot go back past
//!   it, so during a straight read such a field ends the read
//!   ([`wire::read_straight`](super::wire::read_straight));
//! - a struct from an array: serde_json reads one, the two-pass read does not; a model is read
//!   from an object only, and a struct inside one is read as [`Object`](super::wire::Object);
//! - a duplicate key, a `__proto__` key in a model's object, trailing text: serde_json refuses
//!   them, and the two-pass read decides;
//! - a number whose exponent has three digits or more (`1e400`): serde_json's parse of a value
//!   refuses one out of range, but its straight read skips it unchecked in a field it ignores,
//!   so such a text is not read straight (found by the fuzz target).
//!
//! `tests/properties.rs` checks, over generated texts, that every straight read that succeeds
//! gives what the two-pass read gives.

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::de::StrRead;

use super::quiet::{self, Error, Json};
use super::surrogates;
use super::wire::{self, MAX_DEPTH};

/// A deserializer over JSON text: serde_json's over the text itself, or [`Json`] over the value
/// it parsed to.
pub enum Text<'a, 'de> {
    Straight(&'a mut serde_json::Deserializer<StrRead<'de>>),
    Parsed(Json<'de>),
}

/// Reads `text` with `read`: straight from the text when that read succeeds, from its parsed
/// value otherwise. `not_json` is the error for a text that is not JSON within the limits.
pub fn read<T, E>(
    text: &str,
    read: impl Fn(Text<'_, '_>) -> Result<T, E>,
    not_json: impl FnOnce(Error) -> E,
) -> Result<T, E> {
    let text = &*surrogates::mend(text);
    if straight_readable(text) {
        let mut json = serde_json::Deserializer::from_str(text);
        let straight = wire::read_straight(|| read(Text::Straight(&mut json)));
        if let Ok(value) = straight {
            if json.end().is_ok() {
                return Ok(value);
            }
        }
    }
    let value = quiet::parse(text).map_err(not_json)?;
    read(Text::Parsed(Json(&value)))
}

/// Reads a `T` from JSON text ([`read`]).
pub fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    read(text, |d| T::deserialize(d), |e| e)
}

/// Whether well-formed JSON `text` nests at most [`MAX_DEPTH`] arrays and objects deep, as
/// [`quiet::parse`] counts them, and holds no number whose exponent has three digits or more
/// (which may be out of range). (Malformed text may be counted wrong: serde_json refuses it.)
fn straight_readable(text: &str) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    // Digits of an exponent met so far (`None` outside one).
    let mut exponent: Option<u8> = None;
    for b in text.bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        if let Some(digits) = exponent.as_mut() {
            match b {
                b'0'..=b'9' => {
                    *digits += 1;
                    if *digits >= 3 {
                        return false;
                    }
                    continue;
                }
                b'+' | b'-' if *digits == 0 => continue,
                _ => exponent = None,
            }
        }
        match b {
            b'e' | b'E' => exponent = Some(0),
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// A straight read's error: never shown (the text is read again).
#[cold]
fn lost(_: serde_json::Error) -> Error {
    de::Error::custom("not read straight")
}

macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*))*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Error> {
                match self {
                    Text::Straight(json) => json.$method($($arg,)* visitor).map_err(lost),
                    Text::Parsed(json) => json.$method($($arg,)* visitor),
                }
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Text<'_, 'de> {
    type Error = Error;

    forward! {
        deserialize_any() deserialize_bool() deserialize_i8() deserialize_i16()
        deserialize_i32() deserialize_i64() deserialize_i128() deserialize_u8()
        deserialize_u16() deserialize_u32() deserialize_u64() deserialize_u128()
        deserialize_f32() deserialize_f64() deserialize_char() deserialize_str()
        deserialize_string() deserialize_bytes() deserialize_byte_buf() deserialize_option()
        deserialize_unit() deserialize_unit_struct(name: &'static str)
        deserialize_newtype_struct(name: &'static str) deserialize_seq()
        deserialize_tuple(len: usize) deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_map()
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
        deserialize_identifier() deserialize_ignored_any()
    }

    /// A model from an object only: serde_json reads a struct from an array too, the two-pass
    /// read from an object only. (A struct inside a model is read as
    /// [`Object`](super::wire::Object) for the same reason.)
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Text::Straight(json) => json.deserialize_map(visitor).map_err(lost),
            Text::Parsed(json) => json.deserialize_struct(name, fields, visitor),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::cell::Cell;

    thread_local! {
        static PASSES: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    }

    /// Counts how it was read: straight or from a parsed value.
    #[derive(Debug, PartialEq)]
    struct Counted(Vec<u8>);

    impl<'de> Deserialize<'de> for Counted {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            PASSES.with(|p| {
                let (s, t) = p.get();
                p.set(if wire::reading_straight() {
                    (s + 1, t)
                } else {
                    (s, t + 1)
                });
            });
            Vec::<u8>::deserialize(d).map(Counted)
        }
    }

    fn passes() -> (usize, usize) {
        PASSES.with(Cell::get)
    }

    #[test]
    fn well_formed_text_is_read_once_straight() {
        let before = passes();
        assert_eq!(from_json::<Counted>("[1, 2]").unwrap(), Counted(vec![1, 2]));
        assert_eq!((passes().0 - before.0, passes().1 - before.1), (1, 0));
    }

    #[test]
    fn what_the_straight_read_refuses_is_read_again_from_its_value() {
        let before = passes();
        // A value the reader refuses: read straight, then from the parsed value.
        assert!(from_json::<Counted>("[1, 300]").is_err());
        // Trailing text: read straight, then refused by the parse (no value to read from).
        assert!(from_json::<Counted>("[1] x").is_err());
        // Too deep: not read straight; refused by the parse.
        let deep = format!("{}1{}", "[".repeat(65), "]".repeat(65));
        assert!(from_json::<Counted>(&deep).is_err());
        assert_eq!((passes().0 - before.0, passes().1 - before.1), (2, 1));
        assert!(
            !wire::reading_straight(),
            "the flag is down after every read"
        );
    }

    #[test]
    fn a_number_out_of_range_in_an_ignored_field_is_refused_as_the_two_pass_read_refuses_it() {
        // Found by the fuzz target: serde_json skips the number of an unknown field unchecked.
        let text = r#"{"job_id": "j", "updated_at": 17000E111111110}"#;
        assert!(!straight_readable(text));
        assert!(quiet::parse(text).is_err());
        let read = |t: &str| {
            read(
                t,
                |d| crate::core::model::JobMetadata::read_event(d),
                |_| crate::core::error::GuardError::InvalidJob(String::new()),
            )
        };
        assert!(read(text).is_err());
        // A three-digit exponent in range is read, through the two passes; `true`, `false` and
        // an `e` in a string are no exponent.
        assert!(!straight_readable("[1e100]"));
        assert!(quiet::parse("[1e100]").is_ok());
        assert!(straight_readable(r#"[true, false, 1e99, 2E-9, "e999"]"#));
    }

    #[test]
    fn depth_is_counted_as_the_two_pass_read_counts_it() {
        let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(straight_readable(&nest(MAX_DEPTH)));
        assert!(!straight_readable(&nest(MAX_DEPTH + 1)));
        assert!(quiet::parse(&nest(MAX_DEPTH)).is_ok());
        assert!(quiet::parse(&nest(MAX_DEPTH + 1)).is_err());
        // Brackets in strings, escaped quotes and backslashes are not nesting.
        let text = format!(r#"{{"a": "[[[\"[[\\", "b": {}}}"#, nest(MAX_DEPTH - 1));
        assert!(straight_readable(&text));
        assert!(quiet::parse(&text).is_ok());
        let text = format!(r#"{{"a": "\\", "b": {}}}"#, nest(MAX_DEPTH));
        assert!(!straight_readable(&text));
    }
}
