//! One request to Superset, and sending requests whose answers nobody reads: the request's
//! `init` (headers, credentials, a JSON body), the app's `fetch` or the page's, a `fetch` sent
//! in this tick for a query, and `keepalive` requests (a query's stop, a logout's cancels, the
//! page's end) with when they are answered. The client that reads answers is [`super::http`].

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::clock::{clear_timeout, set_timeout};
use crate::core::query::STOP_DELIVERY_MS;

/// One request: where, and its `init` (each attempt adds a signal of its own).
pub(super) struct Request {
    pub(super) url: String,
    pub(super) init: Object,
}

impl Request {
    /// `{ method, credentials: "same-origin", headers, body? }`. The request carries no
    /// identity of its own: Superset reads it from its session cookie (or the `async-token`
    /// cookie). A JSON `body` (the task contract's) comes with `Content-Type: application/json`.
    pub(super) fn new(
        url: String,
        headers: &[(String, String)],
        method: &str,
        body: Option<&str>,
    ) -> Self {
        let init = Object::new();
        let set = |target: &JsValue, key: &str, value: &JsValue| {
            let _ = Reflect::set(target, &JsValue::from_str(key), value);
        };
        set(&init, "method", &JsValue::from_str(method));
        set(&init, "credentials", &JsValue::from_str("same-origin"));
        let header_object = Object::new();
        for (name, value) in headers {
            if body.is_some() && name.eq_ignore_ascii_case("content-type") {
                continue;
            }
            set(&header_object, name, &JsValue::from_str(value));
        }
        if let Some(body) = body {
            set(
                &header_object,
                "Content-Type",
                &JsValue::from_str("application/json"),
            );
            set(&init, "body", &JsValue::from_str(body));
        }
        set(&init, "headers", &header_object);
        Self { url, init }
    }
}

/// The `fetch` to call: the app's, or else the page's at call time (`None` where there is none).
pub(super) fn fetch_of(app: Option<&Function>) -> Option<Function> {
    app.cloned().or_else(|| {
        Reflect::get(&js_sys::global(), &JsValue::from_str("fetch"))
            .ok()?
            .dyn_into::<Function>()
            .ok()
    })
}

/// Calls `fetch` (the app's, or the page's) for `request` now, in this tick, so that it leaves
/// before anything the page sends next: the promise of its answer (to read with
/// [`Client::answer_to`](super::http::Client::answer_to)), or `None` when `fetch` threw. Call it outside the guard's borrow.
pub(super) fn fetch_now(request: &Request, fetch: Option<&Function>) -> Option<JsValue> {
    let fetch = fetch_of(fetch)?;
    let url = JsValue::from_str(&request.url);
    fetch.call2(&js_sys::global(), &url, &request.init).ok()
}

/// Sends each request with `fetch(…, { keepalive: true })`: best effort, its answer not read.
/// The promise settles (with `undefined`, never rejecting)
/// once every one of them is answered or failed, or [`STOP_DELIVERY_MS`] after, whichever is
/// first: a `fetch` that never settles holds nobody.
pub(super) fn send_keepalive(requests: Vec<(Request, Option<js_sys::Function>)>) -> Promise {
    let global = js_sys::global();
    let sent = js_sys::Array::new();
    for (request, fetch) in requests {
        let Some(fetch) = fetch_of(fetch.as_ref()) else {
            continue;
        };
        let _ = Reflect::set(
            &request.init,
            &JsValue::from_str("keepalive"),
            &JsValue::TRUE,
        );
        if let Ok(answer) = fetch.call2(&global, &JsValue::from_str(&request.url), &request.init) {
            // A thenable that throws when read is a settled one here.
            sent.push(&Promise::resolve(&answer));
        }
    }
    settled_within(&sent, STOP_DELIVERY_MS)
}

/// A promise that settles (with `undefined`, never rejecting) once every one of `promises` has
/// settled, or `ms` after, whichever is first.
pub(super) fn settled_within(promises: &js_sys::Array, ms: u32) -> Promise {
    let mut timer = None;
    let bound = Promise::new(&mut |resolve, _reject| {
        timer = set_timeout(&resolve, f64::from(ms)).ok();
    });
    let all = Promise::race(&js_sys::Array::of2(&Promise::all_settled(promises), &bound));
    wasm_bindgen_futures::future_to_promise(async move {
        // Neither promise rejects; an answer is not read, a rejection is not the page's.
        let _ = wasm_bindgen_futures::JsFuture::from(all).await;
        if let Some(id) = timer {
            let _ = clear_timeout(&id);
        }
        Ok(JsValue::UNDEFINED)
    })
}
