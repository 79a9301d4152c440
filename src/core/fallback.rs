//! Storage that keeps working when the browser's does not: a primary [`KeyValue`] (the page's
//! `localStorage`) with a memory layer beside it.
//!
//! - Reads never fail: a throwing read is an absent value.
//! - A write the primary refuses is kept in memory (this tab only) and reported, so no job is
//!   lost; the store first tries to make room (see `JobStore`).
//! - A removal the primary refuses is remembered (a tombstone), so the value reads as absent in
//!   this tab even though the browser kept it.

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{StorageError, StorageErrorKind};
use super::json::{ObjectWriter, ToJson};
use super::storage::{KeyValue, MemoryStorage};

/// Where the guard's data lives, as `guard.storage` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageMode {
    /// `localStorage`, shared by the origin's tabs.
    Local,
    /// Memory only, for the page's life: asked for, or localStorage is unavailable.
    Memory,
    /// `localStorage`, but some writes were refused and are kept in this tab's memory.
    Degraded,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageStatus {
    pub kind: StorageMode,
    pub reason: Option<String>,
}

impl StorageMode {
    pub fn as_str(self) -> &'static str {
        match self {
            StorageMode::Local => "local",
            StorageMode::Memory => "memory",
            StorageMode::Degraded => "degraded",
        }
    }
}

impl ToJson for StorageStatus {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("kind", self.kind.as_str())
            .field("reason", &self.reason)
            .end();
    }
}

pub struct FallbackStorage<S> {
    primary: S,
    /// `Some(reason)` when the primary is itself memory (by choice, `None` reason, or fallback).
    memory_only: Option<Option<String>>,
    overlay: MemoryStorage,
    /// Keys whose removal the primary refused, as keys of a memory storage (values unused).
    tombstones: MemoryStorage,
    last_error: Option<StorageError>,
}

impl<S: KeyValue> FallbackStorage<S> {
    /// Over `localStorage` (or any shared storage).
    pub fn shared(primary: S) -> Self {
        Self {
            primary,
            memory_only: None,
            overlay: MemoryStorage::new(),
            tombstones: MemoryStorage::new(),
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

    pub fn get(&self, key: &str) -> Option<String> {
        if self.tombstones.contains(key) {
            return None;
        }
        if let Ok(Some(v)) = self.overlay.get(key) {
            return Some(v);
        }
        self.primary.get(key).ok().flatten()
    }

    /// Every key, from the primary (none if it cannot list them) and from memory, each once,
    /// in no particular order.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self.primary.keys().unwrap_or_default();
        keys.retain(|k| !self.tombstones.contains(k) && !self.overlay.contains(k));
        keys.extend(self.overlay.keys().unwrap_or_default());
        keys
    }

    /// An upper bound on how many keys there are (memory's may repeat the primary's), found
    /// cheaply; `None` when the primary cannot count.
    pub fn key_count_bound(&self) -> Option<usize> {
        let memory = self.overlay.keys().map_or(0, |k| k.len());
        self.primary.count().ok().map(|n| n + memory)
    }

    /// Writes to the primary only; the caller decides what to do when it refuses. A write
    /// that succeeds also moves what memory holds back to the primary, where it can.
    pub fn try_set(&mut self, key: &str, value: &str) -> Result<(), StorageError> {
        match self.primary.set(key, value) {
            Ok(()) => {
                let _ = self.overlay.remove(key);
                let _ = self.tombstones.remove(key);
                self.heal();
                Ok(())
            }
            Err(e) => {
                self.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// The primary takes writes again: hand it what memory kept, and retry refused removals.
    /// Stops at the first refusal; both sets are small.
    fn heal(&mut self) {
        for key in self.overlay.keys().unwrap_or_default() {
            let Ok(Some(value)) = self.overlay.get(&key) else {
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
            let _ = self.tombstones.remove(&key);
        }
    }

    /// Keys whose removal the primary refused (they read as absent here).
    pub fn tombstones(&self) -> Vec<String> {
        self.tombstones.keys().unwrap_or_default()
    }

    /// Keeps a value the primary refused, in this tab's memory.
    pub fn keep_in_memory(&mut self, key: &str, value: &str) {
        let _ = self.overlay.set(key, value);
        let _ = self.tombstones.remove(key);
    }

    /// Removes `key` everywhere. Never fails: a removal the primary refuses becomes a tombstone.
    pub fn remove(&mut self, key: &str) {
        let _ = self.overlay.remove(key);
        match self.primary.remove(key) {
            Ok(()) => {
                let _ = self.tombstones.remove(key);
            }
            Err(e) => {
                // Only worth remembering if the primary still has it.
                if self.primary.get(key).ok().flatten().is_some() {
                    let _ = self.tombstones.set(key, "");
                }
                self.last_error = Some(e);
            }
        }
    }

    /// Forgets this tab's memory layer (another tab signed out: what was kept here is stale).
    pub fn forget_memory(&mut self, prefix: &str) {
        for key in self.overlay.keys().unwrap_or_default() {
            if key.starts_with(prefix) {
                let _ = self.overlay.remove(&key);
            }
        }
    }
}

/// Whether a failed write means "full" (worth making room) rather than "refused".
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
        fn get(&self, key: &str) -> Result<Option<String>, StorageError> {
            if self.refuse_reads {
                return Err(StorageError::new(StorageErrorKind::Other, "read"));
            }
            self.inner.get(key)
        }
        fn set(&mut self, key: &str, value: &str) -> Result<(), StorageError> {
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
        s.try_set("a", "1").unwrap();
        assert_eq!(s.status().kind, StorageMode::Local);
        s.primary.refuse_writes = true;
        let err = s.try_set("b", "2").unwrap_err();
        assert!(is_quota(&err));
        s.keep_in_memory("b", "2");
        assert_eq!(s.get("b").as_deref(), Some("2"));
        assert_eq!(s.keys(), ["a", "b"]);
        let status = s.status();
        assert_eq!(status.kind, StorageMode::Degraded);
        assert!(status.reason.unwrap().contains("full"));
        // Once the primary accepts the key again, memory lets go of it.
        s.primary.refuse_writes = false;
        s.try_set("b", "3").unwrap();
        assert_eq!(s.get("b").as_deref(), Some("3"));
        assert_eq!(s.status().kind, StorageMode::Local);
        // And a write of another key hands memory's values back too.
        s.primary.refuse_writes = true;
        assert!(s.try_set("c", "4").is_err());
        s.keep_in_memory("c", "4");
        s.primary.refuse_writes = false;
        s.try_set("d", "5").unwrap();
        assert_eq!(s.primary.inner.get("c").unwrap().as_deref(), Some("4"));
        assert_eq!(s.status().kind, StorageMode::Local);
    }

    #[test]
    fn refused_removals_read_as_absent() {
        let mut s = FallbackStorage::shared(Flaky::default());
        s.try_set("a", "1").unwrap();
        s.primary.refuse_removals = true;
        s.remove("a");
        assert_eq!(s.get("a"), None);
        assert!(s.keys().is_empty());
        assert_eq!(s.status().kind, StorageMode::Degraded);
        s.remove("never-there");
        assert_eq!(s.keys(), Vec::<String>::new());
    }

    #[test]
    fn refused_reads_are_absent_values() {
        let mut s = FallbackStorage::shared(Flaky::default());
        s.try_set("a", "1").unwrap();
        s.primary.refuse_reads = true;
        assert_eq!(s.get("a"), None);
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
        s.keep_in_memory("ns:v1:job:a", "1");
        s.keep_in_memory("other", "2");
        s.forget_memory("ns:");
        assert_eq!(s.keys(), ["other"]);
    }
}
