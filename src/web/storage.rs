//! [`KeyValue`] on `window.localStorage`.
//!
//! Written on `web_sys::Storage` directly rather than through gloo-storage: every gloo-storage
//! call goes through `LocalStorage::raw()`, which panics when storage is missing, and its
//! `delete`/`length` panic on exceptions. Here every failure is a [`StorageError`] value.

use crate::core::text::cat;
use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use wasm_bindgen::prelude::*;

use crate::core::error::{StorageError, StorageErrorKind};
use crate::core::storage::KeyValue;

pub struct LocalStorage {
    raw: web_sys::Storage,
    /// A key read on every call (the session marker's), kept as a JS string so that reading
    /// it does not copy the key out of wasm memory each time.
    pinned: Option<(String, JsValue)>,
}

#[wasm_bindgen]
extern "C" {
    /// `Storage`, for the one method web-sys only takes a Rust string for.
    #[wasm_bindgen(js_name = Storage)]
    type StorageByJsKey;

    /// `getItem` with a key that is already a JS string.
    #[wasm_bindgen(method, catch, js_name = getItem)]
    fn get_item(this: &StorageByJsKey, key: &JsValue) -> Result<Option<String>, JsValue>;
}

impl LocalStorage {
    /// The `Storage` object itself (never `null`: `open` checked).
    pub fn storage(&self) -> &web_sys::Storage {
        &self.raw
    }

    /// Keeps `key` as a JS string for the reads to come.
    pub fn pin_key(&mut self, key: &str) {
        self.pinned = Some((key.to_owned(), JsValue::from_str(key)));
    }

    /// The page's `localStorage`, or why there is none (no window, access denied, null, or
    /// an empty storage that refuses a write, as Safari's old private mode did). The write
    /// test uses `probe_key` and removes it at once.
    pub fn open(probe_key: &str) -> Result<Self, StorageError> {
        let window = super::window::window().ok_or_else(|| {
            StorageError::new(
                StorageErrorKind::Unavailable,
                "no window: not a browser page",
            )
        })?;
        let raw = match window.local_storage() {
            Ok(Some(raw)) => raw,
            Ok(None) => {
                return Err(StorageError::new(
                    StorageErrorKind::Unavailable,
                    "window.localStorage is null",
                ))
            }
            Err(e) => return Err(storage_error(&e, StorageErrorKind::Unavailable)),
        };
        // A storage that holds something can be read; if it is merely full, writes degrade
        // one by one. An empty one that refuses a write is unusable.
        if raw.length().unwrap_or(0) == 0 {
            raw.set_item(probe_key, "1")
                .map_err(|e| storage_error(&e, StorageErrorKind::Unavailable))?;
            let _ = raw.remove_item(probe_key);
        }
        Ok(Self { raw, pinned: None })
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
    let kind = match name.as_str() {
        // Firefox used its own name for the quota error before adopting the standard one.
        "QuotaExceededError" | "NS_ERROR_DOM_QUOTA_REACHED" => StorageErrorKind::QuotaExceeded,
        "SecurityError" => StorageErrorKind::Unavailable,
        _ => otherwise,
    };
    let message = field("message")
        .or_else(|| thrown.as_string())
        .unwrap_or_else(|| "localStorage threw".to_owned());
    let message = if name.is_empty() {
        message
    } else {
        cat(&[name.as_str(), ": ", &message])
    };
    StorageError::new(kind, message)
}

impl KeyValue for LocalStorage {
    fn get(&self, key: &str) -> Result<Option<String>, StorageError> {
        match &self.pinned {
            Some((pinned, js_key)) if pinned == key => {
                self.raw.unchecked_ref::<StorageByJsKey>().get_item(js_key)
            }
            _ => self.raw.get_item(key),
        }
        .map_err(|e| storage_error(&e, StorageErrorKind::Other))
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), StorageError> {
        self.raw
            .set_item(key, value)
            .map_err(|e| storage_error(&e, StorageErrorKind::Other))
    }

    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        self.raw
            .remove_item(key)
            .map_err(|e| storage_error(&e, StorageErrorKind::Other))
    }

    fn count(&self) -> Result<usize, StorageError> {
        self.raw
            .length()
            .map(|n| n as usize)
            .map_err(|e| storage_error(&e, StorageErrorKind::Other))
    }

    fn keys(&self) -> Result<Vec<String>, StorageError> {
        let err = |e: JsValue| storage_error(&e, StorageErrorKind::Other);
        let len = self.raw.length().map_err(err)?;
        let mut keys = Vec::with_capacity(len as usize);
        for i in 0..len {
            if let Some(key) = self.raw.key(i).map_err(err)? {
                keys.push(key);
            }
        }
        Ok(keys)
    }
}
