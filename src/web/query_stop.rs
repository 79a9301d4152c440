//! Stopping one `query()` on the server: by its signal (its synchronous request by
//! `POST /api/v1/chart/data/stop {client_id}`, its jobs through `cancel()`'s path), by another
//! tab's logout or the page's end (with `keepalive`), and a late `202`'s jobs cancelled. Every
//! query of a guard at once (a logout here, a user switch, the page's end) is
//! [`super::query_stop_all`]'s, which builds on [`stop_request`].

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::Function;
use wasm_bindgen::JsValue;
use web_sys::AbortController;

use super::dom;
use super::http::{Body, Client, Sender};
use super::listeners::Listeners;
use super::query_state::RunningQuery;
use super::request::{self, Request};
use super::state::Inner;
use crate::core::chart::{classify_chart, classify_stop, stop_body, ChartAnswer, StopResult};
use crate::core::endpoints::{json_within_limits, Limit};
use crate::core::options::GuardOptions;
use crate::core::query::{Phase, QueryLife, QueryOutcome, QueryReason, QueryResult, Step};
use crate::core::response::Contract;
use crate::core::session::Session;
use crate::core::wait_input::WaitInput;
use crate::core::wait_outcome::WaitOutcome;

const LATE_ANSWER_MS: u32 = 1_500;

/// A waited step, in the words of what stopped it: the reason the query was stopped for (its
/// signal, the page's end, a logout) rather than the waiter's; after another tab's logout, the
/// jobs are cancelled from what the query knows of them (their records are gone).
pub(super) async fn aborted_by_this_query(
    inner: &Rc<RefCell<Inner>>,
    _listeners: &Weak<RefCell<Listeners>>,
    id: u32,
    step: Step,
    waited: &WaitOutcome,
) -> Step {
    let Step::Settle { mut outcome, stop } = step else {
        return step;
    };
    if outcome.outcome != QueryResult::Aborted {
        return Step::Settle { outcome, stop };
    }
    let q = inner.try_borrow_mut().ok().and_then(|mut g| {
        g.queries
            .get(id)
            .map(|q| (q.reason, q.stop, q.cancelling.clone()))
    });
    let (reason, sent, cancelling) = q.unwrap_or((None, None, Vec::new()));
    if let Some(reason) = reason {
        outcome.reason = Some(reason);
    }
    outcome.stop = sent.or(Some(if waited.cancelling.is_empty() {
        StopResult::NotSent
    } else {
        StopResult::Cancelling
    }));
    if !cancelling.is_empty() {
        outcome.cancelling = cancelling;
    }
    // Another tab signed the session out: this tab's jobs are cancelled with `keepalive`, from
    // what the query knows (no record is left to read).
    if outcome.reason == Some(QueryReason::Logout) && sent.is_none() {
        let jobs = match stopped_elsewhere(inner, id) {
            // The tab that signed out cancelled them, before the session ended.
            Some(true) => inner
                .try_borrow_mut()
                .ok()
                .and_then(|mut g| Some(g.queries.get(id)?.jobs.clone()))
                .unwrap_or_default(),
            _ => keepalive_cancels_by_snapshot(inner, id),
        };
        outcome.stop = Some(if jobs.is_empty() {
            StopResult::NotSent
        } else {
            StopResult::Sent
        });
        outcome.cancelling = jobs;
    }
    Step::Settle { outcome, stop }
}

/// Whether the tab that signed out stopped query `id` already, before the session ended: it
/// took this guard's entry (read and removed it), which listed the query's request in flight
/// or its jobs. `None` when no entry was taken.
fn stopped_elsewhere(inner: &Rc<RefCell<Inner>>, id: u32) -> Option<bool> {
    let g = inner.try_borrow().ok()?;
    g.waiting.entry.taken.as_ref()?;
    let q = g.queries.running.iter().find(|q| q.id == id)?;
    Some(taken_by_logout(&g, q))
}

/// Whether another tab's logout took `q` with this guard's entry (its request in flight, or
/// all its jobs, were listed there): that tab stopped it.
pub(super) fn taken_by_logout(g: &Inner, q: &RunningQuery) -> bool {
    let Some(listed) = g.waiting.entry.taken.as_ref() else {
        return false;
    };
    let request = q
        .client_id
        .as_ref()
        .is_some_and(|c| listed.stops.iter().any(|(_, listed)| listed == c));
    let jobs = !q.jobs.is_empty() && q.jobs.iter().all(|j| listed.queries.contains(j));
    request || jobs
}

