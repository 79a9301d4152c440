//! Stopping every query of a guard at once, as far as it can be done while the guard's state
//! is held: at a logout in this tab (with `keepalive`, before the session ends, the other tabs'
//! queries too), a user switch (nothing sent) or the page's end ([`stop_all`]), then sending
//! what was decided outside the borrow ([`send_stops`]). One query stopped by its signal is
//! [`super::query_stop`]'s.

use js_sys::Function;
use web_sys::AbortController;

use super::dom;
use super::page;
use super::query_stop::stop_request;
use super::request::{self, Request};
use super::state::Inner;
use crate::core::chart::{is_client_id, is_same_origin_path, stop_body, StopResult};
use crate::core::query::{Phase, QueryReason, STOP_DELIVERY_MS};
use crate::core::store::Awaited;

/// Stops every query of the guard for `reason` (a logout in this tab, before the session ends;
/// another user signing in here; the page's end), as far as that can be done while the guard's
/// state is held: the stop and cancel requests to send with `keepalive` now, and the
/// controllers to abort (both outside the borrow). A logout cancels a query's jobs that no
/// other waiter of the browser awaits; the page's end leaves them to its own decision
/// ([`super::closing`]); another user sends nothing.
pub(super) fn stop_all(guard: &mut Inner, reason: QueryReason, others: &[page::View]) -> Stops {
    let mut requests = Vec::new();
    let mut controllers = Vec::new();
    let mut ends = Vec::new();
    let mut watching = Vec::new();
    let ids: Vec<u32> = guard
        .queries
        .running
        .iter()
        .filter(|q| q.reason.is_none())
        .map(|q| q.id)
        .collect();
    // At a logout, what the browser's other tabs list: their plain waits' jobs run on (as
    // this tab's do), and their queries are stopped here, below, while the session still is.
    let others_listed = match reason {
        QueryReason::Logout => guard.store.elsewhere(&page::this_page()),
        _ => Awaited::default(),
    };
    let elsewhere: Vec<String> = others_listed
        .jobs
        .iter()
        .filter(|j| !others_listed.queries.contains(j))
        .cloned()
        .collect();
    let own_waiters = guard.queries.waiters();
    let mut cancelled: Vec<String> = Vec::new();
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
            (Phase::Sending | Phase::Refetching, _) => {
                // A logout's `stopped` also waits for what the request may still answer (a 202
                // to cancel before the session ends).
                if reason == QueryReason::Logout {
                    if let Some(q) = guard.queries.get(id) {
                        let (promise, done) = dom::deferred();
                        q.late_done = Some(done);
                        watching.push(promise);
                    }
                }
                match stop_request(guard, id) {
                    Ok(request) => {
                        requests.push(request);
                        let at_once = guard.queries.ends_at_stop(id);
                        if let Some(q) = guard.queries.get(id).filter(|_| at_once) {
                            ends.push(q.request_end.clone());
                        }
                        StopResult::Sent
                    }
                    Err(result) => result,
                }
            }
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
                cancelled.extend(cancelling.iter().cloned());
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
    if reason == QueryReason::Logout {
        requests.extend(stops_of_other_tabs(
            guard,
            &others_listed,
            &own_waiters,
            &cancelled,
        ));
    }
    Stops {
        requests,
        controllers,
        ends,
        watching,
    }
}

/// At a logout, the stops and cancels of the other tabs' queries (what their entries list):
/// each synchronous request in flight by its `client_id` (a stop URL of this site, a
/// `client_id` by the rule), each job only their queries await and no waiter here does, as
/// `cancel()` would send it (the records are still there); none twice. Those tabs hear the
/// logout later, when the server's session may have ended: they find their entries gone and
/// send nothing again.
fn stops_of_other_tabs(
    guard: &mut Inner,
    listed: &Awaited,
    own_waiters: &[u32],
    cancelled: &[String],
) -> Vec<(Request, Option<Function>)> {
    let mut requests = Vec::new();
    for (url, client_id) in &listed.stops {
        if !is_same_origin_path(url) || !is_client_id(client_id) {
            continue;
        }
        if guard.queries.no_stop.contains(url) {
            continue;
        }
        let body = stop_body(client_id);
        let request = Request::new(url.clone(), &guard.options.headers, "POST", Some(&body));
        requests.push((request, guard.fetch.clone()));
    }
    for job in &listed.queries {
        if guard.waiting.rules.awaits_except(job, own_waiters) || cancelled.contains(job) {
            continue;
        }
        let check = guard.store.check_cancel(job);
        if check.is_allowed() {
            let contract = super::cancel::contract_of(&check);
            let request = super::cancel::post_for(guard, job, contract);
            requests.push((request, guard.fetch.clone()));
        }
    }
    requests
}

/// What [`stop_all`] decided: the stop and cancel requests to send with `keepalive`, the
/// queries' controllers to abort, and the promises of their requests' late answers seen to.
pub(super) struct Stops {
    requests: Vec<(Request, Option<Function>)>,
    controllers: Vec<AbortController>,
    /// The synchronous requests the stops are sent for, ended first (their answer would be the
    /// stop's 400).
    ends: Vec<AbortController>,
    watching: Vec<js_sys::Promise>,
}

impl Stops {
    /// Adds what [`stop_all`] decided for another guard.
    pub(super) fn merge(&mut self, other: Stops) {
        self.requests.extend(other.requests);
        self.controllers.extend(other.controllers);
        self.ends.extend(other.ends);
        self.watching.extend(other.watching);
    }
}

/// Sends what [`stop_all`] decided and aborts the queries (outside the borrow). The promise
/// settles once the requests are answered and the late answers seen to, or 3 s after.
pub(super) fn send_stops(stops: Stops) -> js_sys::Promise {
    let Stops {
        requests,
        controllers,
        ends,
        watching,
    } = stops;
    for end in ends {
        dom::abort(&end);
    }
    let all = js_sys::Array::new();
    all.push(&request::send_keepalive(requests));
    for controller in controllers {
        dom::abort(&controller);
    }
    for promise in watching {
        all.push(&promise);
    }
    request::settled_within(&all, STOP_DELIVERY_MS)
}
