//! A `query()`'s life, driven: the core's [`crate::core::query::QueryLife`] says what each
//! answer means; this sends, waits for a `202`'s jobs as `waitFor` does (a waiter of the guard's
//! own, [`super::waiting::register`]) and reads the result, until it settles.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::dom;
use super::listeners::Listeners;

use super::query_send::{client_id_for, send, Sent};
use super::query_send::{reason_of, set_phase};
use super::query_state::Prepared;
use super::query_stop::{
    aborted_by_this_query, cancel_late, sender_of, stop_on_server, stopped, watch_late,
};
use super::state::Inner;
use super::wait_state::Resolve;
use super::waiting;
use crate::core::chart::{classify_chart, no_answer, ChartAnswer, QuerySettings, StopResult};
use crate::core::client_ids::AfterAnswer;
use crate::core::endpoints::json_within_limits;
use crate::core::query::{Phase, QueryLife, QueryOutcome, QueryResult, Step};
use crate::core::response::Contract;
use crate::core::wait_input::WaitInput;
use crate::core::wait_outcome::WaitOutcome;

/// A query's life, driven: what to send, what it means, until it settles. The outcome and its
/// result (`done`'s, else `null`).
pub(super) async fn drive(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Weak<RefCell<Listeners>>,
    prepared: Prepared,
    settings: QuerySettings,
) -> (QueryOutcome, JsValue) {
    let Prepared {
        id,
        mut body,
        given,
    } = prepared;
    let guards = given.is_none();
    let client_id = match client_id_for(inner, id, &settings.url, given).await {
        // Stopped before its request left: nothing is sent.
        Ok(_) if reason_of(inner, id).is_some() => Err(()),
        other => other,
    };
    let Ok(client_id) = client_id else {
        let mut life = QueryLife::new(None);
        return (
            stopped(inner, listeners, id, &mut life).await,
            JsValue::NULL,
        );
    };
    // The body as sent, and (where the guard added the client_id) the same without it.
    let text =
        |body: &serde_json::Map<String, Value>| serde_json::to_string(body).unwrap_or_default();
    let mut without = None;
    if let Some(client_id) = &client_id {
        if guards {
            without = Some(text(&body));
        }
        body.insert("client_id".to_owned(), Value::String(client_id.clone()));
    }
    let mut body = text(&body);
    if let Ok(mut g) = inner.try_borrow_mut() {
        if let Some(q) = g.queries.get(id) {
            q.client_id.clone_from(&client_id);
            q.sent = true;
        }
    }
    let mut life = QueryLife::new(client_id);
    let mut result = JsValue::NULL;
    let mut next = Next::Send(settings.url.clone());
    let stale = settings.wait.stale_ms;
    // Whether the request out is the one sent again without its `client_id`.
    let mut resent = false;
    loop {
        set_phase(inner, id, life.phase());
        let step = match next {
            Next::Send(url) | Next::Fetch(url) => {
                let is_fetch = life.phase() == Phase::Fetching;
                let (method, payload) = if is_fetch {
                    ("GET", None)
                } else {
                    ("POST", Some(body.as_str()))
                };
                let sent = send(inner, id, method, &url, payload, stale).await;
                let probing = without.is_some();
                let status = match &sent {
                    Sent::Answer { status, .. } => Some(*status),
                    _ => None,
                };
                if probing || resent {
                    let url = &settings.url;
                    let mut again = false;
                    if let Ok(mut g) = inner.try_borrow_mut() {
                        let ids = &mut g.queries.client_ids;
                        match (status, resent) {
                            (None, _) => {}
                            (Some(status), true) => ids.resent(url, status),
                            (Some(status), false) => {
                                again = ids.answered(url, status) == AfterAnswer::SendWithout;
                            }
                        }
                    }
                    resent = false;
                    // Not again once the session that sent it has ended (a stop from another
                    // tab's logout answers 400 too).
                    let same_session = inner.try_borrow_mut().is_ok_and(|mut g| {
                        let now = g.store.session();
                        let owner = g.queries.get(id).map(|q| q.owner.clone());
                        matches!((now, owner), (Some(n), Some(o)) if n.same_identity(&o))
                    });
                    match without.take() {
                        // Refused, perhaps for the client_id alone: the same body without it.
                        Some(plain) if again && same_session && reason_of(inner, id).is_none() => {
                            body = plain;
                            life.client_id = None;
                            if let Ok(mut g) = inner.try_borrow_mut() {
                                if let Some(q) = g.queries.get(id) {
                                    q.client_id = None;
                                }
                            }
                            resent = true;
                            next = Next::Send(url.clone());
                            continue;
                        }
                        _ => {}
                    }
                }
                match sent {
                    Sent::Aborted(pending) => {
                        // Its chart-data request may still answer (a fetch that ignores its
                        // signal): a 202 then is cancelled, never recorded.
                        if let Some((pending, attempt)) = pending {
                            match sender_of(inner, id).filter(|_| !is_fetch) {
                                Some(sender) => {
                                    let done = late_done_of(inner, id);
                                    watch_late(inner, sender, pending, attempt, done);
                                }
                                None => attempt.iter().for_each(dom::abort),
                            }
                        }
                        return (
                            stopped(inner, listeners, id, &mut life).await,
                            JsValue::NULL,
                        );
                    }
                    Sent::TimedOut if !is_fetch => {
                        let stop = stop_on_server(inner, id).await;
                        let mut o = QueryOutcome::new(
                            QueryResult::Stale,
                            life.client_id.as_deref(),
                            format!("No answer for {stale} ms: stopped on the server"),
                        );
                        o.stop = Some(stop);
                        return (o, JsValue::NULL);
                    }
                    Sent::TimedOut | Sent::NoAnswer => life.answered(no_answer(), None),
                    Sent::Answer { status, json, text } => {
                        if reason_of(inner, id).is_some() {
                            // Stopped meanwhile: never handed over. What a late 202 started is
                            // cancelled under the session that sent it, where that can be.
                            let parsed = (status == 202 && json)
                                .then(|| text.as_deref().and_then(json_within_limits))
                                .flatten();
                            let late = match classify_chart(status, json, parsed.as_ref()) {
                                ChartAnswer::Accepted(input) if parsed.is_some() => {
                                    life.set_job_ids(input.started().0);
                                    sender_of(inner, id)
                                        .map(|s| cancel_late(inner, &s, &input).0)
                                        .unwrap_or_default()
                                }
                                _ => Vec::new(),
                            };
                            let mut outcome = stopped(inner, listeners, id, &mut life).await;
                            if !late.is_empty() {
                                outcome.cancelling = late;
                            }
                            return (outcome, JsValue::NULL);
                        }
                        // A first request answered at once: this URL runs queries synchronously
                        // (their stop's 400 is not waited for: query_state::Queries::ends_at_stop).
                        if status == 200 && life.phase() == Phase::Sending {
                            if let Ok(mut g) = inner.try_borrow_mut() {
                                g.queries.synchronous.insert(settings.url.clone(), ());
                            }
                        }
                        let answer = if status == 200 && json {
                            match text.as_deref().map(js_sys::JSON::parse) {
                                Some(Ok(parsed)) => {
                                    result = parsed;
                                    ChartAnswer::Result
                                }
                                _ => classify_chart(status, false, None),
                            }
                        } else {
                            let parsed = text.as_deref().and_then(json_within_limits);
                            if is_fetch {
                                crate::core::chart::classify_result(status, json, parsed.as_ref())
                            } else {
                                classify_chart(status, json, parsed.as_ref())
                            }
                        };
                        life.answered(answer, Some(status))
                    }
                }
            }
            Next::Wait(input) => {
                let waited = wait(inner, listeners, id, input, &settings, &mut life).await;
                let result_url = life
                    .job_ids()
                    .first()
                    .and_then(|job| inner.try_borrow_mut().ok()?.store.job(job))
                    .and_then(|r| r.result_url().map(str::to_owned));
                let step = life.waited(&waited, result_url.as_deref(), &settings.url);
                aborted_by_this_query(inner, listeners, id, step, &waited).await
            }
        };
        match step {
            Step::Settle { mut outcome, stop } => {
                if stop {
                    let jobs = life.job_ids().to_vec();
                    let cancelling = match listeners.upgrade() {
                        Some(l) => waiting::cancel_unawaited(inner, &l, jobs),
                        None => Vec::new(),
                    };
                    outcome.stop = Some(if cancelling.is_empty() {
                        StopResult::NotSent
                    } else {
                        StopResult::Cancelling
                    });
                    outcome.cancelling = cancelling;
                }
                return (outcome, result);
            }
            Step::Wait(input) => next = Next::Wait(input),
            Step::Fetch(url) => next = Next::Fetch(url),
            Step::Refetch => next = Next::Send(settings.url.clone()),
        }
    }
}

