//! The cancel request over `fetch`: send, wait, retry, as the core's [`CancelFlow`] decides.
//!
//! The waiting is done by `cancel.js`, a small loop that calls `fetch` and `setTimeout` and
//! asks [`Run::step`] what to do after each event; every decision is made here (and in the
//! core). Driving the loop from JS instead of with Rust futures keeps an async runtime out of
//! the module (4.4 KiB gzipped less, measured when it was made).
//!
//! No borrow of the guard is held while JS code runs, so the app may call the guard (even
//! `logout()`) while a cancel is in flight. Aborting uses the platform's own objects (an
//! `AbortController` per cancel, aborted by the app's signal or by `logout()`), so nothing is
//! left behind when a cancel ends.

use alloc::string::String;

use ::core::cell::RefCell;
use alloc::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::clock::DateClock;
use super::guard::Inner;
use super::random::MathRandom;
use crate::core::cancel_flow::{Answer, CancelFlow, CancelOutcome, Step};
use crate::core::clock::Clock;
use crate::core::json::ToJson;

#[wasm_bindgen(module = "/src/web/cancel.js")]
extern "C" {
    /// Runs the loop: `step(NO_ANSWER, undefined, aborted)` first, then sends when `step`
    /// returns [`SEND`], waits when it returns a number of milliseconds, and resolves with
    /// anything else (the outcome). Never rejects.
    #[wasm_bindgen(js_name = driveCancel)]
    fn drive_cancel(
        step: JsValue,
        fetch: Option<Function>,
        url: &str,
        init: &Object,
        app_signal: Option<AbortSignal>,
        logout_signal: Option<AbortSignal>,
    ) -> Promise;
}

/// What `step` returns to make `cancel.js` send the request.
const SEND: f64 = -1.0;
/// The status `cancel.js` reports for a request that got no answer (it threw, rejected, or
/// resolved to something without an integer status in 0..=999).
const NETWORK_ERROR: f64 = -1.0;
/// The status `cancel.js` reports when there is no answer to give: at the start and after a
/// wait.
const NO_ANSWER: f64 = -2.0;

/// Starts one cancel; the promise resolves to its `CancelOutcome` and never rejects.
pub fn start(
    inner: &Rc<RefCell<Inner>>,
    job_id: String,
    app_signal: Option<AbortSignal>,
) -> Promise {
    let Ok(mut guard) = inner.try_borrow_mut() else {
        // Only reachable if JS re-entered the guard from inside a guard call.
        return resolved(&CancelFlow::new(&job_id, Default::default()).aborted());
    };
    let flow = CancelFlow::new(&job_id, guard.options.retry);
    if let Some(refused) = flow.refusal(&guard.store.check_cancel(&job_id)) {
        return resolved(&refused);
    }
    let url = guard.options.cancel_url_for(&job_id);
    let init = request_init(&guard.options.headers);
    let fetch = guard.fetch.clone();
    let logout_signal = guard.logout_signal();
    drop(guard);

    let mut run = Run {
        inner: Rc::clone(inner),
        job_id,
        flow,
    };
    let step = Closure::<dyn FnMut(f64, Option<String>, bool) -> JsValue>::new(
        move |status: f64, retry_after: Option<String>, aborted: bool| match run.step(
            status,
            retry_after,
            aborted,
        ) {
            Next::Send => JsValue::from_f64(SEND),
            Next::Wait(ms) => JsValue::from_f64(ms as f64),
            Next::Finish(outcome) => outcome_js(&outcome),
        },
    );
    // JS owns the closure from here; it is freed when the loop lets go of it.
    drive_cancel(
        step.into_js_value(),
        fetch,
        &url,
        &init,
        app_signal,
        logout_signal,
    )
}

/// One cancel in flight: the flow and what it needs to re-check and settle.
struct Run {
    inner: Rc<RefCell<Inner>>,
    job_id: String,
    flow: CancelFlow,
}

/// What the loop does next.
enum Next {
    Send,
    Wait(u64),
    Finish(CancelOutcome),
}

impl Run {
    /// The next move, given what just happened: `status` is [`NO_ANSWER`] at the start and
    /// after a wait, [`NETWORK_ERROR`] or the HTTP status after a request; `aborted` says
    /// whether the app or `logout()` aborted this cancel.
    fn step(&mut self, status: f64, retry_after: Option<String>, aborted: bool) -> Next {
        let next = if status == NO_ANSWER {
            self.before_send(aborted)
        } else {
            let answer = if status == NETWORK_ERROR {
                Answer::NetworkError
            } else {
                Answer::Status {
                    status: status as u16,
                    retry_after,
                }
            };
            // An answer from the server stands even if an abort came while it travelled.
            if answer == Answer::NetworkError && aborted {
                Next::Finish(self.flow.aborted())
            } else {
                match self
                    .flow
                    .after(&answer, DateClock.now_ms(), &mut MathRandom)
                {
                    Step::Finish(outcome) => Next::Finish(outcome),
                    // An abort during the request ends the cancel rather than a wait.
                    Step::Wait(_) if aborted => Next::Finish(self.flow.aborted()),
                    Step::Wait(ms) => Next::Wait(ms),
                }
            }
        };
        if let Next::Finish(outcome) = &next {
            if let Ok(mut guard) = self.inner.try_borrow_mut() {
                guard.store.settle_cancel(&self.job_id, outcome.outcome);
            }
        }
        next
    }

    /// At the start or after a wait: abort, refuse (the session may have changed in this tab
    /// or another meanwhile), or send.
    fn before_send(&mut self, aborted: bool) -> Next {
        if aborted {
            return Next::Finish(self.flow.aborted());
        }
        if self.flow.sent() > 0 {
            let check = match self.inner.try_borrow_mut() {
                Ok(mut guard) => guard.store.check_cancel(&self.job_id),
                Err(_) => return Next::Finish(self.flow.aborted()),
            };
            if let Some(refused) = self.flow.refusal(&check) {
                return Next::Finish(refused);
            }
        }
        self.flow.sending();
        Next::Send
    }
}

/// The outcome as a JS object (the `{ outcome, ... }` the app is given).
fn outcome_js(outcome: &CancelOutcome) -> JsValue {
    // The writer's JSON always parses; the error is kept rather than thrown if it did not.
    js_sys::JSON::parse(&outcome.to_json()).unwrap_or_else(|e| e)
}

fn resolved(outcome: &CancelOutcome) -> Promise {
    Promise::resolve(&outcome_js(outcome))
}

/// `{ method: "POST", credentials: "same-origin", headers }`; `cancel.js` adds the signal.
/// The request carries no identity of its own: Superset reads it from the `async-token`
/// cookie.
fn request_init(headers: &[(String, String)]) -> Object {
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
    init
}
