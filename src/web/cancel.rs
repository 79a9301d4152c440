//! The cancel request over `fetch`: check, send, wait, retry, as the core's [`CancelFlow`]
//! decides, as one async Rust function (wasm-bindgen-futures turns it into the promise
//! `cancel()` returns).
//!
//! No borrow of the guard is held across an `await`, so the app may call the guard (even
//! `logout()`) while a cancel is in flight. Aborting uses the platform's own objects: each
//! cancel has an `AbortController` whose signal goes to `fetch` and ends a wait, aborted by the
//! app's signal or by `logout()`.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{AbortController, AbortSignal};

use super::boundary::to_js;
use super::clock::DateClock;
use super::dom;
use super::random::MathRandom;
use super::state::Inner;
use super::tabs::{Change, Listeners, Source};
use crate::core::cancel_flow::{Answer, CancelFlow, CancelOutcome, Step};
use crate::core::clock::Clock;
use crate::core::response::Reply;

#[wasm_bindgen]
extern "C" {
    /// The global `setTimeout` (absent outside pages and workers: then nothing waits).
    #[wasm_bindgen(catch, js_name = setTimeout)]
    fn set_timeout(callback: &Function, ms: f64) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue) -> Result<(), JsValue>;
}

/// Starts one cancel; the promise resolves to its `CancelOutcome` and never rejects.
/// A second `cancel()` of a job whose cancel is still running gets the same promise: one
/// request, one outcome for both.
pub fn start(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    job_id: String,
    app_signal: Option<AbortSignal>,
) -> Promise {
    if let Ok(guard) = inner.try_borrow() {
        if let Some((_, running)) = guard.cancels.iter().find(|(id, _)| *id == job_id) {
            return running.clone();
        }
    }
    let state = Rc::clone(inner);
    let listeners = Rc::downgrade(listeners);
    let id = job_id.clone();
    let promise = future_to_promise(async move {
        let outcome = run(Rc::clone(&state), id, app_signal).await;
        if let Ok(mut guard) = state.try_borrow_mut() {
            guard.cancels.retain(|(id, _)| *id != outcome.job_id);
        }
        // An answer from the server may have changed the record (settled above, in `run`).
        if outcome.http_status.is_some() {
            if let Some(listeners) = listeners.upgrade() {
                Listeners::notify(&listeners, Change::JobsChanged, Source::Local);
            }
        }
        // A CancelOutcome always converts; the error would be resolved rather than thrown.
        Ok(to_js(&outcome).unwrap_or_else(|e| e))
    });
    // The future first runs in a later microtask: the entry is there before it can end.
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.cancels.push((job_id, promise.clone()));
    }
    promise
}

/// One cancel, from the local check to its outcome.
async fn run(
    inner: Rc<RefCell<Inner>>,
    job_id: String,
    app_signal: Option<AbortSignal>,
) -> CancelOutcome {
    let (mut flow, request) = {
        let Ok(mut guard) = inner.try_borrow_mut() else {
            // Only reachable if JS re-entered the guard from inside a guard call.
            return CancelFlow::new(&job_id, Default::default(), Default::default()).aborted();
        };
        let flow = CancelFlow::new(&job_id, guard.options.retry, guard.options.contract);
        if let Some(refused) = flow.refusal(&guard.store.check_cancel(&job_id)) {
            return refused;
        }
        let tab = guard.store.cancel_tab(&job_id);
        let body = guard.options.cancel_body(tab.as_deref());
        let request = Request {
            url: guard.options.cancel_url_for(&job_id),
            init: request_init(&guard.options.headers, body.as_deref()),
            fetch: guard.fetch.clone(),
        };
        let logout = guard.logout_signal();
        (flow, Aborts::new(request, app_signal, logout))
    };

    let outcome = loop {
        if request.aborted() {
            break flow.aborted();
        }
        if flow.sent() > 0 {
            // The session may have changed meanwhile, in this tab or another.
            let check = match inner.try_borrow_mut() {
                Ok(mut guard) => guard.store.check_cancel(&job_id),
                Err(_) => break flow.aborted(),
            };
            if let Some(refused) = flow.refusal(&check) {
                break refused;
            }
        }
        flow.sending();
        let answer = request.send().await;
        // An answer from the server stands even if an abort came while it travelled.
        if answer == Answer::NetworkError && request.aborted() {
            break flow.aborted();
        }
        match flow.after(&answer, DateClock.now_ms(), &mut MathRandom) {
            Step::Finish(outcome) => break outcome,
            // An abort during the request ends the cancel rather than a wait.
            Step::Wait(_) if request.aborted() => break flow.aborted(),
            Step::Wait(ms) => request.sleep(ms).await,
        }
    };
    request.release();
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard
            .store
            .settle_cancel(&job_id, outcome.outcome, outcome.action.as_deref());
    }
    outcome
}

/// What one cancel sends.
struct Request {
    url: String,
    init: Object,
    fetch: Option<Function>,
}

/// The request with its abort wiring: the app's signal and logout's abort this cancel's own
/// controller, whose signal the request and the waits listen to.
struct Aborts {
    request: Request,
    sources: Vec<AbortSignal>,
    controller: Option<AbortController>,
    abort: Option<Function>,
}

