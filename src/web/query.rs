//! `query()`: a chart's query from its request to its result, on every Superset, stopped on the
//! server when nobody needs it. The rules are the core's ([`crate::core::query`]: what each
//! answer means and how to stop a query where it is; [`crate::core::chart`]: the endpoints);
//! this room sends what they name through the guard's HTTP client, waits for a `202`'s jobs as
//! `waitFor` does (a waiter of the guard's own, [`waiting::register`]), and reads the result.
//!
//! A query's promise never rejects. It is stopped by its signal (its request aborted and
//! `POST /api/v1/chart/data/stop {client_id}` sent; its jobs cancelled through `cancel()`'s
//! path), by `logout()` in any tab (with `keepalive`; in this tab before the session ends:
//! [`stop_all`]), by the page's end ([`super::closing`]) and by a user switch (nothing is sent
//! for it as the new user). An answer that arrives after any of these is never handed over.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Function, Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{AbortController, AbortSignal};

use super::boundary::{plain, to_js};
use super::closing;
use super::dom;
use super::http::{Body, Client, Failure, Request, Sender};
use super::listeners::Listeners;
use super::query_state::RunningQuery;
use super::random::MathRandom;
use super::state::Inner;
use super::wait_input::hearing_of;
use super::wait_state::Resolve;
use super::waiting;
use crate::core::chart::{
    classify_chart, classify_stop, is_client_id, make_client_id, no_answer, stop_body, ChartAnswer,
    QuerySettings, StopResult, DEFAULT_STOP_URL,
};
use crate::core::client_ids::{AfterAnswer, Decision};
use crate::core::endpoints::{is_json_type, json_within_limits, Limit};
use crate::core::error::GuardError;
use crate::core::options::GuardOptions;
use crate::core::query::{Phase, QueryLife, QueryOutcome, QueryReason, QueryResult, Step};
use crate::core::random::Random;
use crate::core::response::Contract;
use crate::core::wait_input::WaitInput;
use crate::core::waiters::WaitOutcome;

/// A settled promise of `outcome`.
fn settled(outcome: &QueryOutcome, result: &JsValue) -> Promise {
    Promise::resolve(&frozen(outcome, result))
}

/// The outcome as a frozen JS object, `result` in its place.
fn frozen(outcome: &QueryOutcome, result: &JsValue) -> JsValue {
    let value = to_js(outcome).unwrap_or_else(|e| e);
    if outcome.outcome == QueryResult::Done {
        let _ = Reflect::set(&value, &JsValue::from_str("result"), result);
    }
    let object: &Object = value.unchecked_ref();
    Object::freeze(object).into()
}

fn refused(reason: QueryReason, message: String) -> Promise {
    settled(
        &QueryOutcome::refused(None, reason, message),
        &JsValue::NULL,
    )
}

