//! The cancel request over `fetch`: send, wait, retry, as the core's [`CancelFlow`] decides.
//!
//! No borrow of the guard is held across an `await` or while JS code runs, so the app may call
//! the guard (even `logout()`) while a cancel is in flight. Aborting uses the platform's own
//! objects (the promise's `resolve` as timer callback and abort listener, `AbortController`'s
//! bound `abort`), so nothing is leaked when a cancel ends.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal};

use super::clock::DateClock;
use super::guard::Inner;
use super::random::MathRandom;
use crate::core::cancel_flow::{Answer, CancelFlow, CancelOutcome, Step};
use crate::core::clock::Clock;

/// What a cancel needs from the guard, read under one short borrow.
struct Prepared {
    flow: CancelFlow,
    url: String,
    headers: Vec<(String, String)>,
    fetch: Option<Function>,
    logout_signal: Option<AbortSignal>,
}

fn prepare(inner: &Rc<RefCell<Inner>>, job_id: &str) -> Result<Prepared, CancelOutcome> {
    let Ok(mut guard) = inner.try_borrow_mut() else {
        // Only reachable if JS re-entered the guard from inside a guard call.
        return Err(CancelFlow::new(job_id, Default::default()).aborted());
    };
    let flow = CancelFlow::new(job_id, guard.options.retry);
    if let Some(refused) = flow.refusal(&guard.store.check_cancel(job_id)) {
        return Err(refused);
    }
    Ok(Prepared {
        url: guard.options.cancel_url_for(job_id),
        headers: guard.options.headers.clone(),
        fetch: guard.fetch.clone(),
        logout_signal: guard.logout_signal(),
        flow,
    })
}

/// Runs one cancel to its outcome. Never fails: every path ends in a [`CancelOutcome`].
pub async fn run(
    inner: Rc<RefCell<Inner>>,
    job_id: String,
    app_signal: Option<AbortSignal>,
) -> CancelOutcome {
    let Prepared {
        mut flow,
        url,
        headers,
        fetch,
        logout_signal,
    } = match prepare(&inner, &job_id) {
        Ok(p) => p,
        Err(outcome) => return outcome,
    };
    if app_signal.as_ref().is_some_and(AbortSignal::aborted)
        || logout_signal.as_ref().is_some_and(AbortSignal::aborted)
    {
        return flow.aborted();
    }
    // One controller for this cancel, aborted by the app's signal or by logout().
    let controller = AbortController::new().ok();
    let signal = controller.as_ref().map(AbortController::signal);
    let links: Vec<(AbortSignal, Function)> = match &controller {
        Some(c) => [app_signal, logout_signal]
            .into_iter()
            .flatten()
            .filter_map(|s| link(&s, c).map(|f| (s, f)))
            .collect(),
        None => Vec::new(),
    };
    let init = request_init(&headers, signal.as_ref());
    let aborted = || signal.as_ref().is_some_and(AbortSignal::aborted);

    let outcome = loop {
        if flow.sent() > 0 {
            // After a wait: the session may have changed in this tab or another.
            let check = match inner.try_borrow_mut() {
                Ok(mut guard) => guard.store.check_cancel(&job_id),
                Err(_) => break flow.aborted(),
            };
            if let Some(refused) = flow.refusal(&check) {
                break refused;
            }
        }
        if aborted() {
            break flow.aborted();
        }
        flow.sending();
        let answer = send(fetch.as_ref(), &url, &init).await;
        // An answer from the server stands even if an abort came while it travelled.
        if answer == Answer::NetworkError && aborted() {
            break flow.aborted();
        }
        match flow.after(&answer, DateClock.now_ms(), &mut MathRandom) {
            Step::Finish(outcome) => break outcome,
            Step::Wait(ms) => {
                sleep(ms, signal.as_ref()).await;
                if aborted() {
                    break flow.aborted();
                }
            }
        }
    };

    for (s, f) in links {
        let _ = s.remove_event_listener_with_callback("abort", &f);
    }
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.store.settle_cancel(&job_id, outcome.outcome);
    }
    outcome
}