impl Aborts {
    fn new(request: Request, app: Option<AbortSignal>, logout: Option<AbortSignal>) -> Self {
        let sources: Vec<AbortSignal> = app.into_iter().chain(logout).collect();
        let controller = AbortController::new().ok();
        // `controller.abort` bound to the controller: a listener with no Rust behind it.
        let abort = controller.as_ref().and_then(|c| {
            Reflect::get(c, &JsValue::from_str("abort"))
                .ok()?
                .dyn_into::<Function>()
                .ok()
                .map(|f| f.bind0(c))
        });
        if let (Some(controller), Some(abort)) = (&controller, &abort) {
            if let Some(signal) = dom::signal_of(controller) {
                let _ = Reflect::set(&request.init, &JsValue::from_str("signal"), &signal);
            }
            for source in &sources {
                let _ = source.add_event_listener_with_callback("abort", abort);
            }
        }
        Self {
            request,
            sources,
            controller,
            abort,
        }
    }

    fn signal(&self) -> Option<AbortSignal> {
        self.controller.as_ref().and_then(dom::signal_of)
    }

    fn aborted(&self) -> bool {
        self.sources.iter().any(dom::is_aborted)
            || self.signal().is_some_and(|s| dom::is_aborted(&s))
    }

    /// Removes the listeners this cancel added.
    fn release(&self) {
        if let Some(abort) = &self.abort {
            for source in &self.sources {
                let _ = source.remove_event_listener_with_callback("abort", abort);
            }
        }
    }

    /// Sends the request once: the status and `Retry-After`, or a network error if `fetch`
    /// threw, rejected or resolved to something without an integer status in 0..=999.
    async fn send(&self) -> Answer {
        let global = js_sys::global();
        let fetch = self.request.fetch.clone().or_else(|| {
            Reflect::get(&global, &JsValue::from_str("fetch"))
                .ok()?
                .dyn_into::<Function>()
                .ok()
        });
        let Some(fetch) = fetch else {
            return Answer::NetworkError;
        };
        let url = JsValue::from_str(&self.request.url);
        let Ok(pending) = fetch.call2(&global, &url, &self.request.init) else {
            return Answer::NetworkError;
        };
        let Ok(response) = JsFuture::from(Promise::resolve(&pending)).await else {
            return Answer::NetworkError;
        };
        let status = Reflect::get(&response, &JsValue::from_str("status"))
            .ok()
            .and_then(|s| s.as_f64())
            .filter(|s| s.fract() == 0.0 && (0.0..=999.0).contains(s));
        match status {
            Some(status) => Answer::Status {
                status: status as u16,
                retry_after: retry_after(&response),
                reply: reply(&response, status as u16).await,
            },
            None => Answer::NetworkError,
        }
    }

    /// Waits `ms`, or less if this cancel is aborted first; not at all without timers.
    async fn sleep(&self, ms: u64) {
        let signal = self.signal();
        let mut wake = None;
        let mut timer = None;
        let promise = Promise::new(&mut |resolve, _reject| {
            if let Ok(id) = set_timeout(&resolve, ms as f64) {
                timer = Some(id);
                if let Some(signal) = &signal {
                    let _ = signal.add_event_listener_with_callback("abort", &resolve);
                }
            } else {
                let _ = resolve.call0(&JsValue::UNDEFINED);
            }
            wake = Some(resolve);
        });
        let _ = JsFuture::from(promise).await;
        if let Some(id) = timer {
            let _ = clear_timeout(&id);
        }
        if let (Some(signal), Some(wake)) = (&signal, &wake) {
            let _ = signal.remove_event_listener_with_callback("abort", wake);
        }
    }
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

fn retry_after(response: &JsValue) -> Option<String> {
    header(response, "Retry-After")
}

/// What the answer's body says, read only where the outcome depends on it (a 2xx, a 404, a
/// 422): JSON by its `Content-Type`, parsed by the platform (`response.json()`), then read as a
/// [`Reply`]. A body of another type (Superset's HTML error page), or one that claims JSON but
/// does not parse, is not the endpoint's answer.
async fn reply(response: &JsValue, status: u16) -> Reply {
    if !matches!(status, 200..=299 | 404 | 422) {
        return Reply::Unread;
    }
    // No `Content-Type` says nothing: read as the endpoint's own answer, by status alone.
    let Some(kind) = header(response, "Content-Type") else {
        return Reply::Unread;
    };
    let kind = kind.to_ascii_lowercase();
    if !(kind.starts_with("application/json") || kind.contains("+json")) {
        return Reply::NotJson;
    }
    let parsed = Reflect::get(response, &JsValue::from_str("json"))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .and_then(|f| f.call0(response).ok());
    let Some(pending) = parsed else {
        return Reply::NotJson;
    };
    match JsFuture::from(Promise::resolve(&pending)).await {
        Ok(value) => Reply::from_json(serde_wasm_bindgen::Deserializer::from(value)),
        Err(_) => Reply::NotJson,
    }
}

/// `{ method: "POST", credentials: "same-origin", headers, body? }`; the signal is added per
/// cancel. The request carries no identity of its own: Superset reads it from the
/// `async-token` cookie (or its session). A JSON `body` (the task contract's) comes with
/// `Content-Type: application/json`.
fn request_init(headers: &[(String, String)], body: Option<&str>) -> Object {
    let init = Object::new();
    let set = |target: &JsValue, key: &str, value: &JsValue| {
        let _ = Reflect::set(target, &JsValue::from_str(key), value);
    };
    set(&init, "method", &JsValue::from_str("POST"));
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
    init
}