/// An error's `message`.
fn message_of(error: &JsValue) -> String {
    Reflect::get(error, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_default()
}

/// Where a synchronous query sent to `url` is stopped: beside it (`…/chart/data/stop`), or
/// Superset's own.
fn stop_url_for(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    if path.ends_with("/chart/data") {
        [path, "/stop"].concat()
    } else {
        DEFAULT_STOP_URL.to_owned()
    }
}

/// `query(body, options)`: sends the chart-data request now; the promise settles with its
/// outcome.
pub fn start(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    body: &JsValue,
    options: &JsValue,
) -> Promise {
    let guards = inner.try_borrow().is_ok_and(|g| g.options.cancel_on_close);
    let read = plain(options, Some("signal"), GuardError::InvalidOptions).and_then(|o| {
        let settings = o.read(|d| QuerySettings::read(d, guards))?;
        Ok((o.taken, settings))
    });
    let (signal, settings) = match read {
        Ok(read) => read,
        Err(e) => return refused(QueryReason::InvalidInput, message_of(&e)),
    };
    let signal = match signal {
        s if s.is_undefined() || s.is_null() => None,
        s => match s.dyn_into::<AbortSignal>() {
            Ok(s) => Some(s),
            Err(_) => {
                let message = "Invalid options: `signal` must be an AbortSignal".to_owned();
                return refused(QueryReason::InvalidInput, message);
            }
        },
    };
    let body = match plain(body, None, GuardError::InvalidJob).and_then(|b| b.value()) {
        Ok(Value::Object(body)) => body,
        Ok(_) => {
            let message = "query needs the chart-data request's body: an object".to_owned();
            return refused(QueryReason::InvalidInput, message);
        }
        Err(e) => return refused(QueryReason::InvalidInput, message_of(&e)),
    };
    let prepared = match inner.try_borrow_mut() {
        Ok(mut guard) => prepare(&mut guard, body, &settings),
        Err(_) => Err(QueryOutcome::refused(
            None,
            QueryReason::InvalidInput,
            "query was called from inside one of the guard's own calls",
        )),
    };
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(outcome) => return settled(&outcome, &JsValue::NULL),
    };
    let id = prepared.id;
    if signal.as_ref().is_some_and(dom::is_aborted) {
        end(inner, id);
        let outcome = QueryLife::new(None).aborted(
            QueryReason::Signal,
            Some(StopResult::NotSent),
            Vec::new(),
        );
        return settled(&outcome, &JsValue::NULL);
    }
    // The page's end stops it too.
    closing::watch_page();
    let on_abort = signal.map(|signal| {
        let me = Rc::downgrade(inner);
        let listener = Closure::<dyn FnMut()>::new(move || {
            if let Some(inner) = me.upgrade() {
                abort(&inner, id, QueryReason::Signal);
            }
        });
        let _ = signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        (signal, listener)
    });
    let inner = Rc::clone(inner);
    let listeners = Rc::downgrade(listeners);
    future_to_promise(async move {
        let (outcome, result) = drive(&inner, &listeners, prepared, settings).await;
        if let Some((signal, listener)) = on_abort {
            let _ = signal
                .remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
        end(&inner, id);
        Ok(frozen(&outcome, &result))
    })
}

/// A query as registered: its id among the guard's, its body, and the app's own `client_id`
/// (where it keeps to the rule).
struct Prepared {
    id: u32,
    body: serde_json::Map<String, Value>,
    given: Option<String>,
}

/// Registers a query: its body (on the task contract with the tab id), and its id among the
/// guard's queries. Refused without a session, and after a 401 until the next login.
fn prepare(
    guard: &mut Inner,
    mut body: serde_json::Map<String, Value>,
    settings: &QuerySettings,
) -> Result<Prepared, QueryOutcome> {
    let heard = hearing_of(guard);
    let hearing = heard.hearing();
    let unauthenticated = hearing.unauthenticated;
    let Some(owner) = heard.session.clone() else {
        let message = "No session: nobody is signed in, so nothing was sent";
        return Err(QueryOutcome::refused(None, QueryReason::NoSession, message));
    };
    if unauthenticated {
        let message =
            "The server answered 401 to this session: nothing is sent until the next login";
        return Err(QueryOutcome::new(
            QueryResult::Unauthenticated,
            None,
            message,
        ));
    }
    let contract = guard.options.contract;
    let mut tab_id = None;
    if contract == Contract::Task {
        let tab = guard
            .options
            .tab_id
            .as_deref()
            .map(str::to_owned)
            .unwrap_or_else(closing::this_page);
        body.insert("tab_id".to_owned(), Value::String(tab.clone()));
        tab_id = Some(tab);
    }
    let given = match body.remove("client_id") {
        Some(Value::String(given)) if is_client_id(&given) => Some(given),
        _ => None,
    };
    let controller = AbortController::new().map_err(|_| {
        QueryOutcome::refused(None, QueryReason::InvalidInput, "no AbortController here")
    })?;
    let queries = &mut guard.queries;
    queries.next = queries.next.wrapping_add(1);
    let id = queries.next;
    queries.running.push(RunningQuery {
        id,
        controller,
        phase: Phase::Sending,
        client_id: None,
        sent: false,
        stop_url: stop_url_for(&settings.url),
        owner,
        jobs: Vec::new(),
        tab_id,
        contract,
        waiter: None,
        reason: None,
        stop: None,
        cancelling: Vec::new(),
    });
    Ok(Prepared { id, body, given })
}

/// Whether query `id` to `url` carries a `client_id`, and which: the app's own, else the
/// guard's where the server takes one ([`crate::core::client_ids`]: asking its stop endpoint first where
/// that is not known, or waiting for the answer to another query's question). `Err` when the
/// query was stopped meanwhile.
async fn client_id_for(
    inner: &Rc<RefCell<Inner>>,
    id: u32,
    url: &str,
    given: Option<String>,
) -> Result<Option<String>, ()> {
    if given.is_some() {
        return Ok(given);
    }
    let timeout_ms = inner.try_borrow().map_or(0, |g| g.options.timeout_ms);
    loop {
        let decision = match inner.try_borrow_mut() {
            Ok(mut g) => g.queries.client_ids.decide(url),
            Err(_) => return Err(()),
        };
        let mut random = MathRandom;
        let mut fresh = || make_client_id(|| random.next_f64());
        match decision {
            Decision::Carry => return Ok(Some(fresh())),
            Decision::Without => return Ok(None),
            Decision::Probe => {
                let client = client_of(inner, id, timeout_ms).ok_or(())?;
                let (done, end) = deferred();
                let request = match inner.try_borrow_mut() {
                    Ok(mut g) => {
                        g.queries.probes.insert(url.to_owned(), done);
                        let body = stop_body(&fresh());
                        Request::new(stop_url_for(url), &g.options.headers, "POST", Some(&body))
                    }
                    Err(_) => return Err(()),
                };
                let status = match client.send(&request).await {
                    Some(Ok(answer)) => Some(answer.status),
                    _ => None,
                };
                client.release();
                if let Ok(mut g) = inner.try_borrow_mut() {
                    g.queries.client_ids.probed(url, status);
                    g.queries.probes.remove(url);
                    if status.map(classify_stop) == Some(StopResult::Unsupported) {
                        g.queries.no_stop.insert(stop_url_for(url));
                    }
                }
                let _ = end.call0(&JsValue::UNDEFINED);
            }
            Decision::AwaitProbe => {
                let pending = inner
                    .try_borrow()
                    .ok()
                    .and_then(|g| g.queries.probes.get(url).cloned());
                let Some(pending) = pending else {
                    return Ok(None);
                };
                let client = client_of(inner, id, timeout_ms).ok_or(())?;
                let settled = client.settles(&pending).await;
                client.release();
                if reason_of(inner, id).is_some() {
                    return Err(());
                }
                if !settled {
                    // Out of its own time: sent without.
                    return Ok(None);
                }
            }
        }
        if reason_of(inner, id).is_some() {
            return Err(());
        }
    }
}

/// Takes query `id` off the guard's list.
fn end(inner: &Rc<RefCell<Inner>>, id: u32) {
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.queries.running.retain(|q| q.id != id);
    }
}