/// Makes `source` aborting also abort `controller`; returns the listener to remove later.
fn link(source: &AbortSignal, controller: &AbortController) -> Option<Function> {
    let abort: Function = Reflect::get(controller, &JsValue::from_str("abort"))
        .ok()?
        .dyn_into()
        .ok()?;
    let bound = abort.bind0(controller);
    source
        .add_event_listener_with_callback("abort", &bound)
        .ok()?;
    Some(bound)
}

/// `{ method: "POST", credentials: "same-origin", headers, signal }`. The request carries no
/// identity of its own: Superset reads it from the `async-token` cookie.
fn request_init(headers: &[(String, String)], signal: Option<&AbortSignal>) -> Object {
    let init = Object::new();
    let set = |target: &JsValue, key: &str, value: &JsValue| {
        let _ = Reflect::set(target, &JsValue::from_str(key), value);
    };
    set(&init, "method", &JsValue::from_str("POST"));
    set(&init, "credentials", &JsValue::from_str("same-origin"));
    let header_object = Object::new();
    for (name, value) in headers {
        set(&header_object, name, &JsValue::from_str(value));
    }
    set(&init, "headers", &header_object);
    if let Some(signal) = signal {
        set(&init, "signal", signal);
    }
    init
}

/// One request. A fetch that throws, rejects or resolves to something without a status is a
/// network error.
async fn send(fetch: Option<&Function>, url: &str, init: &Object) -> Answer {
    let global = js_sys::global();
    let fetch = match fetch {
        Some(f) => f.clone(),
        None => match Reflect::get(&global, &JsValue::from_str("fetch")).map(JsCast::dyn_into) {
            Ok(Ok(f)) => f,
            _ => return Answer::NetworkError,
        },
    };
    let Ok(pending) = fetch.call2(&global, &JsValue::from_str(url), init) else {
        return Answer::NetworkError;
    };
    let Ok(response) = JsFuture::from(Promise::resolve(&pending)).await else {
        return Answer::NetworkError;
    };
    let status = Reflect::get(&response, &JsValue::from_str("status"))
        .ok()
        .and_then(|v| v.as_f64())
        .filter(|s| s.fract() == 0.0 && (0.0..=999.0).contains(s));
    let Some(status) = status else {
        return Answer::NetworkError;
    };
    Answer::Status {
        status: status as u16,
        retry_after: header(&response, "Retry-After"),
    }
}

/// `response.headers.get(name)`, or `None`.
fn header(response: &JsValue, name: &str) -> Option<String> {
    let headers = Reflect::get(response, &JsValue::from_str("headers")).ok()?;
    let get: Function = Reflect::get(&headers, &JsValue::from_str("get"))
        .ok()?
        .dyn_into()
        .ok()?;
    get.call1(&headers, &JsValue::from_str(name))
        .ok()?
        .as_string()
}

/// Waits `ms`, or less if `signal` aborts first.
async fn sleep(ms: u64, signal: Option<&AbortSignal>) {
    let global = js_sys::global();
    let timer = |name: &str| -> Option<Function> {
        Reflect::get(&global, &JsValue::from_str(name))
            .ok()?
            .dyn_into()
            .ok()
    };
    let (Some(set_timeout), Some(clear_timeout)) = (timer("setTimeout"), timer("clearTimeout"))
    else {
        return;
    };
    let mut handle = JsValue::UNDEFINED;
    let mut wake: Option<Function> = None;
    let promise = Promise::new(&mut |resolve, _reject| {
        match set_timeout.call2(&global, &resolve, &JsValue::from_f64(ms as f64)) {
            Ok(h) => handle = h,
            // No timer: don't wait at all rather than forever.
            Err(_) => {
                let _ = resolve.call0(&JsValue::UNDEFINED);
            }
        }
        if let Some(signal) = signal {
            let _ = signal.add_event_listener_with_callback("abort", &resolve);
        }
        wake = Some(resolve);
    });
    let _ = JsFuture::from(promise).await;
    let _ = clear_timeout.call1(&global, &handle);
    if let (Some(signal), Some(wake)) = (signal, wake) {
        let _ = signal.remove_event_listener_with_callback("abort", &wake);
    }
}
