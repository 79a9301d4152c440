//! A small JSON reader and writer, just what the guard needs: values cross the JS boundary and
//! sit in storage as JSON text.
//!
//! Purpose-built instead of serde/serde_json to keep the wasm module small:
//! - objects are a `Vec` of members in their written order (no B-tree); a repeated name reads
//!   as its last value, as with `JSON.parse`;
//! - numbers keep their text, so they are written back exactly as they came and no float
//!   parsing or formatting code is linked in; the guard only ever needs whole numbers (user
//!   ids, timestamps, option values) and a millisecond count, which [`Number`] computes
//!   exactly from the digits;
//! - nesting deeper than [`MAX_DEPTH`] is refused, so hostile input cannot exhaust the stack.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

/// Deepest nesting of arrays and objects read.
pub const MAX_DEPTH: usize = 128;

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Object),
}

/// A JSON number, as its (validated) text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Number(String);

/// A JSON object: its members in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object(pub Vec<(String, Value)>);

impl Object {
    /// The value of a member; a name given twice reads as its last value (as `JSON.parse`).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The first member name not in `known`, if any.
    pub fn unknown_key(&self, known: &[&str]) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, _)| k.as_str())
    }

    /// The member names, in order (a repeated name appears each time).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// The members in order (as `JSON.stringify` writes them, each name once).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// How many members were written.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Value {
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A member of an object value; `None` for a missing member or a value that is not an
    /// object.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.get(name))
    }
}

/// A number taken apart: the value is `(-1 if negative) * digits * 10^exponent`, where the
/// digits are the mantissa's (its `.` skipped).
struct Decimal<'a> {
    negative: bool,
    mantissa: &'a [u8],
    exponent: i64,
}

impl Decimal<'_> {
    fn digits(&self) -> impl Iterator<Item = u8> + Clone + '_ {
        self.mantissa.iter().copied().filter(u8::is_ascii_digit)
    }

    fn is_zero(&self) -> bool {
        self.digits().all(|b| b == b'0')
    }
}

impl Number {
    /// Reads a number's text; `None` unless it follows JSON's number grammar.
    pub fn parse(text: &str) -> Option<Self> {
        let mut p = Parser::new(text);
        let n = p.number().ok()?;
        (p.pos == text.len()).then_some(n)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the text is a plain integer (no fraction, no exponent).
    pub fn is_integer_text(&self) -> bool {
        !self.0.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
    }

    fn decimal(&self) -> Decimal<'_> {
        let text = self.0.as_bytes();
        let negative = text.first() == Some(&b'-');
        let body = text.get(usize::from(negative)..).unwrap_or_default();
        let mantissa_end = body
            .iter()
            .position(|b| *b == b'e' || *b == b'E')
            .unwrap_or(body.len());
        let (mantissa, exp) = body.split_at(mantissa_end);
        let mut exponent: i64 = 0;
        let mut exp_negative = false;
        for b in exp.iter().skip(1) {
            match b {
                b'-' => exp_negative = true,
                b'+' => {}
                d => {
                    exponent = exponent
                        .saturating_mul(10)
                        .saturating_add(i64::from(d - b'0'))
                }
            }
        }
        if exp_negative {
            exponent = -exponent;
        }
        let frac_len = match mantissa.iter().position(|b| *b == b'.') {
            Some(dot) => mantissa.len() - dot - 1,
            None => 0,
        };
        Decimal {
            negative,
            mantissa,
            exponent: exponent.saturating_sub(i64::try_from(frac_len).unwrap_or(i64::MAX)),
        }
    }

    /// Whether the value is negative (`-0` is not).
    pub fn is_negative(&self) -> bool {
        let d = self.decimal();
        d.negative && !d.is_zero()
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.decimal().is_zero()
    }

    /// The magnitude times `10^scale`, if that is a whole number that fits a `u64`.
    pub fn exact_magnitude(&self, scale: i64) -> Option<u64> {
        self.scaled(scale, false)
    }

    /// The magnitude times `10^scale`, rounded half up, if that fits a `u64`.
    pub fn rounded_magnitude(&self, scale: i64) -> Option<u64> {
        self.scaled(scale, true)
    }