/// Stops query `id` (`reason`): its controller's abort ends what it waits for, and its driver
/// tells the server as [`QueryLife::stop_plan`] says.
pub(super) fn abort(inner: &Rc<RefCell<Inner>>, id: u32, reason: QueryReason) {
    let controller = inner.try_borrow_mut().ok().and_then(|mut g| {
        let q = g.queries.get(id)?;
        q.reason.get_or_insert(reason);
        Some(q.controller.clone())
    });
    if let Some(controller) = controller {
        dom::abort(&controller);
    }
}

/// What a request got.
enum Sent {
    Answer {
        status: u16,
        json: bool,
        text: Option<String>,
    },
    NoAnswer,
    TimedOut,
    Aborted,
}

/// The query's client: the guard's `fetch`, `timeout_ms`, and its controller's signal and the
/// guard's logout signal as what aborts it.
fn client_of(inner: &Rc<RefCell<Inner>>, id: u32, timeout_ms: u64) -> Option<Client> {
    let mut guard = inner.try_borrow_mut().ok()?;
    let signal = guard
        .queries
        .get(id)
        .and_then(|q| dom::signal_of(&q.controller));
    let logout = guard.logout_signal();
    let sender = Sender {
        fetch: guard.fetch.clone(),
        timeout_ms: timeout_ms as f64,
    };
    Some(Client::new(sender, signal, logout))
}

