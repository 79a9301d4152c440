//! What the store last read under each key, beside the text it read it from: a read that finds
//! the same text under the same key again takes the value it had without parsing the text
//! again.
//!
//! What the store writes is kept the same way, beside the text it wrote, so a read after a
//! write parses nothing.
//!
//! It is no cache of storage: every read still reads the key's text from storage first (so
//! another tab's or the page's change is seen at once), and only a text equal byte for byte to
//! the one a value was read from (or written as) gives that value back. Reading a text is
//! deterministic, so the answer is the one parsing it again would give.

use serde::de::DeserializeOwned;

use crate::core::error::StorageError;
use crate::core::model::MAX_RECORD_BYTES;
use crate::core::storage::from_json;

/// The values read under at most `limit` keys, each with its text. (A list sorted by key, as
/// `MemoryStorage` is: a `BTreeMap` of each value type would be two more copies of its code in
/// the module.)
pub(super) struct Parsed<T> {
    last: Vec<(String, String, T)>,
    limit: usize,
}

impl<T: Clone + DeserializeOwned> Parsed<T> {
    pub fn new(limit: usize) -> Self {
        Self {
            last: Vec::new(),
            limit,
        }
    }

    /// `text`, just read under `key`, as a `T` ([`from_json`]). A text too long to be a record
    /// is read and not kept; a text that is not a `T` is an error, and not kept. When `limit`
    /// keys are kept, a new key makes room by forgetting them all (the next read of each
    /// parses once again).
    pub fn read(&mut self, key: &str, text: String) -> Result<T, StorageError> {
        let at = self.last.binary_search_by(|(k, _, _)| k.as_str().cmp(key));
        if let Some((_, seen, value)) = at.ok().and_then(|i| self.last.get(i)) {
            if *seen == text {
                return Ok(value.clone());
            }
        }
        let read = from_json::<T>(&text);
        if let Ok(value) = &read {
            self.keep(at, key, text, value.clone());
        }
        read
    }

    /// `value`, just written under `key` as `text`: the next read that finds `text` there
    /// takes `value` without parsing. The caller's promise: `text` is `value`'s JSON, and
    /// reading it gives `value` back (the store keeps only records that do:
    /// `JobRecord::reads_back_exactly`).
    pub fn remember(&mut self, key: &str, text: String, value: T) {
        let at = self.last.binary_search_by(|(k, _, _)| k.as_str().cmp(key));
        self.keep(at, key, text, value);
    }

    /// Keeps `value` with its `text` under `key` (`at`: where the key is or would go). A value
    /// is only ever given back for its own text, so what is kept for another text under the
    /// key can stay when a text too long to keep comes: it is replaced when a new text reads,
    /// and right if that text comes back.
    fn keep(&mut self, at: Result<usize, usize>, key: &str, text: String, value: T) {
        if text.len() > MAX_RECORD_BYTES {
            return;
        }
        match at {
            Ok(i) => {
                if let Some(kept) = self.last.get_mut(i) {
                    kept.1 = text;
                    kept.2 = value;
                }
            }
            Err(_) if self.last.len() >= self.limit => {
                self.last.clear();
                self.last.push((key.to_owned(), text, value));
            }
            Err(i) => self.last.insert(i, (key.to_owned(), text, value)),
        }
    }

    /// How many keys' values are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::cell::Cell;

    thread_local! {
        static PARSED: Cell<usize> = const { Cell::new(0) };
    }

    /// A value that counts how often it is parsed.
    #[derive(Clone, Debug, PartialEq)]
    struct Counted(u32);