    fn scaled(&self, scale: i64, round: bool) -> Option<u64> {
        if scale == 0 && self.0.bytes().all(|b| b.is_ascii_digit()) {
            // The common case (ids, timestamps): a plain non-negative integer.
            return self.0.bytes().try_fold(0u64, |n, b| {
                n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
            });
        }
        let d = self.decimal();
        if d.is_zero() {
            return Some(0);
        }
        let digits = d.digits();
        let shift = d.exponent.saturating_add(scale);
        let count = i64::try_from(digits.clone().count()).ok()?;
        // Digits before the point after shifting, and the ones after it.
        let keep = count.saturating_add(shift.min(0));
        let mut value: u64 = 0;
        let mut rest = digits.clone().skip(usize::try_from(keep.max(0)).ok()?);
        for b in digits.take(usize::try_from(keep.max(0)).ok()?) {
            value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        }
        for _ in 0..shift.max(0) {
            value = value.checked_mul(10)?;
        }
        if keep < 0 {
            // Every digit is past the first decimal place: below 0.1, rounds to 0.
            return round.then_some(0);
        }
        if round {
            if rest.next().is_some_and(|b| b >= b'5') {
                value = value.checked_add(1)?;
            }
            Some(value)
        } else {
            rest.all(|b| b == b'0').then_some(value)
        }
    }
}

/// Reads one JSON text (surrounding whitespace allowed); `None` for anything else.
pub fn parse(text: &str) -> Option<Value> {
    let mut p = Parser::new(text);
    p.skip_ws();
    let value = p.value(0).ok()?;
    p.skip_ws();
    (p.pos == text.len()).then_some(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

/// Where and why reading failed; only used to stop.
struct Invalid;

type Read<T> = Result<T, Invalid>;

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Read<u8> {
        let b = self.peek().ok_or(Invalid)?;
        self.pos += 1;
        Ok(b)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Read<Value> {
        if self
            .text
            .get(self.pos..)
            .is_some_and(|t| t.starts_with(word))
        {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(Invalid)
        }
    }

    fn value(&mut self, depth: usize) -> Read<Value> {
        match self.peek().ok_or(Invalid)? {
            b'n' => self.literal("null", Value::Null),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'"' => self.string().map(Value::String),
            b'[' if depth < MAX_DEPTH => self.array(depth + 1),
            b'{' if depth < MAX_DEPTH => self.object(depth + 1),
            b'-' | b'0'..=b'9' => self.number().map(Value::Number),
            _ => Err(Invalid),
        }
    }

    fn array(&mut self, depth: usize) -> Read<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.next()? {
                b',' => {}
                b']' => return Ok(Value::Array(items)),
                _ => return Err(Invalid),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Read<Value> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(Object(members)));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(Invalid);
            }
            let name = self.string()?;
            self.skip_ws();
            if self.next()? != b':' {
                return Err(Invalid);
            }
            self.skip_ws();
            let value = self.value(depth)?;
            members.push((name, value));
            self.skip_ws();
            match self.next()? {
                b',' => {}
                b'}' => return Ok(Value::Object(Object(members))),
                _ => return Err(Invalid),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Read<Number> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Invalid),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Invalid);
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Invalid);
            }
        }
        let text = self.text.get(start..self.pos).ok_or(Invalid)?;
        Ok(Number(text.to_owned()))
    }

    fn hex4(&mut self) -> Read<u32> {
        let mut n = 0;
        for _ in 0..4 {
            let d = char::from(self.next()?).to_digit(16).ok_or(Invalid)?;
            n = n * 16 + d;
        }
        Ok(n)
    }

    fn string(&mut self) -> Read<String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Copy the run up to the next quote, backslash or control character at once.
            let start = self.pos;
            let rest = self.bytes.get(start..).unwrap_or_default();
            let run = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(rest.len());
            self.pos += run;
            out.push_str(self.text.get(start..self.pos).ok_or(Invalid)?);
            match self.next()? {
                b'"' => return Ok(out),
                b'\\' => {}
                _ => return Err(Invalid),
            }
            let c = match self.next()? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let high = self.hex4()?;
                    let code = if (0xD800..0xDC00).contains(&high) {
                        // A surrogate pair; a lone half is not text and is refused.
                        if self.next()? != b'\\' || self.next()? != b'u' {
                            return Err(Invalid);
                        }
                        let low = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return Err(Invalid);
                        }
                        0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        high
                    };
                    char::from_u32(code).ok_or(Invalid)?
                }
                _ => return Err(Invalid),
            };
            out.push(c);
        }
    }
}

