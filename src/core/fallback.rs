//! Storage that keeps working when the browser's does not: a primary [`KeyValue`] (the page's
//! `localStorage`) with a memory layer beside it.
//!
//! - Reads never fail: a throwing read is an absent value (a value that is there but not
//!   readable is reported as such, for the store to remove and count).
//! - A write the primary refuses is kept in memory (this tab only) and reported, so no job is
//!   lost; the store first tries to make room (see `JobStore`).
//! - A removal the primary refuses is remembered (a tombstone), so the value reads as absent in
//!   this tab even though the browser kept it.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::{StorageError, StorageErrorKind};
use super::storage::{from_json, KeyValue, MemoryStorage};
use super::wire::AnyJson;

/// Where the guard's data lives, as `guard.storage` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum StorageMode {
    /// `localStorage`, shared by the origin's tabs.
    Local,
    /// Memory only, for the page's life: asked for, or localStorage is unavailable.
    Memory,
    /// `localStorage`, but some writes were refused and are kept in this tab's memory.
    Degraded,
}

/// Where the guard keeps its data (`guard.storage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify), tsify(missing_as_null))]
pub struct StorageStatus {
    /// `"local"`: localStorage, shared by the origin's tabs. `"memory"`: this page only (asked
    /// for, or localStorage is unavailable: `reason` says why). `"degraded"`: localStorage, but
    /// some writes were refused (storage full) and are kept in this tab's memory.
    pub kind: StorageMode,
    /// Why the data is not (only) in localStorage; `null` when it is, or memory was asked for.
    pub reason: Option<String>,
}

pub struct FallbackStorage<S> {
    primary: S,
    /// `Some` when the data lives in memory only (the primary is then a `MemoryStorage` or
    /// unused), with the reason if it was not chosen.
    memory_only: Option<Option<String>>,
    /// Values the primary refused, kept for this tab.
    overlay: MemoryStorage,
    /// Keys the primary refused to remove: absent here. (Few: a list.)
    tombstones: Vec<String>,
    last_error: Option<StorageError>,
}

impl<S: KeyValue> FallbackStorage<S> {
    /// Over storage shared with other tabs.
    pub fn shared(primary: S) -> Self {
        Self {
            primary,
            memory_only: None,
            overlay: MemoryStorage::new(),
            tombstones: Vec::new(),
            last_error: None,
        }
    }

    /// Over storage private to this guard; `reason` says why, when it was not asked for.
    pub fn private(primary: S, reason: Option<String>) -> Self {
        Self {
            memory_only: Some(reason),
            ..Self::shared(primary)
        }
    }

    pub fn primary(&self) -> &S {
        &self.primary
    }

    pub fn status(&self) -> StorageStatus {
        match &self.memory_only {
            Some(reason) => StorageStatus {
                kind: StorageMode::Memory,
                reason: reason.clone(),
            },
            None if !self.overlay.is_empty() || !self.tombstones.is_empty() => StorageStatus {
                kind: StorageMode::Degraded,
                reason: self.last_error.as_ref().map(StorageError::describe),
            },
            None => StorageStatus {
                kind: StorageMode::Local,
                reason: None,
            },
        }
    }