    impl<'de> Deserialize<'de> for Counted {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            PARSED.with(|n| n.set(n.get() + 1));
            u32::deserialize(d).map(Counted)
        }
    }

    fn parses() -> usize {
        PARSED.with(Cell::get)
    }

    #[test]
    fn the_same_text_under_the_same_key_is_parsed_once() {
        let mut p = Parsed::<Counted>::new(4);
        let before = parses();
        assert_eq!(p.read("a", "1".into()).unwrap(), Counted(1));
        assert_eq!(p.read("a", "1".into()).unwrap(), Counted(1));
        assert_eq!(parses() - before, 1);
        // Another text under the key is read, and kept in its place.
        assert_eq!(p.read("a", "2".into()).unwrap(), Counted(2));
        assert_eq!(p.read("a", "2".into()).unwrap(), Counted(2));
        assert_eq!(parses() - before, 2);
        // The same text under another key is read for that key.
        assert_eq!(p.read("b", "2".into()).unwrap(), Counted(2));
        assert_eq!(parses() - before, 3);
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn what_is_not_a_value_is_an_error_every_time() {
        let mut p = Parsed::<Counted>::new(4);
        p.read("a", "1".into()).unwrap();
        assert!(p.read("a", "\"x\"".into()).is_err());
        assert!(p.read("a", "\"x\"".into()).is_err());
        // The value of the text read before is still that text's.
        let before = parses();
        assert_eq!(p.read("a", "1".into()).unwrap(), Counted(1));
        assert_eq!(parses(), before);
        // Whitespace makes another text, read again to the same value.
        assert_eq!(p.read("a", " 1".into()).unwrap(), Counted(1));
        assert_eq!(parses() - before, 1);
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn a_value_written_is_given_back_for_its_text_only() {
        let mut p = Parsed::<Counted>::new(4);
        p.remember("a", "7".into(), Counted(7));
        let before = parses();
        assert_eq!(p.read("a", "7".into()).unwrap(), Counted(7));
        assert_eq!(parses(), before, "the text written is not parsed");
        // Another tab wrote meanwhile: its text is read.
        assert_eq!(p.read("a", "8".into()).unwrap(), Counted(8));
        assert_eq!(parses() - before, 1);
        // A write replaces what a read kept, and a text too long to keep is not remembered.
        p.remember("a", "9".into(), Counted(9));
        assert_eq!(p.read("a", "9".into()).unwrap(), Counted(9));
        assert_eq!(parses() - before, 1);
        let long = format!("{}5", " ".repeat(MAX_RECORD_BYTES));
        p.remember("a", long.clone(), Counted(5));
        assert_eq!(p.read("a", long).unwrap(), Counted(5));
        assert_eq!(parses() - before, 2);
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn at_most_limit_keys_are_kept_and_long_texts_never() {
        let mut p = Parsed::<Counted>::new(2);
        p.read("a", "1".into()).unwrap();
        p.read("b", "2".into()).unwrap();
        assert_eq!(p.len(), 2);
        // A kept key read again with a new text keeps the others.
        p.read("b", "3".into()).unwrap();
        assert_eq!(p.len(), 2);
        // A third key makes room.
        p.read("c", "4".into()).unwrap();
        assert_eq!(p.len(), 1);
        // A text longer than any record may be is read, not kept.
        let long = format!("{}5", " ".repeat(MAX_RECORD_BYTES));
        assert_eq!(p.read("d", long.clone()).unwrap(), Counted(5));
        assert_eq!(p.len(), 1);
        let before = parses();
        p.read("d", long.clone()).unwrap();
        assert_eq!(parses() - before, 1);
        // A kept key read with a text that long: read, not kept in the old one's place, and the
        // old text still reads without parsing.
        let before = parses();
        p.read("c", long.clone()).unwrap();
        p.read("c", long.clone()).unwrap();
        assert_eq!(parses() - before, 2);
        p.read("c", "4".into()).unwrap();
        assert_eq!(parses() - before, 2);
        // Exactly the limit's length is kept.
        let exact = format!("{}6", " ".repeat(MAX_RECORD_BYTES - 1));
        p.read("c", exact.clone()).unwrap();
        let before = parses();
        p.read("c", exact).unwrap();
        assert_eq!(parses(), before);
    }
}
