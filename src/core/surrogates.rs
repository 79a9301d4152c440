//! JSON text as `JSON.parse` reads it, where it differs from serde_json: a lone surrogate.
//!
//! `JSON.stringify` writes a JS string holding a lone surrogate as the escape `"\ud800"`, and
//! Python's `json.dumps` (Superset's server) writes one the same way; `JSON.parse` and Python
//! read it back. serde_json refuses it ("lone leading surrogate in hex escape"), so an event
//! whose `errors` hold one would be refused whole and its job would never end in the guard.
//! A Rust string cannot hold a lone surrogate: each one is read as U+FFFD, the replacement
//! character, as a lossy UTF-16 decoder reads it. [`mend`] rewrites just those escapes, so
//! every reader (arguments, stored records, answer bodies, pages of events) reads the text
//! `JSON.parse` reads, with only the unrepresentable code units replaced.

use std::borrow::Cow;

/// The escape a lone surrogate is read as: U+FFFD.
const REPLACEMENT: &str = "\\uFFFD";

/// `text` with every `\u` escape of a lone surrogate (a high surrogate not followed by an
/// escaped low one, or a low one not after a high one) replaced by `\uFFFD`, inside strings
/// only. Text without such an escape is handed back as it is, without a copy.
pub fn mend(text: &str) -> Cow<'_, str> {
    if !might_hold_one(text) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::new();
    // Copied up to here.
    let mut copied = 0;
    let mut in_string = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if !in_string {
            in_string = b == b'"';
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                i += 1;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'u') => {
                let Some(unit) = hex4(bytes, i + 2) else {
                    i += 2; // malformed: serde_json refuses it
                    continue;
                };
                if is_high(unit) && escaped_unit(bytes, i + 6).is_some_and(is_low) {
                    i += 12; // a pair
                    continue;
                }
                if is_high(unit) || is_low(unit) {
                    out.push_str(text.get(copied..i).unwrap_or_default());
                    out.push_str(REPLACEMENT);
                    copied = i + 6;
                }
                i += 6;
            }
            // Any other escape is two characters; the one after `\` may be `"` or `\`.
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Cow::Owned(out)
}

/// Whether `text` holds `\u` followed by `d`/`D` and one of `8`-`f`: the only escapes of a
/// surrogate. (Most texts hold no `\u` at all.) A scan of four-byte windows, not a substring
/// search: every argument, record and body passes here first, and `str`'s two-way searcher
/// is a few KB of code for V8 to compile on a page's first call.
fn might_hold_one(text: &str) -> bool {
    text.as_bytes().windows(4).any(|w| {
        matches!(
            w,
            [b'\\', b'u', b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F']
        )
    })
}

/// The code unit of the escape `\uXXXX` at `at`, if there is one.
fn escaped_unit(bytes: &[u8], at: usize) -> Option<u16> {
    (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u'))
        .then(|| hex4(bytes, at + 2))
        .flatten()
}

/// The four hex digits at `at`, as a code unit.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let mut unit = 0u16;
    for &d in digits {
        let v = (d as char).to_digit(16)?;
        unit = unit << 4 | v as u16;
    }
    Some(unit)
}

fn is_high(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> serde_json::Value {
        serde_json::from_str(&mend(text)).unwrap()
    }

    #[test]
    fn a_lone_surrogate_reads_as_the_replacement_character() {
        assert_eq!(read(r#"["\ud800"]"#)[0], "\u{FFFD}");
        assert_eq!(read(r#"["\uDFFF"]"#)[0], "\u{FFFD}");
        assert_eq!(read(r#"["a\ud800b"]"#)[0], "a\u{FFFD}b");
        assert_eq!(read(r#"["\ud800\ud800"]"#)[0], "\u{FFFD}\u{FFFD}");
        assert_eq!(read(r#"["\udc00\ud800"]"#)[0], "\u{FFFD}\u{FFFD}");
        assert_eq!(read(r#"["\ud800\u0041"]"#)[0], "\u{FFFD}A");
        assert_eq!(read(r#"{"\ud800": 1}"#)["\u{FFFD}"], 1);
        // A high surrogate at the end of the string, and before an escaped quote.
        assert_eq!(read(r#"["x\ud800", "\ud800\""]"#)[1], "\u{FFFD}\"");
        // As serde_json alone refuses it.
        assert!(serde_json::from_str::<serde_json::Value>(r#"["\ud800"]"#).is_err());
    }

    #[test]
    fn pairs_other_escapes_and_text_outside_strings_are_left_alone() {
        for text in [
            r#"["\ud83d\ude00"]"#,
            r#"["\\ud800"]"#,
            r#"["\\\\ud800"]"#,
            r#"["plain", 1, {"k": "\u00e9"}]"#,
            r#"["\u0064800"]"#,
            "[]",
        ] {
            assert!(matches!(mend(text), Cow::Borrowed(_)), "{text}");
        }
        assert_eq!(read(r#"["\ud83d\ude00"]"#)[0], "😀");
        assert_eq!(read(r#"["\\ud800"]"#)[0], "\\ud800");
        // An escaped backslash before a lone surrogate.
        assert_eq!(read(r#"["\\\ud800"]"#)[0], "\\\u{FFFD}");
    }

    #[test]
    fn malformed_text_is_left_for_serde_json_to_refuse() {
        for text in [r#"["\ud8"]"#, r#"["\ud800"#, r#""\ud80"#, "\"\\"] {
            let mended = mend(text);
            assert!(
                serde_json::from_str::<serde_json::Value>(&mended).is_err(),
                "{text}"
            );
        }
    }
}
