//! Strings built from parts. `[..].concat()` and `.join()` on string slices bring in a generic
//! copier of about 1 KB of wasm; these loops are a tenth of that, and messages are built
//! without `format!` (see "Size" in the README).

use alloc::string::String;

/// Whether `bytes` holds `byte`. (`<[u8]>::contains` links a vectorised memchr, 0.4 KB of
/// wasm, for slices that are a few bytes long here.)
#[allow(clippy::manual_contains)] // on purpose: see above
pub fn has_byte(bytes: &[u8], byte: u8) -> bool {
    bytes.iter().any(|b| *b == byte)
}

/// The parts, one after another.
pub fn cat(parts: &[&str]) -> String {
    join(parts, "")
}

/// The parts with `separator` between them.
pub fn join(parts: &[&str], separator: &str) -> String {
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cat_and_join_put_the_parts_together() {
        assert_eq!(cat(&[]), "");
        assert_eq!(cat(&["a", "", "bc", "é"]), "abcé");
        assert_eq!(join(&[], ", "), "");
        assert_eq!(join(&["a"], ", "), "a");
        assert_eq!(join(&["a", "b", ""], ", "), "a, b, ");
    }

    #[test]
    fn has_byte_finds_a_byte() {
        assert!(has_byte(b"a:b", b':'));
        assert!(!has_byte(b"ab", b':'));
        assert!(!has_byte(b"", b':'));
    }
}
