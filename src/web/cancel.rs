//! `cancel()`: check, send, wait, retry, as the core's [`CancelFlow`] decides, as one async
//! Rust function (wasm-bindgen-futures turns it into the promise `cancel()` returns), over the
//! guard's HTTP client ([`super::http`]).
//!
//! No borrow of the guard is held across an `await`, so the app may call the guard (even
//! `logout()`) while a cancel is in flight. The cancel's client is aborted by the app's signal,
//! by `logout()` and by a session that ends or changes (here or in another tab); every wait
//! is raced against that and the per-attempt timeout, so a cancel always settles.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::AbortSignal;

use super::boundary::{message_of, plain, signal_in, to_js};
use super::clock::DateClock;
use super::http::{Body, Client, Failure, Sender};
use super::listeners::Listeners;
use super::random::MathRandom;
use super::request::Request;
use super::state::Inner;
use crate::core::cancel::CancelCheck;
use crate::core::cancel_flow::{read_options, Answer, CancelFlow, CancelOutcome, Step};
use crate::core::clock::Clock;
use crate::core::endpoints::{read_status, reading, Limit, Read};
use crate::core::error::GuardError;
use crate::core::model::TaskStatus;
use crate::core::options::GuardOptions;
#[cfg(feature = "follow")]
use crate::core::response::Outcome;
use crate::core::response::{Contract, Reply};
use crate::core::tabs::{Change, Source};

/// `cancel()`'s options, read: their `signal`, or why they cannot be taken (options that are
/// not a plain object, an unknown key, a `signal` that is not an `AbortSignal`: its
/// controller, a look-alike, one of another window).
pub fn signal_of(options: &JsValue) -> Result<Option<AbortSignal>, String> {
    let options =
        plain(options, Some("signal"), GuardError::InvalidOptions).map_err(|e| message_of(&e))?;
    let value = options.value().map_err(|e| message_of(&e))?;
    read_options(&value).map_err(|e| e.message())?;
    signal_in(options.taken)
}

/// A `cancel()` refused before anything is sent: its options cannot be taken.
pub fn refused(job_id: String, message: String) -> Promise {
    Promise::resolve(&frozen(&CancelOutcome::invalid_input(job_id, message)))
}

/// An outcome as the app gets it: frozen, since two callers sharing one cancel share its
/// outcome, and neither can change what the other reads. (A `CancelOutcome` always converts;
/// the error would be resolved rather than thrown.)
fn frozen(outcome: &CancelOutcome) -> JsValue {
    let outcome = to_js(outcome).unwrap_or_else(|e| e);
    let outcome: &Object = outcome.unchecked_ref();
    Object::freeze(outcome).into()
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
    // The id its record is stored under (a task's uuid in any case): one cancel per record.
    let job_id = match inner.try_borrow() {
        Ok(guard) => {
            let job_id = guard.store.record_id(&job_id).into_owned();
            if let Some((_, running)) = guard.cancels.iter().find(|(id, _)| *id == job_id) {
                return running.clone();
            }
            job_id
        }
        Err(_) => job_id,
    };
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
        Ok(frozen(&outcome))
    });
    // The future first runs in a later microtask: the entry is there before it can end.
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.cancels.push((job_id, promise.clone()));
    }
    promise
}

/// One cancel, from the local check to its outcome. The record's kind says the contract: its
/// endpoint, body and answer table.
async fn run(
    inner: Rc<RefCell<Inner>>,
    job_id: String,
    app_signal: Option<AbortSignal>,
) -> CancelOutcome {
    let (mut flow, client, post, status, contract, probe) = {
        let Ok(mut guard) = inner.try_borrow_mut() else {
            // Only reachable if JS re-entered the guard from inside a guard call.
            return CancelFlow::new(&job_id, Default::default(), Default::default(), 0).aborted();
        };
        let check = guard.store.check_cancel(&job_id);
        let contract = contract_of(&check);
        let (retry, timeout_ms) = (guard.options.retry, guard.options.timeout_ms);
        let flow = CancelFlow::new(&job_id, retry, contract, timeout_ms);
        if let Some(refused) = flow.refusal(&check) {
            return refused;
        }
        let post = post_for(&mut guard, &job_id, contract);
        let options = &guard.options;
        let status = (contract == Contract::Task).then(|| {
            Request::new(
                options.status_url_for(&job_id),
                &options.headers,
                "GET",
                None,
            )
        });
        // A route the task framework always has: a 404 there too says it is switched off.
        #[cfg(feature = "follow")]
        let probe = Request::new(options.changes_url(None), &options.headers, "GET", None);
        #[cfg(not(feature = "follow"))]
        let probe = ();
        let sender = Sender {
            fetch: guard.fetch.clone(),
            timeout_ms: timeout_ms as f64,
        };
        let logout = guard.logout_signal();
        let client = Client::new(sender, app_signal, logout);
        (flow, client, post, status, contract, probe)
    };

    let outcome = loop {
        if client.aborted() {
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
        // `None`: this cancel was aborted before an answer came.
        let Some(answer) = send(&client, &post).await else {
            break flow.aborted();
        };
        match flow.after(&answer, DateClock.now_ms(), &mut MathRandom) {
            Step::Finish(outcome) => break outcome,
            Step::ReadStatus => break flow.after_status(task_status(&client, &status).await),
            // An abort during the request ends the cancel rather than a wait.
            Step::Wait(_) if client.aborted() => break flow.aborted(),
            Step::Wait(ms) => client.sleep(ms).await,
        }
    };
    #[cfg(feature = "follow")]
    let outcome = if outcome.http_status == Some(404) && contract == Contract::Task {
        framework_off(&inner, &client, &probe, outcome).await
    } else {
        outcome
    };
    #[cfg(not(feature = "follow"))]
    let _ = (contract, probe);
    client.release();
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.store.settle_cancel(
            &job_id,
            outcome.outcome,
            outcome.action.as_deref(),
            outcome.status,
        );
    }
    outcome
}

