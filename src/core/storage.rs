//! The small key-value storage the job store is written against, and an in-memory one.
//!
//! The browser shell implements [`KeyValue`] on `localStorage`; tests and the `"memory"`
//! storage option use [`MemoryStorage`]. Every method returns errors as values: a backend must
//! never panic.

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use ::core::cell::RefCell;
use alloc::rc::Rc;

use super::error::StorageError;

/// String keys to string values, like the Web Storage API.
pub trait KeyValue {
    /// The value under `key`, or `None` when there is none.
    fn get(&self, key: &str) -> Result<Option<String>, StorageError>;
    fn set(&mut self, key: &str, value: &str) -> Result<(), StorageError>;
    /// Removes `key`; removing a missing key is not an error.
    fn remove(&mut self, key: &str) -> Result<(), StorageError>;
    /// Every key currently stored, in no particular order.
    fn keys(&self) -> Result<Vec<String>, StorageError>;

    /// How many keys are stored (all of them, not only the guard's). Backends where counting
    /// is cheaper than listing (`localStorage.length`) override it.
    fn count(&self) -> Result<usize, StorageError> {
        self.keys().map(|k| k.len())
    }
}

impl<T: KeyValue + ?Sized> KeyValue for Box<T> {
    fn get(&self, key: &str) -> Result<Option<String>, StorageError> {
        (**self).get(key)
    }
    fn set(&mut self, key: &str, value: &str) -> Result<(), StorageError> {
        (**self).set(key, value)
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        (**self).remove(key)
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        (**self).keys()
    }
    fn count(&self) -> Result<usize, StorageError> {
        (**self).count()
    }
}

/// Storage that lives as long as the value does: one page, one guard. Entries are kept sorted
/// by key in a `Vec` (a B-tree would add ~20 KB to the wasm module).
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
}

impl KeyValue for MemoryStorage {
    fn get(&self, key: &str) -> Result<Option<String>, StorageError> {
        let found = self.find(key).ok().and_then(|i| self.entries.get(i));
        Ok(found.map(|(_, v)| v.clone()))
    }
    fn set(&mut self, key: &str, value: &str) -> Result<(), StorageError> {
        match self.find(key) {
            Ok(i) => {
                if let Some(entry) = self.entries.get_mut(i) {
                    entry.1 = value.to_owned();
                }
            }
            Err(i) => self.entries.insert(i, (key.to_owned(), value.to_owned())),
        }
        Ok(())
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        if let Ok(i) = self.find(key) {
            self.entries.remove(i);
        }
        Ok(())
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        let mut keys = Vec::with_capacity(self.entries.len());
        for (k, _) in &self.entries {
            keys.push(k.clone());
        }
        Ok(keys)
    }
    fn count(&self) -> Result<usize, StorageError> {
        Ok(self.entries.len())
    }
}

/// One [`MemoryStorage`] seen through several handles: the tabs of one origin, in tests (of
/// this crate or of an app's own code). Clones share the entries.
#[derive(Clone, Debug, Default)]
pub struct SharedMemory(Rc<RefCell<MemoryStorage>>);

impl SharedMemory {
    pub fn new() -> Self {
        Self::default()
    }
}

impl KeyValue for SharedMemory {
    fn get(&self, key: &str) -> Result<Option<String>, StorageError> {
        self.0.try_borrow().map_or(Ok(None), |s| s.get(key))
    }
    fn set(&mut self, key: &str, value: &str) -> Result<(), StorageError> {
        match self.0.try_borrow_mut() {
            Ok(mut s) => s.set(key, value),
            Err(_) => Err(busy()),
        }
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        match self.0.try_borrow_mut() {
            Ok(mut s) => s.remove(key),
            Err(_) => Err(busy()),
        }
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        self.0
            .try_borrow()
            .map_or_else(|_| Err(busy()), |s| s.keys())
    }
}

fn busy() -> StorageError {
    StorageError::new(super::error::StorageErrorKind::Other, "storage in use")
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn memory_storage_behaves_like_web_storage() {
        let mut s = MemoryStorage::new();
        assert_eq!(s.get("a").unwrap(), None);
        s.set("a", "1").unwrap();
        s.set("b", "2").unwrap();
        s.set("a", "3").unwrap();
        assert_eq!(s.get("a").unwrap().as_deref(), Some("3"));
        assert_eq!(s.keys().unwrap(), ["a", "b"]);
        s.remove("a").unwrap();
        s.remove("a").unwrap();
        assert_eq!(s.keys().unwrap(), ["b"]);
    }
}
