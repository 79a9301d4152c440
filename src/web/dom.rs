//! The platform calls of the shell whose web-sys bindings do not catch: `AbortSignal.aborted`,
//! `AbortController.signal` and `abort()`, `BroadcastChannel.onmessage` and `close()`,
//! `MessageEvent.data`, and `StorageEvent.key`, `oldValue` and `newValue`. Page code can
//! replace any of them with one that throws; through a binding that does not catch, the
//! exception would unwind through the guard, past the point where its state is borrowed (or a
//! closure is running), and leave it unusable for the page's life. These go through
//! `Reflect` (whose js-sys bindings catch), and each answers a value its caller can live with.

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{
    AbortController, AbortSignal, BroadcastChannel, EventTarget, MessageEvent, Storage,
    StorageEvent,
};

/// `target[name]`, through `Reflect.get` (which catches): a getter that throws is an `Err`.
/// Values stay `JsValue`s and are read in Rust, so nothing the page chose is coerced outside
/// the catch.
fn get(target: &JsValue, name: &str) -> Result<JsValue, JsValue> {
    Reflect::get(target, &JsValue::from_str(name))
}

/// Calls `target[name]()`; a method that is missing or throws is an `Err`.
fn call(target: &JsValue, name: &str) -> Result<JsValue, JsValue> {
    get(target, name)?.dyn_into::<Function>()?.call0(target)
}

/// The page's global object, as an event target: one with a `document` and `addEventListener`
/// (a browser page, or jsdom, whose window is no `Window` by `instanceof`: web-sys's
/// `window()` finds none there). `None` in Node and workers.
pub fn page() -> Option<EventTarget> {
    let global: JsValue = js_sys::global().into();
    let document = get(&global, "document").ok()?;
    let listen = get(&global, "addEventListener").ok()?;
    (document.is_object() && listen.is_function()).then(|| global.unchecked_into())
}

/// The page's `localStorage`: `Ok(None)` when there is none (`null`, or not a page), `Err`
/// with what its getter threw (a `SecurityError` where storage is denied).
pub fn local_storage(page: &EventTarget) -> Result<Option<Storage>, JsValue> {
    let storage = get(page, "localStorage")?;
    Ok(storage.is_object().then(|| storage.unchecked_into()))
}

/// Whether `signal` is aborted; one that cannot be read is not (its `abort` event, if it
/// comes, still ends the cancel).
pub fn is_aborted(signal: &AbortSignal) -> bool {
    get(signal, "aborted")
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// The controller's signal, if it can be read and is one.
pub fn signal_of(controller: &AbortController) -> Option<AbortSignal> {
    get(controller, "signal").ok()?.dyn_into().ok()
}

/// Aborts the controller; a refusal changes nothing (the session checks still stop a cancel).
pub fn abort(controller: &AbortController) {
    let _ = call(controller, "abort");
}

/// Sets the channel's `onmessage`; whether it took.
pub fn set_onmessage(channel: &BroadcastChannel, handler: Option<&Function>) -> bool {
    let handler = handler.map_or(JsValue::NULL, |f| f.clone().into());
    Reflect::set(channel, &JsValue::from_str("onmessage"), &handler).unwrap_or(false)
}

/// Closes the channel, if it lets itself be closed.
pub fn close(channel: &BroadcastChannel) {
    let _ = call(channel, "close");
}

/// The message's data; `undefined` when it cannot be read.
pub fn data(event: &MessageEvent) -> JsValue {
    get(event, "data").unwrap_or(JsValue::UNDEFINED)
}

/// A string or `null` read from the page; `None` when it could not be read or is neither.
fn text_or_null(value: Result<JsValue, JsValue>) -> Option<Option<String>> {
    let value = value.ok()?;
    if value.is_null() {
        Some(None)
    } else {
        value.as_string().map(Some)
    }
}

/// A `storage` event's `key` (`Some(None)` after `clear()`); `None` when it cannot be read.
pub fn storage_key(event: &StorageEvent) -> Option<Option<String>> {
    text_or_null(get(event, "key"))
}

/// A `storage` event's `oldValue` and `newValue`; `None` when either cannot be read.
pub fn storage_values(event: &StorageEvent) -> Option<(Option<String>, Option<String>)> {
    Some((
        text_or_null(get(event, "oldValue"))?,
        text_or_null(get(event, "newValue"))?,
    ))
}
