//! How a `query()`'s request goes out: whether it carries a `client_id` (the core's
//! [`crate::core::client_ids`], asking the stop endpoint first where that is not known), and
//! the request itself through the guard's HTTP client, its body read within the limits.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::AbortController;

use super::clock::DateClock;
use super::dom;
use super::http::{Body, Client, Failure, Sender};
use super::request::Request;
use crate::core::clock::Clock;

use super::query_state::stop_url_for;
use super::random::MathRandom;
use super::state::Inner;
use crate::core::chart::make_client_id;
use crate::core::client_ids::{Decision, Probe};
use crate::core::endpoints::{is_json_type, Limit};
use crate::core::query::{Phase, QueryReason};
use crate::core::random::Random;

/// Whether query `id` to `url` carries a `client_id`, and which: the app's own, else the
/// guard's where the server takes one ([`crate::core::client_ids`]: asking its stop endpoint first where
/// that is not known, or waiting for the answer to another query's question). `Err` when the
/// query was stopped meanwhile.
pub(super) async fn client_id_for(
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
                // The guard's question, not this query's: a stop of this query does not end it.
                let (done, end) = dom::deferred();
                let (request, sender) = match inner.try_borrow_mut() {
                    Ok(mut g) => {
                        g.queries.probes.insert(url.to_owned(), done);
                        let request =
                            Request::new(stop_url_for(url), &g.options.headers, "OPTIONS", None);
                        let sender = Sender {
                            fetch: g.fetch.clone(),
                            timeout_ms: timeout_ms as f64,
                        };
                        (request, sender)
                    }
                    Err(_) => return Err(()),
                };
                let me = Rc::downgrade(inner);
                let url = url.to_owned();
                wasm_bindgen_futures::spawn_local(async move {
                    let client = Client::new(sender, None, None);
                    let probe = match client.send(&request).await {
                        // Its body (empty) is let arrive by `release()`, as every unread
                        // answer's is, rather than aborted.
                        Some(Ok(answer)) => Probe::Answered {
                            status: answer.status,
                            allow: answer.header("Allow"),
                        },
                        _ => Probe::NoAnswer,
                    };
                    client.release();
                    if let Some(inner) = me.upgrade() {
                        if let Ok(mut g) = inner.try_borrow_mut() {
                            if g.queries.client_ids.probed(&url, &probe) {
                                g.queries.no_stop.insert(stop_url_for(&url), ());
                            }
                            g.queries.probes.remove(&url);
                        }
                    }
                    let _ = end.call0(&JsValue::UNDEFINED);
                });
                // Then waits for its answer, as any query that comes meanwhile does.
                continue;
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

/// What a request got.
pub(super) enum Sent {
    Answer {
        status: u16,
        json: bool,
        text: Option<String>,
    },
    NoAnswer,
    TimedOut,
    /// Stopped first; with the `fetch` promise it stopped waiting for, if that may still
    /// answer, and the controller that ends its request.
    Aborted(Option<(JsValue, Option<AbortController>)>),
}

/// The query's client: the guard's `fetch`, `timeout_ms`, and its controller's signal and the
/// guard's logout signal as what aborts it; its `request_end` ends its request at once.
pub(super) fn client_of(inner: &Rc<RefCell<Inner>>, id: u32, timeout_ms: u64) -> Option<Client> {
    let mut guard = inner.try_borrow_mut().ok()?;
    let (signal, end) = guard
        .queries
        .get(id)
        .map(|q| {
            (
                dom::signal_of(&q.controller),
                dom::signal_of(&q.request_end),
            )
        })
        .unwrap_or((None, None));
    let logout = guard.logout_signal();
    let sender = Sender {
        fetch: guard.fetch.clone(),
        timeout_ms: timeout_ms as f64,
    };
    Some(Client::new(sender, signal, logout).ended_by(end))
}

/// Sends `method` `url` (with `body`) as query `id`: its answer, the body read when it is JSON
/// (a `200`'s within the result's limit, any other within every body's).
pub(super) async fn send(
    inner: &Rc<RefCell<Inner>>,
    id: u32,
    method: &str,
    url: &str,
    body: Option<&str>,
    timeout_ms: u64,
) -> Sent {
    let Some(client) = client_of(inner, id, timeout_ms) else {
        return Sent::Aborted(None);
    };
    // The chart-data request is left in flight when the query is stopped: a 202 it still
    // gets names what to cancel (query_stop::watch_late).
    let client = if method == "POST" {
        client.keeping()
    } else {
        client
    };
    let request = match inner.try_borrow() {
        Ok(guard) => Request::new(url.to_owned(), &guard.options.headers, method, body),
        Err(_) => return Sent::Aborted(None),
    };
    let sent = match client.send(&request).await {
        None => Sent::Aborted(client.abandoned()),
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
                        return Sent::Aborted(None);
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

/// Query `id` is at `phase` now; the guard's entry lists its request while it is in flight.
pub(super) fn set_phase(inner: &Rc<RefCell<Inner>>, id: u32, phase: Phase) {
    if let Ok(mut g) = inner.try_borrow_mut() {
        if let Some(q) = g.queries.get(id) {
            q.phase = phase;
        }
        super::waiting::keep_entry(&mut g, DateClock.now_ms());
    }
}

pub(super) fn reason_of(inner: &Rc<RefCell<Inner>>, id: u32) -> Option<QueryReason> {
    let mut g = inner.try_borrow_mut().ok()?;
    g.queries.get(id)?.reason
}