/// Writes a value as JSON text.
pub trait ToJson {
    fn write_json(&self, out: &mut String);

    fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }
}

impl ToJson for str {
    fn write_json(&self, out: &mut String) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        if !self.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            // Nothing to escape (ids, statuses, most messages): one copy.
            out.reserve(self.len() + 2);
            out.push('"');
            out.push_str(self);
            out.push('"');
            return;
        }
        out.push('"');
        let mut start = 0;
        for (i, b) in self.bytes().enumerate() {
            let escape = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..=0x1f => "",
                _ => continue,
            };
            out.push_str(self.get(start..i).unwrap_or_default());
            if escape.is_empty() {
                out.push_str("\\u00");
                for nibble in [b >> 4, b & 0xf] {
                    out.push(char::from(
                        HEX.get(usize::from(nibble)).copied().unwrap_or(b'0'),
                    ));
                }
            } else {
                out.push_str(escape);
            }
            start = i + 1;
        }
        out.push_str(self.get(start..).unwrap_or_default());
        out.push('"');
    }
}

impl ToJson for String {
    fn write_json(&self, out: &mut String) {
        self.as_str().write_json(out);
    }
}

impl ToJson for bool {
    fn write_json(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl ToJson for u64 {
    fn write_json(&self, out: &mut String) {
        push_u64(out, *self);
    }
}

impl ToJson for u32 {
    fn write_json(&self, out: &mut String) {
        push_u64(out, u64::from(*self));
    }
}

impl ToJson for u16 {
    fn write_json(&self, out: &mut String) {
        push_u64(out, u64::from(*self));
    }
}

impl ToJson for usize {
    fn write_json(&self, out: &mut String) {
        push_u64(out, u64::try_from(*self).unwrap_or(u64::MAX));
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write_json(&self, out: &mut String) {
        match self {
            Some(v) => v.write_json(out),
            None => out.push_str("null"),
        }
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, out: &mut String) {
        out.push('[');
        for (i, item) in self.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            item.write_json(out);
        }
        out.push(']');
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, out: &mut String) {
        self.as_slice().write_json(out);
    }
}

impl ToJson for Value {
    fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => b.write_json(out),
            Value::Number(n) => out.push_str(n.as_str()),
            Value::String(s) => s.write_json(out),
            Value::Array(items) => items.write_json(out),
            Value::Object(obj) => {
                let mut w = ObjectWriter::new(out);
                for (name, value) in &obj.0 {
                    w.field(name, value);
                }
                w.end();
            }
        }
    }
}

/// Writes an object member by member: `ObjectWriter::new(out).field("a", &1).end()`.
pub struct ObjectWriter<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> ObjectWriter<'a> {
    pub fn new(out: &'a mut String) -> Self {
        out.push('{');
        Self { out, first: true }
    }

    pub fn field(&mut self, name: &str, value: &(impl ToJson + ?Sized)) -> &mut Self {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        name.write_json(self.out);
        self.out.push(':');
        value.write_json(self.out);
        self
    }

    pub fn end(&mut self) {
        self.out.push('}');
    }
}

/// Appends the decimal digits of `n` (no `core::fmt`).
pub fn push_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    for b in buf.iter().skip(i) {
        out.push(char::from(*b));
    }
}

/// The decimal digits of `n`.
pub fn u64_text(n: u64) -> String {
    let mut out = String::new();
    push_u64(&mut out, n);
    out
}

impl ::core::fmt::Display for Value {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        f.write_str(&self.to_json())
    }
}