/// Sends `method` `url` (with `body`) as query `id`: its answer, the body read when it is JSON
/// (a `200`'s within the result's limit, any other within every body's).
async fn send(
    inner: &Rc<RefCell<Inner>>,
    id: u32,
    method: &str,
    url: &str,
    body: Option<&str>,
    timeout_ms: u64,
) -> Sent {
    let Some(client) = client_of(inner, id, timeout_ms) else {
        return Sent::Aborted;
    };
    let request = match inner.try_borrow() {
        Ok(guard) => Request::new(url.to_owned(), &guard.options.headers, method, body),
        Err(_) => return Sent::Aborted,
    };
    let sent = match client.send(&request).await {
        None => Sent::Aborted,
        Some(Err(Failure::TimedOut)) => Sent::TimedOut,
        Some(Err(Failure::Network)) => Sent::NoAnswer,
        Some(Ok(answer)) => {
            let json = !answer.redirected()
                && answer
                    .header("Content-Type")
                    .is_some_and(|k| is_json_type(&k));
            let limit = if answer.status == 200 {
                Limit::Result
            } else {
                Limit::Body
            };
            let text = if json {
                match client.text(&answer, limit).await {
                    Ok(Body::Text(text)) => Some(text),
                    Ok(_) => None,
                    Err(()) if client.aborted() => {
                        client.release();
                        return Sent::Aborted;
                    }
                    Err(()) => {
                        client.release();
                        return Sent::TimedOut;
                    }
                }
            } else {
                None
            };
            Sent::Answer {
                status: answer.status,
                json,
                text,
            }
        }
    };
    client.release();
    sent
}