/// Sends, with `keepalive`, the cancel of each job of query `id` that no other waiter of the
/// page awaits, built from what the query kept of its `202` (after another tab's logout, when
/// no record is left); the jobs it sent for.
fn keepalive_cancels_by_snapshot(inner: &Rc<RefCell<Inner>>, id: u32) -> Vec<String> {
    let Ok(mut guard) = inner.try_borrow_mut() else {
        return Vec::new();
    };
    let Some(q) = guard.queries.get(id) else {
        return Vec::new();
    };
    let (jobs, tab_id, contract) = (q.jobs.clone(), q.tab_id.clone(), q.contract);
    let fetch = guard.fetch.clone();
    let requests: Vec<_> = jobs
        .iter()
        .filter(|job| !guard.waiting.rules.awaits(job))
        .map(|job| {
            let request = cancel_request(&guard.options, job, contract, tab_id.as_deref());
            (job.clone(), request)
        })
        .collect();
    drop(guard);
    let sent: Vec<String> = requests.iter().map(|(job, _)| job.clone()).collect();
    let _ = request::send_keepalive(
        requests
            .into_iter()
            .map(|(_, r)| (r, fetch.clone()))
            .collect(),
    );
    sent
}

/// Who sent query `id`, and the tab id it went with: what a late answer is judged by once the
/// query has ended.
pub(super) fn sender_of(inner: &Rc<RefCell<Inner>>, id: u32) -> Option<(Session, Option<String>)> {
    let mut g = inner.try_borrow_mut().ok()?;
    let q = g.queries.get(id)?;
    Some((q.owner.clone(), q.tab_id.clone()))
}

/// A `202` that came after its query was stopped: what it started is cancelled with
/// `keepalive`, as the session that sent it (`sender`), where this guard is still that
/// identity's or signed out (the server then answers as whoever its cookie is, and only ever
/// lets a job's owner cancel it); never after another identity signed in here. Nothing is
/// recorded. The jobs sent for, and the promise of their answers.
pub(super) fn cancel_late(
    inner: &Rc<RefCell<Inner>>,
    sender: &(Session, Option<String>),
    input: &WaitInput,
) -> (Vec<String>, js_sys::Promise) {
    let nothing = || (Vec::new(), js_sys::Promise::resolve(&JsValue::UNDEFINED));
    let (jobs, contract, tab_id) = input.started();
    let Ok(mut guard) = inner.try_borrow_mut() else {
        return nothing();
    };
    let (owner, sent_tab) = sender;
    if !guard.store.session().is_none_or(|s| s.same_identity(owner)) {
        return nothing();
    }
    let tab_id = tab_id.or_else(|| sent_tab.clone());
    let requests: Vec<_> = jobs
        .iter()
        .filter(|job| !guard.waiting.rules.awaits(job))
        .map(|job| {
            let request = cancel_request(&guard.options, job, contract, tab_id.as_deref());
            (job.clone(), (request, guard.fetch.clone()))
        })
        .collect();
    drop(guard);
    let (sent, requests): (Vec<String>, Vec<_>) = requests.into_iter().unzip();
    let answered = request::send_keepalive(requests);
    (sent, answered)
}

/// Watches a chart-data request its query stopped waiting for, left in flight (`attempt` ends
/// it): if it answers a `202` within [`LATE_ANSWER_MS`], what that started is cancelled as
/// [`cancel_late`] says (the server had accepted the query before the stop: its job or task
/// would run on); then the request is ended. The query has settled already; this only cleans up
/// on the server.
pub(super) fn watch_late(
    inner: &Rc<RefCell<Inner>>,
    sender: (Session, Option<String>),
    pending: JsValue,
    attempt: Option<AbortController>,
    done: Option<Function>,
) {
    let inner = Rc::downgrade(inner);
    wasm_bindgen_futures::spawn_local(async move {
        let sender_of_client = Sender {
            fetch: None,
            timeout_ms: f64::from(LATE_ANSWER_MS),
        };
        let client = Client::new(sender_of_client, None, None);
        let input = match client.answer_to(&pending).await {
            Some(answer) if answer.status == 202 => match client.text(&answer, Limit::Body).await {
                Ok(Body::Text(text)) => match json_within_limits(&text) {
                    Some(parsed) => match classify_chart(202, true, Some(&parsed)) {
                        ChartAnswer::Accepted(input) => Some(input),
                        _ => None,
                    },
                    None => None,
                },
                _ => None,
            },
            _ => None,
        };
        client.release();
        // A synchronous query still running (a server without the stop endpoint): its request
        // is given up now, its connection freed.
        attempt.iter().for_each(dom::abort);
        if let (Some(input), Some(inner)) = (input, inner.upgrade()) {
            let (_, answered) = cancel_late(&inner, &sender, &input);
            let _ = wasm_bindgen_futures::JsFuture::from(answered).await;
        }
        if let Some(done) = done {
            let _ = done.call0(&JsValue::UNDEFINED);
        }
    });
}

/// The cancel request of `job` under `contract`, as `cancel()` sends it, without a record.
fn cancel_request(
    options: &GuardOptions,
    job: &str,
    contract: Contract,
    tab_id: Option<&str>,
) -> Request {
    let body = GuardOptions::cancel_body(contract, tab_id);
    Request::new(
        options.cancel_url_for(job, contract),
        &options.headers,
        "POST",
        body.as_deref(),
    )
}

