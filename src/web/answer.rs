//! What `fetch` answered, as far as the guard reads it without waiting: the status, a header,
//! whether it came by a redirect; and, once the answer is decided, its body let arrive rather
//! than aborted ([`drain`]). Waiting for a body is the client's ([`super::http`]).

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::AbortController;

use super::dom;
use super::request::settled_within;
use crate::core::endpoints::{drains_unread, UNREAD_BODY_MS};

/// An answer: the `Response` `fetch` gave, its status, and the attempt's deadline (its body
/// must come before it).
pub(super) struct Answer {
    pub(super) response: JsValue,
    pub(super) status: u16,
    pub(super) deadline: f64,
}

impl Answer {
    /// `response.headers.get(name)`, if there is one to read.
    pub(super) fn header(&self, name: &str) -> Option<String> {
        header_of(&self.response, name)
    }

    /// Whether `fetch` reached it by following a redirect (another page's answer).
    pub(super) fn redirected(&self) -> bool {
        Reflect::get(&self.response, &JsValue::from_str("redirected"))
            .ok()
            .and_then(|r| r.as_bool())
            == Some(true)
    }
}

/// What reading a body gave.
pub(super) enum Body {
    Text(String),
    /// The first [`Limit::Page`](crate::core::endpoints::Limit::Page) characters of a longer
    /// page.
    #[cfg_attr(not(feature = "follow"), allow(dead_code))]
    Cut(String),
    /// Longer than the limit.
    TooLong,
    /// `text()` is missing, threw, rejected, or gave something that is not a string.
    Broken,
}

/// `response.headers.get(name)`, if there is one to read.
fn header_of(response: &JsValue, name: &str) -> Option<String> {
    let headers = Reflect::get(response, &JsValue::from_str("headers")).ok()?;
    let get = Reflect::get(&headers, &JsValue::from_str("get"))
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    get.call1(&headers, &JsValue::from_str(name))
        .ok()?
        .as_string()
}

/// Lets the body of `response` (an answer whose body was not needed) arrive, then ends its
/// request; at once if it declares a long body or `text()` cannot be called, else when the body
/// has come or [`UNREAD_BODY_MS`] after, whichever is first.
pub(super) fn drain(response: &JsValue, controller: AbortController) {
    let reading = drains_unread(header_of(response, "Content-Length").as_deref())
        .then(|| Reflect::get(response, &JsValue::from_str("text")).ok())
        .flatten()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .and_then(|f| f.call0(response).ok());
    match (reading, bound_abort(&controller)) {
        (Some(reading), Some(abort)) => {
            // A thenable that throws when read is a settled one here.
            let read = Array::of1(&Promise::resolve(&reading));
            // `then` with a plain function (js-sys's takes a Rust closure); the promise is the
            // guard's own, and a `then` the page replaced is caught.
            let settled = settled_within(&read, UNREAD_BODY_MS);
            let then = Reflect::get(&settled, &JsValue::from_str("then"));
            if then
                .and_then(|t| t.dyn_into::<Function>()?.call1(&settled, &abort))
                .is_err()
            {
                dom::abort(&controller);
            }
        }
        _ => dom::abort(&controller),
    }
}

/// `response` as an answer, if its `status` is a whole number up to 999.
pub(super) fn answer_of(response: JsValue, deadline: f64) -> Option<Answer> {
    let status = Reflect::get(&response, &JsValue::from_str("status"))
        .ok()
        .and_then(|s| s.as_f64())
        .filter(|s| s.fract() == 0.0 && (0.0..=999.0).contains(s))?;
    Some(Answer {
        response,
        status: status as u16,
        deadline,
    })
}

/// `controller.abort` bound to the controller: a listener with no Rust behind it.
pub(super) fn bound_abort(controller: &AbortController) -> Option<Function> {
    Reflect::get(controller, &JsValue::from_str("abort"))
        .ok()?
        .dyn_into::<Function>()
        .ok()
        .map(|f| f.bind0(controller))
}
