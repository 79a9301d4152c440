//! `localStorage` through gloo-storage, every failure a value.
//!
//! gloo-storage's `Storage` trait reads and writes serde types as JSON on the object its
//! `raw()` hook returns. Its default methods assume that object never throws (`expect_throw`
//! on `getItem`, `removeItem`, `key` and `length`, `unreachable!` when `setItem` throws a
//! non-`Error`), and `LocalStorage::raw()` itself throws when there is no storage. A throw out
//! of wasm would leave the guard unusable, so [`PageStorage::raw`] hands gloo the adapter from
//! `storage.js` instead: the page's `localStorage` behind methods that do not throw where gloo
//! does not expect it, and that keep the exception for [`take_failure`]. The adapter is JS
//! because it must catch exceptions where web-sys calls the methods.
//!
//! [`LocalBackend`] is the core's [`KeyValue`] on top of it: typed `set`, `delete` and `length`
//! from gloo, reads as text with `raw().get_item(key)` (the store parses a text once:
//! `core::store::parsed`), keys listed with `raw().key(i)` (gloo's `get_all` would read every
//! value of the origin).

use std::cell::RefCell;

use gloo_storage::errors::StorageError as GlooError;
use gloo_storage::Storage as _;
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::core::error::{StorageError, StorageErrorKind};
use crate::core::storage::{KeyValue, MemoryStorage};

use super::dom;

#[wasm_bindgen(module = "/src/web/storage.js")]
extern "C" {
    /// Storage's methods around `target` that do not throw, except `setItem` (only Errors).
    #[wasm_bindgen(js_name = guardedStorage)]
    fn guarded_storage(target: &web_sys::Storage) -> web_sys::Storage;

    /// What the adapter's last read or removal threw (`undefined` if nothing); cleared.
    #[wasm_bindgen(js_name = takeFailure)]
    fn take_failure_of(adapter: &web_sys::Storage) -> JsValue;
}

thread_local! {
    /// The adapter around this page's `localStorage`, set when a guard opens it.
    static ADAPTER: RefCell<Option<web_sys::Storage>> = const { RefCell::new(None) };
}

/// The adapter, if a guard opened localStorage.
fn adapter() -> Option<web_sys::Storage> {
    ADAPTER.with(|a| a.try_borrow().ok().and_then(|a| a.clone()))
}

/// gloo-storage's view of this page's `localStorage`, through the adapter.
pub struct PageStorage;

impl gloo_storage::Storage for PageStorage {
    fn raw() -> web_sys::Storage {
        // Only reached through a `LocalBackend`, which exists once `open` set the adapter; the
        // fallback is an adapter around nothing, whose every read is absent.
        adapter().unwrap_or_else(|| guarded_storage(JsValue::NULL.unchecked_ref()))
    }
}

/// The exception the last read or removal through the adapter threw, if one did.
fn take_failure() -> Option<StorageError> {
    let thrown = take_failure_of(&PageStorage::raw());
    (!thrown.is_undefined()).then(|| storage_error(&thrown, StorageErrorKind::Other))
}

/// The core's storage on `localStorage`, through gloo-storage.
pub struct LocalBackend(());

impl LocalBackend {
    /// The page's `localStorage`, or why there is none (no window, access denied, null, or
    /// an empty storage that refuses a write, as Safari's old private mode did). The write
    /// test uses `probe_key` and removes it at once.
    pub fn open(probe_key: &str) -> Result<Self, StorageError> {
        let unavailable = |m: &str| StorageError::new(StorageErrorKind::Unavailable, m);
        let page = dom::page().ok_or_else(|| unavailable("no window: not a browser page"))?;
        let raw = match dom::local_storage(&page) {
            Ok(Some(raw)) => raw,
            Ok(None) => return Err(unavailable("window.localStorage is null")),
            Err(e) => return Err(storage_error(&e, StorageErrorKind::Unavailable)),
        };
        let adapter = guarded_storage(&raw);
        ADAPTER.with(|a| {
            if let Ok(mut a) = a.try_borrow_mut() {
                *a = Some(adapter);
            }
        });
        let mut backend = Self(());
        // A storage that holds something can be read; if it is merely full, writes degrade
        // one by one. An empty one that refuses a write is unusable.
        if backend.count().unwrap_or(0) == 0 {
            backend
                .set(probe_key, &Value::Null)
                .map_err(|e| StorageError {
                    kind: StorageErrorKind::Unavailable,
                    ..e
                })?;
            let _ = backend.remove(probe_key);
        }
        Ok(backend)
    }
}