/// Test helpers: `json!` builds a [`Value`] with serde_json's macro (serde_json is a
/// dev-dependency only).
#[cfg(test)]
pub(crate) mod testing {
    macro_rules! json {
        ($($t:tt)+) => {
            $crate::core::json::parse(&serde_json::json!($($t)+).to_string())
                .expect("serde_json writes valid JSON")
        };
    }
    pub(crate) use json;
}

#[cfg(test)]
mod tests {
    use crate::test_prelude::*;

    use super::*;

    fn num(text: &str) -> Number {
        Number::parse(text).unwrap()
    }

    #[test]
    fn reads_and_writes_back_what_json_parse_accepts() {
        let text = r#"{"a":[1,-0.5,2e-3,1E+21,true,false,null],"b":"x\"\\\/\b\f\n\r\t\u0001\u00e9\ud83d\ude00","c":{}}"#;
        let value = parse(text).unwrap();
        assert_eq!(
            value.get("b").and_then(Value::as_str),
            Some("x\"\\/\u{8}\u{c}\n\r\t\u{1}é😀")
        );
        // Numbers keep their text; strings are escaped as JSON.stringify does.
        assert_eq!(
            value.to_json(),
            r#"{"a":[1,-0.5,2e-3,1E+21,true,false,null],"b":"x\"\\/\b\f\n\r\t\u0001é😀","c":{}}"#
        );
        assert_eq!(parse(" \n[ ]\t").unwrap(), Value::Array(vec![]));
    }

    #[test]
    fn refuses_what_json_parse_refuses() {
        for bad in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "{'a':1}",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "NaN",
            "Infinity",
            "nul",
            "\"\\x\"",
            "\"a\nb\"",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"\\ud800\\u0041\"",
            "[1] x",
            "{\"a\"}",
            "{1:2}",
            "\"abc",
            "tru",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(&ok).is_some());
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(parse(&deep), None);
        assert_eq!(parse(&"[".repeat(1_000_000)), None);
        assert_eq!(parse(&"{\"a\":".repeat(100_000)), None);
    }

    #[test]
    fn repeated_names_read_as_the_last_value() {
        let value = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(value.get("a"), Some(&Value::Number(num("3"))));
        assert_eq!(value.get("b"), Some(&Value::Number(num("2"))));
        assert_eq!(value.get("c"), None);
    }

    #[test]
    fn numbers_give_exact_whole_values() {
        for (text, exact) in [
            ("0", Some(0)),
            ("-0", Some(0)),
            ("7", Some(7)),
            ("7.0", Some(7)),
            ("7.000", Some(7)),
            ("7.5", None),
            ("1e3", Some(1000)),
            ("1.5e1", Some(15)),
            ("1500e-2", Some(15)),
            ("1501e-2", None),
            ("0.0001e4", Some(1)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("1e400", None),
            ("1e-400", None),
            ("0e999999999999999999999", Some(0)),
        ] {
            assert_eq!(num(text).exact_magnitude(0), exact, "{text}");
        }
        assert_eq!(num("1.5").exact_magnitude(3), Some(1500));
        assert_eq!(num("-2").exact_magnitude(0), Some(2));
        assert!(num("-2").is_negative());
        assert!(!num("-0.0").is_negative());
        assert!(num("-0.0").is_zero());
        assert!(num("12").is_integer_text() && !num("12.0").is_integer_text());
    }

    #[test]
    fn numbers_round_half_up_at_a_scale() {
        for (text, scale, rounded) in [
            ("1.5", 3, Some(1500)),
            ("0.0004", 3, Some(0)),
            ("0.0005", 3, Some(1)),
            ("0.00049999", 3, Some(0)),
            ("2.0015", 3, Some(2002)),
            ("1e-9", 3, Some(0)),
            ("31622400", 3, Some(31_622_400_000)),
            ("1e30", 3, None),
        ] {
            assert_eq!(num(text).rounded_magnitude(scale), rounded, "{text}");
        }
    }

    #[test]
    fn writes_integers_without_fmt() {
        for n in [0, 7, 10, 1_700_000_000_000, u64::MAX] {
            assert_eq!(u64_text(n), n.to_string());
        }
    }
}