/// The query was stopped while its request or its result's read was in flight: the server is
/// told as the reason and where it was say; its outcome.
pub(super) async fn stopped(
    inner: &Rc<RefCell<Inner>>,
    _listeners: &Weak<RefCell<Listeners>>,
    id: u32,
    life: &mut QueryLife,
) -> QueryOutcome {
    let (reason, sent) = {
        let Ok(mut g) = inner.try_borrow_mut() else {
            return life.aborted(QueryReason::Signal, None, Vec::new());
        };
        let known = g
            .queries
            .get(id)
            .map(|q| (q.reason, q.stop, q.owner.clone()));
        let (reason, sent, owner) = match known {
            Some(known) => known,
            None => return life.aborted(QueryReason::Signal, None, Vec::new()),
        };
        // Stopped by a session that ended or changed, here or in another tab.
        let reason = reason.unwrap_or_else(|| match g.store.session() {
            None => QueryReason::Logout,
            Some(s) if !s.same_identity(&owner) => QueryReason::UserChanged,
            Some(_) => QueryReason::Signal,
        });
        if let Some(q) = g.queries.get(id) {
            q.reason = Some(reason);
        }
        (reason, sent)
    };
    let plan_request = matches!(life.phase(), Phase::Sending | Phase::Refetching);
    let stop = match (sent, reason) {
        (Some(sent), _) => Some(sent),
        (None, _) if !plan_request => None,
        (None, QueryReason::UserChanged) => Some(StopResult::NotSent),
        (None, QueryReason::Logout) if stopped_elsewhere(inner, id) == Some(true) => {
            // The tab that signed out stopped it, before the session ended: its answer, that
            // stop's 400, is not waited for.
            if let Ok(mut g) = inner.try_borrow_mut() {
                let ends = g.queries.ends_at_stop(id);
                if let Some(q) = g.queries.get(id).filter(|_| ends) {
                    dom::abort(&q.request_end);
                }
            }
            Some(StopResult::Sent)
        }
        (None, QueryReason::Logout | QueryReason::PageEnd) => Some(keepalive_stop(inner, id)),
        (None, _) => Some(stop_on_server(inner, id).await),
    };
    life.aborted(reason, stop, Vec::new())
}

/// The stop request of query `id`'s synchronous request, if the server is not known to lack
/// the endpoint: the request, or what its absence means.
pub(super) fn stop_request(
    guard: &mut Inner,
    id: u32,
) -> Result<(Request, Option<Function>), StopResult> {
    let no_stop = &guard.queries.no_stop;
    let q = guard
        .queries
        .running
        .iter()
        .find(|q| q.id == id)
        .ok_or(StopResult::NotSent)?;
    if !q.sent {
        return Err(StopResult::NotSent);
    }
    // Sent without a client_id (the server refuses the field), or to a server without the
    // endpoint: nothing can stop it there.
    let Some(client_id) = q.client_id.as_deref() else {
        return Err(StopResult::Unsupported);
    };
    if no_stop.contains(&q.stop_url) {
        return Err(StopResult::Unsupported);
    }
    let body = stop_body(client_id);
    let request = Request::new(
        q.stop_url.clone(),
        &guard.options.headers,
        "POST",
        Some(&body),
    );
    Ok((request, guard.fetch.clone()))
}

/// Stops query `id`'s synchronous request on the server (`POST …/chart/data/stop`), and reads
/// the answer; a `404` is remembered (the server has no such endpoint).
pub(super) async fn stop_on_server(inner: &Rc<RefCell<Inner>>, id: u32) -> StopResult {
    let (request, url, sender, pending) = {
        let Ok(mut g) = inner.try_borrow_mut() else {
            return StopResult::Failed;
        };
        // Sent already, by its signal's listener: only its answer is read.
        let pending = g.queries.get(id).and_then(|q| q.stop_pending.take());
        let request = match stop_request(&mut g, id) {
            Ok((request, _)) => request,
            Err(result) => return result,
        };
        let url = request.url.clone();
        let sender = Sender {
            fetch: g.fetch.clone(),
            timeout_ms: g.options.timeout_ms as f64,
        };
        (request, url, sender, pending)
    };
    let client = Client::new(sender, None, None);
    let answer = match &pending {
        Some(pending) => client.answer_to(pending).await,
        None => client.send(&request).await.and_then(Result::ok),
    };
    let result = answer.map_or(StopResult::Failed, |a| classify_stop(a.status));
    client.release();
    if result == StopResult::Unsupported {
        if let Ok(mut g) = inner.try_borrow_mut() {
            g.queries.no_stop.insert(url, ());
        }
    }
    result
}

/// Sends the stop of query `id` with `keepalive` (a logout in another tab, the page's end):
/// [`StopResult::Sent`], or why not.
fn keepalive_stop(inner: &Rc<RefCell<Inner>>, id: u32) -> StopResult {
    let request = match inner.try_borrow_mut() {
        Ok(mut g) => stop_request(&mut g, id),
        Err(_) => Err(StopResult::Failed),
    };
    match request {
        Ok(request) => {
            let _ = request::send_keepalive(vec![request]);
            StopResult::Sent
        }
        Err(result) => result,
    }
}