impl KeyValue for LocalBackend {
    /// One `getItem` on gloo's `raw()` (the adapter). The text, not gloo's typed `get`: the
    /// store reads it into the record (src/core/quiet.rs) and does not read again
    /// a text it has read or written before (src/core/store/parsed.rs).
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        let text = PageStorage::raw().get_item(key).ok().flatten();
        take_failure().map_or(Ok(text), Err)
    }

    fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError> {
        PageStorage::set(key, value).map_err(from_gloo)
    }

    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        PageStorage::delete(key);
        take_failure().map_or(Ok(()), Err)
    }

    /// `setItem` with the text itself (Superset's `last_async_event_id`), as its frontend
    /// writes it.
    fn put_text(&mut self, key: &str, text: &str) -> Result<(), StorageError> {
        PageStorage::raw()
            .set_item(key, text)
            .map_err(|e| storage_error(&e, StorageErrorKind::Other))
    }

    fn keys(&self) -> Result<Vec<String>, StorageError> {
        let len = self.count()?;
        let raw = PageStorage::raw();
        let mut keys = Vec::with_capacity(len);
        for i in 0..u32::try_from(len).unwrap_or(u32::MAX) {
            if let Ok(Some(key)) = raw.key(i) {
                keys.push(key);
            }
        }
        take_failure().map_or(Ok(keys), Err)
    }

    fn count(&self) -> Result<usize, StorageError> {
        let len = PageStorage::length();
        take_failure().map_or(Ok(len as usize), Err)
    }
}

fn from_gloo(e: GlooError) -> StorageError {
    match e {
        GlooError::SerdeError(_) => StorageError::not_json(),
        // Only gloo's `get` says it, which the guard does not call.
        GlooError::KeyNotFound(_) => StorageError::new(StorageErrorKind::Other, "not found"),
        GlooError::JsError(e) => {
            let kind = error_kind(&e.name, StorageErrorKind::Other);
            StorageError::new(kind, format!("{}: {}", e.name, e.message))
        }
    }
}

/// Firefox used its own name for the quota error before adopting the standard one.
fn error_kind(name: &str, otherwise: StorageErrorKind) -> StorageErrorKind {
    match name {
        "QuotaExceededError" | "NS_ERROR_DOM_QUOTA_REACHED" => StorageErrorKind::QuotaExceeded,
        "SecurityError" => StorageErrorKind::Unavailable,
        _ => otherwise,
    }
}

/// Reads a thrown `DOMException` (or anything else) into a [`StorageError`].
fn storage_error(thrown: &JsValue, otherwise: StorageErrorKind) -> StorageError {
    let field = |name: &str| {
        js_sys::Reflect::get(thrown, &JsValue::from_str(name))
            .ok()
            .and_then(|v| v.as_string())
    };
    let name = field("name").unwrap_or_default();
    let message = field("message")
        .or_else(|| thrown.as_string())
        .unwrap_or_else(|| "localStorage threw".to_owned());
    let kind = error_kind(&name, otherwise);
    if name.is_empty() {
        StorageError::new(kind, message)
    } else {
        StorageError::new(kind, format!("{name}: {message}"))
    }
}

/// Where a guard keeps its data: localStorage (shared by the origin's tabs) or its own memory.
pub enum Backend {
    Local(LocalBackend),
    Memory(MemoryStorage),
}

impl KeyValue for Backend {
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        match self {
            Backend::Local(s) => s.get_text(key),
            Backend::Memory(s) => s.get_text(key),
        }
    }
    fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError> {
        match self {
            Backend::Local(s) => s.set(key, value),
            Backend::Memory(s) => s.set(key, value),
        }
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        match self {
            Backend::Local(s) => s.remove(key),
            Backend::Memory(s) => s.remove(key),
        }
    }
    fn put_text(&mut self, key: &str, text: &str) -> Result<(), StorageError> {
        match self {
            Backend::Local(s) => s.put_text(key, text),
            Backend::Memory(s) => s.put_text(key, text),
        }
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        match self {
            Backend::Local(s) => s.keys(),
            Backend::Memory(s) => s.keys(),
        }
    }
    fn count(&self) -> Result<usize, StorageError> {
        match self {
            Backend::Local(s) => s.count(),
            Backend::Memory(s) => s.count(),
        }
    }
}