/// What a logout's `stopped` waits on for query `id`'s late answer, taken (the watch calls it).
fn late_done_of(inner: &Rc<RefCell<Inner>>, id: u32) -> Option<js_sys::Function> {
    inner
        .try_borrow_mut()
        .ok()?
        .queries
        .get(id)?
        .late_done
        .take()
}

/// What the driver does next.
enum Next {
    Send(String),
    Fetch(String),
    Wait(WaitInput),
}

/// Waits for what a `202` named, as `waitFor` does, with the query's controller as the
/// waiter's signal: its outcome.
async fn wait(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Weak<RefCell<Listeners>>,
    id: u32,
    input: WaitInput,
    settings: &QuerySettings,
    life: &mut QueryLife,
) -> WaitOutcome {
    let Some(listeners) = listeners.upgrade() else {
        return WaitOutcome::aborted(&[], Vec::new());
    };
    let (tab_id, task) = match &input {
        WaitInput::Tasks(s) => (s.tab_id.as_ref().map(|t| t.to_string()), true),
        _ => (None, false),
    };
    let signal = inner.try_borrow_mut().ok().and_then(|mut g| {
        g.queries
            .get(id)
            .and_then(|q| dom::signal_of(&q.controller))
    });
    let heard: Rc<RefCell<Option<WaitOutcome>>> = Rc::default();
    let (woken, wake) = dom::deferred();
    let then = {
        let heard = Rc::clone(&heard);
        Resolve::Rust(Box::new(move |outcome| {
            if let Ok(mut h) = heard.try_borrow_mut() {
                *h = Some(outcome);
            }
            let _ = wake.call0(&JsValue::UNDEFINED);
        }))
    };
    let added = |g: &mut Inner, waiter: u32, jobs: &[String]| {
        if let Some(q) = g.queries.get(id) {
            q.waiter = Some(waiter);
            q.jobs = jobs.to_vec();
            if task {
                q.contract = Contract::Task;
                q.tab_id = tab_id.or(q.tab_id.take());
            } else {
                q.contract = Contract::AsyncEvent;
            }
        }
    };
    match waiting::register(inner, &listeners, input, settings.wait, signal, then, added) {
        Err(refused) => return refused,
        Ok((_, jobs)) => life.set_job_ids(jobs),
    }
    let _ = JsFuture::from(woken).await;
    if let Ok(mut g) = inner.try_borrow_mut() {
        if let Some(q) = g.queries.get(id) {
            q.waiter = None;
        }
    }
    let outcome = heard.try_borrow_mut().ok().and_then(|mut h| h.take());
    outcome.unwrap_or_else(|| WaitOutcome::aborted(&[], Vec::new()))
}
