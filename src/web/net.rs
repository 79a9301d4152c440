//! The requests the machine sends: `fetch` (the app's, or the page's at call time) with a
//! signal of the request's own, what it answered (the status, the headers the machine reads,
//! whether a redirect reached it), its body read within the machine's limit (a result parsed
//! and kept for the app), and its end: aborted, or (an answer whose body was not read) let
//! arrive first, within [`UNREAD_BODY_MS`], so the browser's log shows it answered.

use js_sys::{Function, JsString, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::AbortController;

use super::dom;
use super::exec::{bound, dispatch, handles, then2, Req};
use crate::core::endpoints::{Limit, Take, UNREAD_BODY_MS};
use crate::core::machine::{Answer, Body, Event, ReqId, Request};

thread_local! {
    static ON_ANSWER: Closure<dyn FnMut(JsValue, JsValue)> = Closure::new(answered);
    static ON_NO_ANSWER: Closure<dyn FnMut(JsValue)> = Closure::new(|req: JsValue| {
        dispatch(Event::NoAnswer(req_of(&req)));
    });
    static ON_TEXT: Closure<dyn FnMut(JsValue, JsValue)> = Closure::new(text_read);
    static ON_NO_TEXT: Closure<dyn FnMut(JsValue)> = Closure::new(|req: JsValue| {
        dispatch(Event::Body(req_of(&req), Body::Broken));
    });
}

fn req_of(value: &JsValue) -> ReqId {
    ReqId(value.as_f64().unwrap_or_default() as u32)
}

/// Calls `ok` or `failed` (bound to `req`) once `pending` (a promise, a thenable, a value)
/// settles; `failed` at once if that cannot be asked.
fn when(pending: &JsValue, ok: Function, failed: Function) {
    let promise = Promise::resolve(pending);
    if !then2(&promise, &ok, &failed) {
        let _ = failed.call0(&JsValue::NULL);
    }
}

/// The `fetch` to call: the app's, or else the page's at call time.
fn fetch_of(app: Option<Function>) -> Option<Function> {
    app.or_else(|| {
        Reflect::get(&js_sys::global(), &JsValue::from_str("fetch"))
            .ok()?
            .dyn_into::<Function>()
            .ok()
    })
}

/// `{ method, credentials: "same-origin", headers, body?, keepalive?, signal }`. The request
/// carries no identity of its own: Superset reads it from its session cookie. A body (JSON)
/// comes with `Content-Type: application/json`.
fn init_of(request: &Request, headers: &[(String, String)], signal: Option<&JsValue>) -> Object {
    let init = Object::new();
    let set = |target: &JsValue, key: &str, value: &JsValue| {
        let _ = Reflect::set(target, &JsValue::from_str(key), value);
    };
    set(&init, "method", &JsValue::from_str(request.method.as_str()));
    set(&init, "credentials", &JsValue::from_str("same-origin"));
    let header_object = Object::new();
    for (name, value) in headers {
        if request.body.is_some() && name.eq_ignore_ascii_case("content-type") {
            continue;
        }
        set(&header_object, name, &JsValue::from_str(value));
    }
    if let Some(body) = &request.body {
        set(
            &header_object,
            "Content-Type",
            &JsValue::from_str("application/json"),
        );
        set(&init, "body", &JsValue::from_str(body));
    }
    set(&init, "headers", &header_object);
    if request.keepalive {
        set(&init, "keepalive", &JsValue::TRUE);
    }
    if let Some(signal) = signal {
        set(&init, "signal", signal);
    }
    init
}

/// Sends `request` now, in this tick (so that a stop leaves before whatever the page sends
/// next).
pub(super) fn send(request: Request) {
    let req = request.req;
    let (fetch, headers) = handles(|h| {
        h.guard(request.guard)
            .map(|g| (g.fetch.clone(), g.headers.clone()))
            .unwrap_or_default()
    })
    .unwrap_or_default();
    let controller = AbortController::new().ok();
    let signal = controller
        .as_ref()
        .and_then(dom::signal_of)
        .map(JsValue::from);
    let init = init_of(&request, &headers, signal.as_ref());
    handles(|h| {
        h.requests.push((
            req,
            Req {
                controller,
                response: None,
                kept: None,
                limit: Limit::Body,
            },
        ))
    });
    let pending = fetch_of(fetch).and_then(|f| {
        f.call2(&js_sys::global(), &JsValue::from_str(&request.url), &init)
            .ok()
    });
    let Some(pending) = pending else {
        return dispatch(Event::NoAnswer(req));
    };
    let ok = ON_ANSWER.with(|f| bound(f.as_ref(), req.0));
    let failed = ON_NO_ANSWER.with(|f| bound(f.as_ref(), req.0));
    when(&pending, ok, failed);
}

/// `response.headers.get(name)`, if there is one to read.
fn header(response: &JsValue, name: &str) -> Option<String> {
    let headers = Reflect::get(response, &JsValue::from_str("headers")).ok()?;
    let get = Reflect::get(&headers, &JsValue::from_str("get"))
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    get.call1(&headers, &JsValue::from_str(name))
        .ok()?
        .as_string()
}

/// `fetch` answered request `req` with `response`: its status (a whole number up to 999, or
/// it is no answer) and what the machine reads without waiting.
fn answered(req: JsValue, response: JsValue) {
    let req = req_of(&req);
    let status = Reflect::get(&response, &JsValue::from_str("status"))
        .ok()
        .and_then(|s| s.as_f64())
        .and_then(crate::core::endpoints::http_status);
    let Some(status) = status else {
        return dispatch(Event::NoAnswer(req));
    };
    let answer = Answer {
        status,
        redirected: Reflect::get(&response, &JsValue::from_str("redirected"))
            .ok()
            .and_then(|r| r.as_bool())
            == Some(true),
        content_type: header(&response, "Content-Type"),
        content_length: header(&response, "Content-Length"),
        retry_after: header(&response, "Retry-After"),
        allow: header(&response, "Allow"),
    };
    let known = handles(|h| {
        h.request(req)
            .map(|r| r.response = Some(response))
            .is_some()
    })
    .unwrap_or(false);
    if known {
        dispatch(Event::Answered(req, answer));
    }
}

/// Reads request `req`'s body within `limit`.
pub(super) fn read(req: ReqId, limit: Limit) {
    let response = handles(|h| {
        let r = h.request(req)?;
        r.limit = limit;
        r.response.clone()
    })
    .flatten();
    let pending = response.and_then(|response| {
        Reflect::get(&response, &JsValue::from_str("text"))
            .ok()?
            .dyn_into::<Function>()
            .ok()?
            .call0(&response)
            .ok()
    });
    let Some(pending) = pending else {
        return dispatch(Event::Body(req, Body::Broken));
    };
    let ok = ON_TEXT.with(|f| bound(f.as_ref(), req.0));
    let failed = ON_NO_TEXT.with(|f| bound(f.as_ref(), req.0));
    when(&pending, ok, failed);
}

/// The body of request `req` came: within its limit, a text; of a page, its start; a result,
/// parsed and kept here.
fn text_read(req: JsValue, text: JsValue) {
    let req = req_of(&req);
    let Some(limit) = handles(|h| h.request(req).map(|r| r.limit)).flatten() else {
        return;
    };
    let Some(text) = text.dyn_ref::<JsString>() else {
        return dispatch(Event::Body(req, Body::Broken));
    };
    let body = match limit.take(text.length() as usize) {
        // Parsed where it is (a result is not copied into the module and back).
        Take::Whole if limit == Limit::Result => match parse(text) {
            Some(parsed) => {
                handles(|h| h.request(req).map(|r| r.kept = Some(parsed)));
                Body::Kept
            }
            None => Body::Broken,
        },
        Take::Whole => text.as_string().map_or(Body::Broken, Body::Text),
        Take::Start(chars) => {
            // Not inside a surrogate pair.
            let mut end = chars as u32;
            if text.char_code_at(end - 1) as u32 & 0xFC00 == 0xD800 {
                end -= 1;
            }
            text.slice(0, end)
                .as_string()
                .map_or(Body::Broken, Body::Cut)
        }
        Take::TooLong => Body::TooLong,
    };
    dispatch(Event::Body(req, body));
}

/// `JSON.parse(text)`, if it can be read as JSON.
fn parse(text: &JsString) -> Option<JsValue> {
    let json = Reflect::get(&js_sys::global(), &JsValue::from_str("JSON")).ok()?;
    let parse = Reflect::get(&json, &JsValue::from_str("parse"))
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    parse.call1(&json, text).ok()
}

/// Request `req` is done with: its handle goes; its request is aborted, or first (`drain`: the
/// machine's word that its body was not read and may arrive) its body is let arrive, within
/// [`UNREAD_BODY_MS`].
pub(super) fn end(req: ReqId, drain: bool) {
    let Some(handle) = handles(|h| h.take_request(req)).flatten() else {
        return;
    };
    let Some(controller) = handle.controller else {
        return;
    };
    let reading = match (&handle.response, drain) {
        (Some(response), true) => Reflect::get(response, &JsValue::from_str("text"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
            .and_then(|f| f.call0(response).ok()),
        _ => None,
    };
    let abort = Reflect::get(&controller, &JsValue::from_str("abort"))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .map(|f| f.bind0(&controller));
    match (reading, abort) {
        (Some(reading), Some(abort)) => {
            // Aborted only if the body has not ended within the bound (a request that ended
            // has nothing to abort).
            let timer = super::clock::set_timeout(&abort, f64::from(UNREAD_BODY_MS));
            // `clearTimeout` bound to the bound's timer.
            let clear = timer.ok().and_then(|id| {
                let clear =
                    Reflect::get(&js_sys::global(), &JsValue::from_str("clearTimeout")).ok()?;
                let bind = Reflect::get(&clear, &JsValue::from_str("bind")).ok()?;
                let bind = bind.dyn_into::<Function>().ok()?;
                bind.call2(&clear, &JsValue::NULL, &id)
                    .ok()?
                    .dyn_into::<Function>()
                    .ok()
            });
            let ended = Promise::resolve(&reading);
            if !clear.is_some_and(|clear| then2(&ended, &clear, &clear)) {
                dom::abort(&controller);
            }
        }
        _ => dom::abort(&controller),
    }
}
