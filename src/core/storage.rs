//! The storage the core works over: a key-value trait shaped like gloo-storage's `Storage`
//! (values are serde types kept as JSON text; read as that text, or as a value), and
//! [`MemoryStorage`], the same in memory.
//!
//! The browser shell implements [`KeyValue`] on gloo-storage over `localStorage`; tests and the
//! memory mode use [`MemoryStorage`]. Failures are values ([`StorageError`]), never panics.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::{StorageError, StorageErrorKind};

/// A key-value storage of JSON values, such as the page's `localStorage`.
pub trait KeyValue {
    /// The text under `key` (`Ok(None)` if there is none), as `localStorage.getItem` gives it.
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError>;
    /// The value under `key`: `Ok(None)` if there is none, an `Unreadable` error if what is
    /// there is not a `T`.
    fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StorageError> {
        self.get_text(key)?.map(|text| from_json(&text)).transpose()
    }
    /// Writes `value` as JSON under `key`.
    fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError>;
    fn remove(&mut self, key: &str) -> Result<(), StorageError>;
    /// Writes `text` itself under `key`, not as JSON (Superset's own `last_async_event_id` is
    /// its text). A storage that cannot refuses.
    fn put_text(&mut self, key: &str, text: &str) -> Result<(), StorageError> {
        let _ = (key, text);
        Err(StorageError::new(
            StorageErrorKind::Other,
            "this storage keeps JSON only",
        ))
    }
    /// Every key, in the storage's order.
    fn keys(&self) -> Result<Vec<String>, StorageError>;
    /// How many keys there are (one call for `localStorage`, where listing is one per key).
    fn count(&self) -> Result<usize, StorageError> {
        self.keys().map(|k| k.len())
    }
}

/// The JSON text of `value`, as gloo-storage writes it.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<String, StorageError> {
    serde_json::to_string(value)
        .map_err(|_| StorageError::new(StorageErrorKind::Other, "not writable as JSON"))
}

/// `text` read as a `T`, as gloo-storage reads it.
pub fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, StorageError> {
    super::quiet::from_json(text).map_err(|_| StorageError::not_json())
}

/// Storage in memory, keys in order: the memory mode, the memory layer beside a refusing
/// `localStorage`, and the tests' stand-in for `localStorage`. (A sorted list: it holds at
/// most a guard's records, and a list is less code in the module than a second `BTreeMap`
/// beside serde_json's.)
#[derive(Clone, Debug, Default)]
pub struct MemoryStorage {
    entries: Vec<(String, String)>,
}

impl MemoryStorage {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The stored text under `key` (what `localStorage.getItem` would give).
    pub fn text(&self, key: &str) -> Option<&str> {
        let i = self.find(key).ok()?;
        self.entries.get(i).map(|(_, v)| v.as_str())
    }

    /// Puts raw text under `key`, as other code in the page could.
    pub fn set_text(&mut self, key: &str, text: &str) {
        match self.find(key) {
            Ok(i) => {
                if let Some(entry) = self.entries.get_mut(i) {
                    entry.1 = text.to_owned();
                }
            }
            Err(i) => self.entries.insert(i, (key.to_owned(), text.to_owned())),
        }
    }
}

impl KeyValue for MemoryStorage {
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        Ok(self.text(key).map(ToOwned::to_owned))
    }
    fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StorageError> {
        self.text(key).map(from_json).transpose()
    }

    fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError> {
        let text = to_json(value)?;
        self.set_text(key, &text);
        Ok(())
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        if let Ok(i) = self.find(key) {
            self.entries.remove(i);
        }
        Ok(())
    }
    fn put_text(&mut self, key: &str, text: &str) -> Result<(), StorageError> {
        self.set_text(key, text);
        Ok(())
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        Ok(self.entries.iter().map(|(k, _)| k.clone()).collect())
    }
    fn count(&self) -> Result<usize, StorageError> {
        Ok(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_storage_behaves_like_web_storage_with_gloos_format() {
        let mut s = MemoryStorage::new();
        assert_eq!(s.get::<u32>("a").unwrap(), None);
        s.set("a", &1).unwrap();
        s.set("b", "two").unwrap();
        s.set("a", &3).unwrap();
        assert_eq!(s.get::<u32>("a").unwrap(), Some(3));
        assert_eq!(
            s.text("b"),
            Some("\"two\""),
            "JSON text, as gloo-storage writes"
        );
        assert_eq!(s.keys().unwrap(), ["a", "b"]);
        let err = s.get::<u32>("b").unwrap_err();
        assert_eq!(err.kind, StorageErrorKind::Unreadable);
        s.remove("a").unwrap();
        s.remove("a").unwrap();
        assert_eq!(s.keys().unwrap(), ["b"]);
        assert_eq!(s.count().unwrap(), 1);
    }
}