/// A query's life, driven: what to send, what it means, until it settles. The outcome and its
/// result (`done`'s, else `null`).
async fn drive(
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
    let Ok(client_id) = client_id_for(inner, id, &settings.url, given).await else {
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
                    match without.take() {
                        // Refused, perhaps for the client_id alone: the same body without it.
                        Some(plain) if again && reason_of(inner, id).is_none() => {
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
                    Sent::Aborted => {
                        return (
                            stopped(inner, listeners, id, &mut life).await,
                            JsValue::NULL,
                        )
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
                            // Stopped meanwhile: never handed over.
                            return (
                                stopped(inner, listeners, id, &mut life).await,
                                JsValue::NULL,
                            );
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
                let step = life.waited(&waited, result_url.as_deref());
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

/// What the driver does next.
enum Next {
    Send(String),
    Fetch(String),
    Wait(WaitInput),
}

fn set_phase(inner: &Rc<RefCell<Inner>>, id: u32, phase: Phase) {
    if let Ok(mut g) = inner.try_borrow_mut() {
        if let Some(q) = g.queries.get(id) {
            q.phase = phase;
        }
    }
}

fn reason_of(inner: &Rc<RefCell<Inner>>, id: u32) -> Option<QueryReason> {
    let mut g = inner.try_borrow_mut().ok()?;
    g.queries.get(id)?.reason
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
    let (woken, wake) = deferred();
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

/// A promise and the function that resolves it.
fn deferred() -> (Promise, Function) {
    let mut resolver = None;
    let promise = Promise::new(&mut |resolve, _reject| resolver = Some(resolve));
    let resolve = resolver.unwrap_or_else(|| Function::from(JsValue::UNDEFINED));
    (promise, resolve)
}

/// A waited step, in the words of what stopped it: the reason the query was stopped for (its
/// signal, the page's end, a logout) rather than the waiter's; after another tab's logout, the
/// jobs are cancelled from what the query knows of them (their records are gone).
async fn aborted_by_this_query(
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
        let jobs = keepalive_cancels_by_snapshot(inner, id);
        outcome.stop = Some(if jobs.is_empty() {
            StopResult::NotSent
        } else {
            StopResult::Sent
        });
        outcome.cancelling = jobs;
    }
    Step::Settle { outcome, stop }
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
    let _ = closing::send_keepalive(
        requests
            .into_iter()
            .map(|(_, r)| (r, fetch.clone()))
            .collect(),
    );
    sent
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
async fn stopped(
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
        (None, QueryReason::Logout | QueryReason::PageEnd) => Some(keepalive_stop(inner, id)),
        (None, _) => Some(stop_on_server(inner, id).await),
    };
    life.aborted(reason, stop, Vec::new())
}

/// The stop request of query `id`'s synchronous request, if the server is not known to lack
/// the endpoint: the request, or what its absence means.
fn stop_request(guard: &mut Inner, id: u32) -> Result<(Request, Option<Function>), StopResult> {
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
async fn stop_on_server(inner: &Rc<RefCell<Inner>>, id: u32) -> StopResult {
    let (request, url, sender) = {
        let Ok(mut g) = inner.try_borrow_mut() else {
            return StopResult::Failed;
        };
        let request = match stop_request(&mut g, id) {
            Ok((request, _)) => request,
            Err(result) => return result,
        };
        let url = request.url.clone();
        let sender = Sender {
            fetch: g.fetch.clone(),
            timeout_ms: g.options.timeout_ms as f64,
        };
        (request, url, sender)
    };
    let client = Client::new(sender, None, None);
    let result = match client.send(&request).await {
        Some(Ok(answer)) => classify_stop(answer.status),
        _ => StopResult::Failed,
    };
    client.release();
    if result == StopResult::Unsupported {
        if let Ok(mut g) = inner.try_borrow_mut() {
            g.queries.no_stop.insert(url);
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
            let _ = closing::send_keepalive(vec![request]);
            StopResult::Sent
        }
        Err(result) => result,
    }
}

/// Stops every query of the guard for `reason` (a logout in this tab, before the session ends;
/// another user signing in here; the page's end), as far as that can be done while the guard's
/// state is held: the stop and cancel requests to send with `keepalive` now, and the
/// controllers to abort (both outside the borrow). A logout cancels a query's jobs that no
/// other waiter of the browser awaits; the page's end leaves them to its own decision
/// ([`super::closing`]); another user sends nothing.
pub(super) fn stop_all(
    guard: &mut Inner,
    reason: QueryReason,
    others: &[closing::View],
) -> (Vec<(Request, Option<Function>)>, Vec<AbortController>) {
    let mut requests = Vec::new();
    let mut controllers = Vec::new();
    let ids: Vec<u32> = guard
        .queries
        .running
        .iter()
        .filter(|q| q.reason.is_none())
        .map(|q| q.id)
        .collect();
    let elsewhere = match reason {
        QueryReason::Logout => guard.store.awaited_elsewhere(&closing::this_page()),
        _ => Vec::new(),
    };
    let own_waiters = guard.queries.waiters();
    for id in ids {
        let Some(q) = guard.queries.get(id) else {
            continue;
        };
        q.reason = Some(reason);
        let phase = q.phase;
        let jobs = q.jobs.clone();
        // At the page's end a waiting query's jobs are the page's decision; aborting its waiter
        // would send a second cancel.
        if !(reason == QueryReason::PageEnd && phase == Phase::Waiting) {
            controllers.push(q.controller.clone());
        }
        let stop = match (phase, reason) {
            (_, QueryReason::UserChanged) => StopResult::NotSent,
            (Phase::Sending | Phase::Refetching, _) => match stop_request(guard, id) {
                Ok(request) => {
                    requests.push(request);
                    StopResult::Sent
                }
                Err(result) => result,
            },
            (Phase::Waiting, QueryReason::Logout) => {
                let mut cancelling = Vec::new();
                for job in jobs {
                    let awaited = guard.waiting.rules.awaits_except(&job, &own_waiters)
                        || elsewhere.contains(&job)
                        || others
                            .iter()
                            .any(|(w, c)| w.awaits(&job) || c.contains(&job));
                    if awaited {
                        continue;
                    }
                    let check = guard.store.check_cancel(&job);
                    if check.is_allowed() {
                        let contract = super::cancel::contract_of(&check);
                        let request = super::cancel::post_for(guard, &job, contract);
                        requests.push((request, guard.fetch.clone()));
                        cancelling.push(job);
                    }
                }
                if let Some(q) = guard.queries.get(id) {
                    q.cancelling = cancelling.clone();
                }
                if cancelling.is_empty() {
                    StopResult::NotSent
                } else {
                    StopResult::Cancelling
                }
            }
            (Phase::Waiting, _) => StopResult::Cancelling,
            (Phase::Fetching | Phase::Ended, _) => StopResult::NotSent,
        };
        if let Some(q) = guard.queries.get(id) {
            q.stop = Some(stop);
        }
    }
    (requests, controllers)
}

/// Sends what [`stop_all`] decided and aborts the queries (outside the borrow).
/// The promise settles once the requests are answered (see [`closing::send_keepalive`]).
pub(super) fn send_stops(
    stops: (Vec<(Request, Option<Function>)>, Vec<AbortController>),
) -> js_sys::Promise {
    let (requests, controllers) = stops;
    let delivered = closing::send_keepalive(requests);
    for controller in controllers {
        dom::abort(&controller);
    }
    delivered
}