/// A task cancel answered 404 (read as `not_job_owner` or `not_found`): the task is
/// invisible to this session (not its, or gone), or
/// the task framework is switched off (every task route answers 404). One `GET` of a route it
/// always has tells them apart: a 404 there too means it is off, and the cancel is
/// `unsupported` (the record is kept), as on a Superset without the endpoint; it is remembered
/// (`follow()` stops polling tasks).
#[cfg(feature = "follow")]
async fn framework_off(
    inner: &Rc<RefCell<Inner>>,
    client: &Client,
    probe: &Request,
    outcome: CancelOutcome,
) -> CancelOutcome {
    let known = inner.try_borrow().is_ok_and(|g| g.stream_absent);
    let off = known || matches!(client.send(probe).await, Some(Ok(answer)) if answer.status == 404);
    if !off {
        return outcome;
    }
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.stream_absent = true;
    }
    CancelOutcome {
        outcome: Outcome::Unsupported,
        message: "The server's task framework is switched off (its task routes answer 404): \
                  nothing was cancelled, the task runs on if it runs at all"
            .to_owned(),
        retryable: false,
        ..outcome
    }
}

/// The contract a cancel speaks: the record's kind (a task's, or else an async_event job's).
pub(super) fn contract_of(check: &CancelCheck) -> Contract {
    match check {
        CancelCheck::Allowed(record) if record.is_task() => Contract::Task,
        _ => Contract::AsyncEvent,
    }
}

/// The cancel request for `job_id` of `contract`: its endpoint, the guard's headers, and on the
/// task contract the tab id this tab recorded the task with (so only this tab detaches).
pub(super) fn post_for(guard: &mut Inner, job_id: &str, contract: Contract) -> Request {
    let tab = match contract {
        Contract::Task => guard.store.cancel_tab(job_id),
        Contract::AsyncEvent => None,
    };
    let options = &guard.options;
    Request::new(
        options.cancel_url_for(job_id, contract),
        &options.headers,
        "POST",
        GuardOptions::cancel_body(contract, tab.as_deref()).as_deref(),
    )
}

/// Sends the cancel request once and reads what its answer means. `None` when the cancel was
/// aborted before its answer.
async fn send(client: &Client, post: &Request) -> Option<Answer> {
    let answer = match client.send(post).await? {
        Ok(answer) => answer,
        Err(Failure::Network) => return Some(Answer::NetworkError),
        Err(Failure::TimedOut) => return Some(Answer::TimedOut),
    };
    let status = answer.status;
    let content_type = answer.header("Content-Type");
    let reply = match reading(status, answer.redirected(), content_type.as_deref()) {
        Read::Decided(reply) => reply,
        Read::Text => match client.text(&answer, Limit::Body).await {
            Ok(Body::Text(text)) => Reply::from_text(&text),
            // A 2xx's body that broke: the status is the server's yes.
            Ok(Body::Broken) if (200..=299).contains(&status) => Reply::Unreadable,
            Ok(_) => Reply::NotJson,
            Err(()) => {
                return client.stopped().map(|_| Answer::TimedOut);
            }
        },
    };
    Some(Answer::Status {
        status,
        retry_after: answer.header("Retry-After"),
        reply,
    })
}

/// A task's status, read once (`GET /api/v1/task/<uuid>/status`, no retry) after its 422 or a
/// 2xx whose body broke: `None` for anything but a 2xx JSON answer naming a status the guard
/// knows.
async fn task_status(client: &Client, request: &Option<Request>) -> Option<TaskStatus> {
    let answer = client.send(request.as_ref()?).await?.ok()?;
    let content_type = answer.header("Content-Type");
    let json = matches!(
        reading(answer.status, answer.redirected(), content_type.as_deref()),
        Read::Text
    );
    if !(200..=299).contains(&answer.status) || !json {
        return None;
    }
    match client.text(&answer, Limit::Body).await.ok()? {
        Body::Text(text) => read_status(&text),
        _ => None,
    }
}
