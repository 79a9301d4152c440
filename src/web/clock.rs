//! The page's clock and its timers.

use std::cell::Cell;

use js_sys::Function;
use wasm_bindgen::prelude::*;

use crate::core::clock::Clock;

#[wasm_bindgen]
extern "C" {
    /// `Date.now()`, which page code may have replaced with something that throws.
    #[wasm_bindgen(catch, js_namespace = Date, js_name = now)]
    fn date_now() -> Result<JsValue, JsValue>;
    /// The global `setTimeout` (absent outside pages and workers: then nothing waits).
    #[wasm_bindgen(catch, js_name = setTimeout)]
    pub(super) fn set_timeout(callback: &Function, ms: f64) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_name = clearTimeout)]
    pub(super) fn clear_timeout(id: &JsValue) -> Result<(), JsValue>;
}

thread_local! {
    /// The last good reading.
    static LAST: Cell<u64> = const { Cell::new(0) };
}

/// `Date.now()`, in milliseconds since the epoch.
#[derive(Clone, Copy, Debug, Default)]
pub struct DateClock;

impl Clock for DateClock {
    /// A clock that throws or answers something that is not a time reads as its last good
    /// reading (0 if it never gave one): an exception from page code must not escape through
    /// the guard's state, and time does not run backwards for its TTL.
    fn now_ms(&self) -> u64 {
        match date_now().ok().and_then(|v| v.as_f64()) {
            Some(ms) if ms.is_finite() && ms >= 0.0 => {
                let ms = ms as u64;
                LAST.with(|last| last.set(ms));
                ms
            }
            _ => LAST.with(Cell::get),
        }
    }
}
