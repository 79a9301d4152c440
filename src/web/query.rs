//! `query()`: a chart's query from its request to its result, on every Superset, stopped on the
//! server when nobody needs it. The rules are the core's ([`crate::core::query`]: what each
//! answer means and how to stop a query where it is; [`crate::core::chart`]: the endpoints);
//! this room takes the call (its body and options read, the query registered, its abort wired)
//! and hands it to its driver ([`super::query_drive`]), which sends ([`super::query_send`]),
//! waits and reads the result.
//!
//! A query's promise never rejects. It is stopped by its signal (its request aborted and
//! `POST /api/v1/chart/data/stop {client_id}` sent; its jobs cancelled through `cancel()`'s
//! path), by `logout()` in any tab (with `keepalive`; in this tab before the session ends:
//! [`super::query_stop_all::stop_all`]), by the page's end ([`super::closing`]) and by a user
//! switch (nothing is sent for it as the new user). An answer that arrives after any of these
//! is never handed over.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::{AbortController, AbortSignal};

use super::boundary::{message_of, plain, to_js};
use super::clock::DateClock;
use super::closing;
use super::dom;
use super::listeners::Listeners;
use super::page;
use super::query_drive::drive;
use super::query_stop::{stop_request, taken_by_logout};
use super::request;
use crate::core::clock::Clock;

use super::query_state::{stop_url_for, Prepared, RunningQuery};
use super::state::Inner;
use super::wait_input::hearing_of;
use super::waiting;
use crate::core::chart::{is_client_id, QuerySettings, StopResult};
use crate::core::error::GuardError;
use crate::core::query::{Phase, QueryLife, QueryOutcome, QueryReason, QueryResult};
use crate::core::response::Contract;

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
        let mut outcome = QueryLife::new(None).aborted(
            QueryReason::Signal,
            Some(StopResult::NotSent),
            Vec::new(),
        );
        outcome.explain_stop();
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
        let (mut outcome, result) = drive(&inner, &listeners, prepared, settings).await;
        outcome.explain_stop();
        if let Some((signal, listener)) = on_abort {
            let _ = signal
                .remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
        end(&inner, id);
        Ok(frozen(&outcome, &result))
    })
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
            .unwrap_or_else(page::this_page);
        body.insert("tab_id".to_owned(), Value::String(tab.clone()));
        tab_id = Some(tab);
    }
    let given = match body.remove("client_id") {
        Some(Value::String(given)) if is_client_id(&given) => Some(given),
        _ => None,
    };
    let no_controller =
        |_| QueryOutcome::refused(None, QueryReason::InvalidInput, "no AbortController here");
    let controller = AbortController::new().map_err(no_controller)?;
    let request_end = AbortController::new().map_err(no_controller)?;
    let queries = &mut guard.queries;
    queries.next = queries.next.wrapping_add(1);
    let id = queries.next;
    queries.running.push(RunningQuery {
        id,
        controller,
        request_end,
        phase: Phase::Sending,
        client_id: None,
        sent: false,
        stop_pending: None,
        late_done: None,
        stop_url: stop_url_for(&settings.url),
        url: settings.url.clone(),
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

/// Takes query `id` off the guard's list.
fn end(inner: &Rc<RefCell<Inner>>, id: u32) {
    let done = inner.try_borrow_mut().ok().and_then(|mut guard| {
        let done = guard.queries.get(id).and_then(|q| q.late_done.take());
        guard.queries.running.retain(|q| q.id != id);
        waiting::keep_entry(&mut guard, DateClock.now_ms());
        done
    });
    if let Some(done) = done {
        let _ = done.call0(&JsValue::UNDEFINED);
    }
}

/// Stops query `id` (`reason`): its controller's abort ends what it waits for, and its driver
/// tells the server as [`QueryLife::stop_plan`] says.
pub(super) fn abort(inner: &Rc<RefCell<Inner>>, id: u32, reason: QueryReason) {
    let (controller, stop) = match inner.try_borrow_mut() {
        Ok(mut g) => {
            // Aborted after the session ended (the app heard another tab's logout): stopped for
            // the logout, and not again where that tab already stopped it.
            let ended = g.store.session().is_none();
            let reason = match reason {
                QueryReason::Signal if ended => QueryReason::Logout,
                other => other,
            };
            let taken = g
                .queries
                .running
                .iter()
                .find(|q| q.id == id)
                .is_some_and(|q| taken_by_logout(&g, q));
            // Its signal (or the app's abort at a logout), while its request is out: the stop
            // is sent now (below).
            let stop = match g.queries.get(id) {
                Some(q)
                    if reason != QueryReason::PageEnd
                        && !taken
                        && q.reason.is_none()
                        && matches!(q.phase, Phase::Sending | Phase::Refetching) =>
                {
                    stop_request(&mut g, id).ok()
                }
                _ => None,
            };
            let controller = g.queries.get(id).map(|q| {
                q.reason.get_or_insert(reason);
                if taken {
                    q.stop.get_or_insert(StopResult::Sent);
                }
                // Its request is stopped on the server, here or by the tab that signed out.
                let stopped = stop.is_some()
                    || (taken && matches!(q.phase, Phase::Sending | Phase::Refetching));
                (q.controller.clone(), stopped.then(|| q.request_end.clone()))
            });
            let controller = controller.map(|(c, end)| {
                let end = end.filter(|_| g.queries.ends_at_stop(id));
                (c, end)
            });
            (controller, stop)
        }
        Err(_) => (None, None),
    };
    // A request the stop is sent for is ended first (its answer would be the stop's 400), then
    // the stop leaves in this tick, before whatever the app sends next (a new filter's
    // queries) takes the connection the request freed.
    if let Some((_, Some(request_end))) = &controller {
        dom::abort(request_end);
    }
    let controller = controller.map(|(controller, _)| controller);
    if let Some((request, fetch)) = stop {
        let pending = request::fetch_now(&request, fetch.as_ref());
        if let (Some(pending), Ok(mut g)) = (pending, inner.try_borrow_mut()) {
            if let Some(q) = g.queries.get(id) {
                q.stop_pending = Some(pending);
            }
        }
    }
    if let Some(controller) = controller {
        dom::abort(&controller);
    }
}