    /// The value under `key` ([`get_text`](Self::get_text) read as a `T`); a value that is not
    /// a `T` is an `Unreadable` error.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StorageError> {
        self.get_text(key).map(|text| from_json(&text)).transpose()
    }

    /// The text under `key`: the memory layer's if it holds the key, none for a refused
    /// removal; a read that fails is an absent value.
    pub fn get_text(&self, key: &str) -> Option<String> {
        if self.is_tombstone(key) {
            return None;
        }
        if self.overlay.contains(key) {
            return self.overlay.text(key).map(ToOwned::to_owned);
        }
        self.primary.get_text(key).ok().flatten()
    }

    /// Every key: the primary's (less tombstones) and the memory layer's. A failing listing
    /// is an empty one.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self.primary.keys().unwrap_or_default();
        keys.retain(|k| !self.is_tombstone(k) && !self.overlay.contains(k));
        keys.extend(self.overlay.keys().unwrap_or_default());
        keys
    }

    /// Writes `text` itself to the primary (not JSON); a refusal changes nothing.
    pub fn put_text(&mut self, key: &str, text: &str) {
        let _ = self.primary.put_text(key, text);
    }

    /// At least as many keys as there are (one call for localStorage), if it can be had.
    pub fn key_count_bound(&self) -> Option<usize> {
        let memory = self.overlay.count().unwrap_or(0);
        self.primary.count().ok().map(|n| n + memory)
    }

    /// Writes to the primary. On success the memory layer hands back what it kept; on failure
    /// the error is returned (and remembered for `status`).
    pub fn try_set<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<(), StorageError> {
        match self.primary.set(key, value) {
            Ok(()) => {
                let _ = self.overlay.remove(key);
                self.clear_tombstone(key);
                // Most writes find nothing to hand back (and need not compile `heal`).
                if !self.overlay.is_empty() || !self.tombstones.is_empty() {
                    self.heal();
                }
                Ok(())
            }
            Err(e) => {
                self.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Storage takes writes again: hand back what memory kept, retry refused removals.
    #[inline(never)]
    fn heal(&mut self) {
        for key in self.overlay.keys().unwrap_or_default() {
            let Ok(Some(AnyJson(value))) = self.overlay.get::<AnyJson>(&key) else {
                continue;
            };
            if self.primary.set(&key, &value).is_err() {
                return;
            }
            let _ = self.overlay.remove(&key);
        }
        for key in self.tombstones() {
            if self.primary.remove(&key).is_err() {
                return;
            }
            self.clear_tombstone(&key);
        }
    }

    /// Keys whose removal the primary refused.
    pub fn tombstones(&self) -> Vec<String> {
        self.tombstones.clone()
    }

    fn is_tombstone(&self, key: &str) -> bool {
        self.tombstones.iter().any(|k| k == key)
    }

    fn clear_tombstone(&mut self, key: &str) {
        self.tombstones.retain(|k| k != key);
    }

    /// Keeps `value` in this tab's memory: the primary refused it.
    pub fn keep_in_memory<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        let _ = self.overlay.set(key, value);
        self.clear_tombstone(key);
    }

    /// Removes `key`. If the primary refuses, the key reads as absent here from now on.
    pub fn remove(&mut self, key: &str) {
        let _ = self.overlay.remove(key);
        match self.primary.remove(key) {
            Ok(()) => self.clear_tombstone(key),
            Err(e) => {
                // Remembered if the key is still there (or the storage cannot say).
                let still_there = self
                    .primary
                    .keys()
                    .map_or(true, |k| k.iter().any(|k| k == key));
                if still_there && !self.is_tombstone(key) {
                    self.tombstones.push(key.to_owned());
                }
                self.last_error = Some(e);
            }
        }
    }

    /// Drops what memory kept under `prefix`: another tab signed out or switched user.
    pub fn forget_memory(&mut self, prefix: &str) {
        for key in self.overlay.keys().unwrap_or_default() {
            if key.starts_with(prefix) {
                let _ = self.overlay.remove(&key);
            }
        }
    }
}

/// Whether `e` says the storage is full.
pub fn is_quota(e: &StorageError) -> bool {
    e.kind == StorageErrorKind::QuotaExceeded
}

#[cfg(test)]
mod tests {

    use super::*;

    /// A primary whose writes and removals can be switched off.
    #[derive(Default)]
    struct Flaky {
        inner: MemoryStorage,
        refuse_writes: bool,
        refuse_removals: bool,
        refuse_reads: bool,
    }

    impl KeyValue for Flaky {
        fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
            if self.refuse_reads {
                return Err(StorageError::new(StorageErrorKind::Other, "read"));
            }
            self.inner.get_text(key)
        }
        fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError> {
            if self.refuse_writes {
                return Err(StorageError::new(StorageErrorKind::QuotaExceeded, "full"));
            }
            self.inner.set(key, value)
        }
        fn remove(&mut self, key: &str) -> Result<(), StorageError> {
            if self.refuse_removals {
                return Err(StorageError::new(StorageErrorKind::Other, "no"));
            }
            self.inner.remove(key)
        }
        fn keys(&self) -> Result<Vec<String>, StorageError> {
            if self.refuse_reads {
                return Err(StorageError::new(StorageErrorKind::Other, "keys"));
            }
            self.inner.keys()
        }
    }

    #[test]
    fn refused_writes_are_kept_in_memory_and_reported() {
        let mut s = FallbackStorage::shared(Flaky::default());
        s.try_set("a", &1).unwrap();
        assert_eq!(s.status().kind, StorageMode::Local);
        s.primary.refuse_writes = true;
        let err = s.try_set("b", &2).unwrap_err();
        assert!(is_quota(&err));
        s.keep_in_memory("b", &2);
        assert_eq!(s.get::<u8>("b").unwrap(), Some(2));
        assert_eq!(s.keys(), ["a", "b"]);
        let status = s.status();
        assert_eq!(status.kind, StorageMode::Degraded);
        assert!(status.reason.unwrap().contains("full"));
        // Once the primary accepts the key again, memory lets go of it.
        s.primary.refuse_writes = false;
        s.try_set("b", &3).unwrap();
        assert_eq!(s.get::<u8>("b").unwrap(), Some(3));
        assert_eq!(s.status().kind, StorageMode::Local);
        // And a write of another key hands memory's values back too.
        s.primary.refuse_writes = true;
        assert!(s.try_set("c", &4).is_err());
        s.keep_in_memory("c", &4);
        s.primary.refuse_writes = false;
        s.try_set("d", &5).unwrap();
        assert_eq!(s.primary.inner.get::<u8>("c").unwrap(), Some(4));
        assert_eq!(s.status().kind, StorageMode::Local);
    }

    #[test]
    fn refused_removals_read_as_absent() {
        let mut s = FallbackStorage::shared(Flaky::default());
        s.try_set("a", &1).unwrap();
        s.primary.refuse_removals = true;
        s.remove("a");
        assert_eq!(s.get::<u8>("a").unwrap(), None);
        assert!(s.keys().is_empty());
        assert_eq!(s.status().kind, StorageMode::Degraded);
        s.remove("never-there");
        assert_eq!(s.keys(), Vec::<String>::new());
    }

    #[test]
    fn refused_reads_are_absent_values() {
        let mut s = FallbackStorage::shared(Flaky::default());
        s.try_set("a", &1).unwrap();
        s.primary.refuse_reads = true;
        assert_eq!(s.get::<u8>("a").unwrap(), None);
        assert!(s.keys().is_empty());
    }

    #[test]
    fn private_storage_reports_memory_and_why() {
        let s = FallbackStorage::private(MemoryStorage::new(), Some("SecurityError".into()));
        assert_eq!(
            s.status(),
            StorageStatus {
                kind: StorageMode::Memory,
                reason: Some("SecurityError".into())
            }
        );
        let chosen = FallbackStorage::private(MemoryStorage::new(), None);
        assert_eq!(chosen.status().reason, None);
    }

    #[test]
    fn forgetting_memory_drops_only_the_prefix() {
        let mut s = FallbackStorage::shared(Flaky {
            refuse_writes: true,
            ..Flaky::default()
        });
        s.keep_in_memory("ns:v1:job:a", &1);
        s.keep_in_memory("other", &2);
        s.forget_memory("ns:");
        assert_eq!(s.keys(), ["other"]);
    }
}
