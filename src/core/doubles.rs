//! The core's test doubles, for this crate's own tests (the `test-doubles` feature, which
//! `cargo test` turns on): not part of the shipped API.
//!
//! - [`ManualClock`]: a clock that only moves when told to
//! - [`SequenceRandom`]: a fixed sequence of "random" numbers
//! - [`SharedMemory`]: one memory storage seen by several stores, like one origin's tabs

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde::Serialize;

use super::clock::Clock;
use super::error::{StorageError, StorageErrorKind};
use super::random::Random;
use super::storage::{KeyValue, MemoryStorage};

/// A clock that only moves when told to. Clones share the same time, so a test can keep one
/// and hand another to the store.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Rc<Cell<u64>>,
}

impl ManualClock {
    pub fn at(ms: u64) -> Self {
        Self {
            now: Rc::new(Cell::new(ms)),
        }
    }

    pub fn set(&self, ms: u64) {
        self.now.set(ms);
    }

    pub fn advance(&self, ms: u64) {
        self.now.set(self.now.get().saturating_add(ms));
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.get()
    }
}

/// Returns the given numbers in turn, forever.
#[derive(Clone, Debug)]
pub struct SequenceRandom {
    values: Vec<f64>,
    next: usize,
}

impl SequenceRandom {
    pub fn new(values: Vec<f64>) -> Self {
        Self { values, next: 0 }
    }
}

impl Random for SequenceRandom {
    fn next_f64(&mut self) -> f64 {
        let value = self.values.get(self.next).copied().unwrap_or(0.0);
        self.next = if self.next + 1 >= self.values.len() {
            0
        } else {
            self.next + 1
        };
        value
    }
}

/// One [`MemoryStorage`] seen by several stores, as the tabs of one origin see one
/// `localStorage`.
#[derive(Clone, Debug, Default)]
pub struct SharedMemory(
    Rc<RefCell<MemoryStorage>>,
    Rc<RefCell<Vec<String>>>,
    Rc<RefCell<Vec<StorageChange>>>,
);

/// One change to a [`SharedMemory`]: its key, its text before and after (what a `storage`
/// event of another tab says).
pub type StorageChange = (String, Option<String>, Option<String>);

impl SharedMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every key removed so far, in order.
    pub fn removals(&self) -> Vec<String> {
        self.1.try_borrow().map(|r| r.clone()).unwrap_or_default()
    }

    /// The stored text under `key`.
    pub fn text(&self, key: &str) -> Option<String> {
        self.0.try_borrow().ok()?.text(key).map(str::to_owned)
    }

    /// Puts raw text under `key`, as other code in the page could.
    pub fn set_text(&self, key: &str, text: &str) {
        if let Ok(mut s) = self.0.try_borrow_mut() {
            s.set_text(key, text);
        }
    }

    /// The changes made since the last call, in order (each key whose text changed).
    pub fn take_changes(&self) -> Vec<StorageChange> {
        self.2
            .try_borrow_mut()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }

    /// Runs `f` on the storage, logging the change of `key`'s text it makes.
    fn changing<T>(
        &self,
        key: &str,
        f: impl FnOnce(&mut MemoryStorage) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut storage = self.0.try_borrow_mut().map_err(|_| busy())?;
        let old = storage.text(key).map(str::to_owned);
        let done = f(&mut storage)?;
        let new = storage.text(key).map(str::to_owned);
        if old != new {
            if let Ok(mut changes) = self.2.try_borrow_mut() {
                changes.push((key.to_owned(), old, new));
            }
        }
        Ok(done)
    }
}

impl KeyValue for SharedMemory {
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        self.0.try_borrow().map_err(|_| busy())?.get_text(key)
    }
    fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError> {
        self.changing(key, |s| s.set(key, value))
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        if let Ok(mut removed) = self.1.try_borrow_mut() {
            removed.push(key.to_owned());
        }
        self.changing(key, |s| s.remove(key))
    }
    fn put_text(&mut self, key: &str, text: &str) -> Result<(), StorageError> {
        self.changing(key, |s| s.put_text(key, text))
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        self.0.try_borrow().map_err(|_| busy())?.keys()
    }
}

fn busy() -> StorageError {
    StorageError::new(StorageErrorKind::Other, "storage in use")
}
