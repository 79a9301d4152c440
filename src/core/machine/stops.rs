//! Stopping one query on the server, by what the server can do ([`Servers::supersede`]): a
//! request in flight is ended at once, or kept open where its answer may be a `202` whose
//! jobs can be cancelled; a synchronous query is stopped by its `client_id`, and that stop is
//! sent again while its request is unanswered (a stop may overtake its own request and find
//! nothing yet); a `202`'s jobs are cancelled through `cancel()`'s path, except what another
//! waiter of the browser awaits. Stopping every query of a guard at once is
//! [`stop_all`](super::stop_all)'s.
//!
//! [`Servers::supersede`]: super::servers::Servers::supersede

use super::super::chart::{classify_stop, stop_body, StopResult};
use super::super::options::GuardOptions;
use super::super::query::{Phase, QueryOutcome, QueryReason, QueryResult, Step};
use super::super::wait_input::WaitInput;
use super::super::wait_outcome::WaitOutcome;
use super::io::{Answer, GuardId, Method, ReqId, SignalId};
use super::queries::Stopped;
use super::requests::{Purpose, Wake};
use super::servers::Supersede;
use super::{Machine, Platform};

/// How long a stop that found nothing waits before it is sent again, while its request is
/// unanswered: the request may have been on its way when the stop overtook it.
pub(super) const CONFIRM_MS: u64 = 300;
/// How many times a stop is sent again.
pub(super) const MAX_CONFIRMS: u8 = 2;

impl Stopped {
    pub(super) fn new(reason: Option<QueryReason>) -> Self {
        Self {
            reason,
            stop: None,
            cancelling: Vec::new(),
            settled: false,
            stop_req: None,
            confirms: 0,
            late: None,
            group: None,
            ended_in_flight: false,
        }
    }
}

impl<P: Platform> Machine<P> {
    /// The app's signal `signal` aborted: each query of guard `id` it stops is stopped.
    pub(super) fn abort_queries_of(&mut self, id: GuardId, signal: SignalId) {
        let queries: Vec<u32> = self.guard(id).map_or_else(Vec::new, |g| {
            g.queries
                .iter()
                .filter(|q| q.signal == Some(signal) && q.stopped.is_none())
                .map(|q| q.id)
                .collect()
        });
        for qid in queries {
            self.stop_query(id, qid, QueryReason::Signal);
        }
    }

    /// Stops query `qid` (by its signal, or its guard freed) where it is, and hands its
    /// outcome over once the server's answer says how it was stopped.
    pub(super) fn stop_query(&mut self, id: GuardId, qid: u32, reason: QueryReason) {
        // Aborted after the session ended (the app heard another tab's logout): stopped for the
        // logout, and not again where that tab already stopped it.
        let ended = self.guard(id).is_some_and(|g| g.store.session().is_none());
        let reason = match reason {
            QueryReason::Signal if ended => QueryReason::Logout,
            other => other,
        };
        let taken = self.taken_by_logout(id, qid);
        let plan = self.plan_for(id, qid);
        let waiting = self.waiting_for_connection(id, qid);
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        if q.stopped.is_some() {
            return;
        }
        q.stopped = Some(Stopped::new(Some(reason)));
        if std::mem::take(&mut q.probing) {
            return self.settle_stopped(id, qid, Some(StopResult::NotSent));
        }
        match q.life.phase() {
            Phase::Sending | Phase::Refetching => {
                let Some(req) = q.req.take() else {
                    return self.settle_stopped(id, qid, Some(StopResult::NotSent));
                };
                if waiting {
                    // Still waiting for a connection: it never leaves.
                    self.end(req, false);
                    return self.settle_stopped(id, qid, Some(StopResult::NotSent));
                }
                let keep = plan.keep && !taken;
                if keep {
                    if let Some(s) = &mut q.stopped {
                        s.late = Some(req);
                    }
                    // A late answer is watched for `timeoutMs` from now.
                    let timeout = self.guard(id).map_or(0, |g| g.options.timeout_ms);
                    self.set_deadline(req, timeout);
                } else {
                    self.end(req, false);
                    if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
                        s.ended_in_flight = true;
                    }
                }
                if taken {
                    self.settle_stopped(id, qid, Some(StopResult::Sent));
                } else if plan.stop {
                    self.send_stop(id, qid);
                } else {
                    self.settle_stopped(id, qid, Some(StopResult::Unsupported));
                }
            }
            Phase::Waiting => match self.guard(id).and_then(|g| g.waits.of_query(qid)) {
                // Its waiter's abort cancels what nobody else awaits; its outcome follows.
                Some(waiter) => {
                    self.abort_waiter(id, waiter);
                }
                None => self.settle_stopped(id, qid, Some(StopResult::NotSent)),
            },
            Phase::Fetching => {
                if let Some(req) = q.req.take() {
                    self.end(req, false);
                }
                self.settle_stopped(id, qid, None);
            }
            Phase::Ended => {}
        }
        self.keep_entry(id);
    }

    /// Whether query `qid`'s request waits for a connection (it has not left).
    pub(super) fn waiting_for_connection(&self, id: GuardId, qid: u32) -> bool {
        self.guards
            .iter()
            .find(|g| g.id == id)
            .and_then(|g| g.queries.iter().find(|q| q.id == qid))
            .and_then(|q| q.req)
            .is_some_and(|req| !self.is_sent(req))
    }

    /// What query `qid`'s server can do about its request in flight.
    pub(super) fn plan_for(&mut self, id: GuardId, qid: u32) -> Supersede {
        let Some(guard) = self.guards.iter().find(|g| g.id == id) else {
            return Supersede {
                keep: false,
                stop: false,
            };
        };
        let contract = guard.options.contract;
        let template = guard.options.cancel_template(contract).to_owned();
        let Some(q) = guard.queries.iter().find(|q| q.id == qid) else {
            return Supersede {
                keep: false,
                stop: false,
            };
        };
        let (url, stop_url) = (
            self.server_key(id, &q.url),
            self.server_key(id, &q.stop_url),
        );
        let client_id = q.life.client_id.is_some();
        let template = self.server_key(id, &template);
        self.servers
            .supersede(&url, &stop_url, client_id, &template, contract)
    }

    /// Sends query `qid`'s stop (`POST …/chart/data/stop {client_id}`, with `keepalive`: it
    /// outlives the page), its answer read.
    fn send_stop(&mut self, id: GuardId, qid: u32) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let timeout = guard.options.timeout_ms;
        let Some(q) = guard.queries.iter().find(|q| q.id == qid) else {
            return;
        };
        let Some(client_id) = q.life.client_id.as_deref() else {
            return;
        };
        let (url, body) = (q.stop_url.clone(), stop_body(client_id));
        let purpose = Purpose::Stop {
            guard: id,
            query: qid,
        };
        let req = self.send(purpose, Method::Post, url, Some(body), true, timeout);
        if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
            s.stop_req = Some(req);
        }
    }

    pub(super) fn stop_answered(&mut self, id: GuardId, qid: u32, req: ReqId, answer: &Answer) {
        self.end(req, true);
        let result = classify_stop(answer.status);
        if answer.status == 401 {
            self.unauthorized(id);
        }
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let (url, stop_url) = (q.url.clone(), q.stop_url.clone());
        let late = q.stopped.as_ref().and_then(|s| s.late);
        let (url, stop_url) = (self.server_key(id, &url), self.server_key(id, &stop_url));
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let confirms = q.stopped.as_ref().map_or(MAX_CONFIRMS, |s| s.confirms);
        if let Some(s) = &mut q.stopped {
            s.stop_req = None;
        }
        match result {
            StopResult::Unsupported => self.servers.no_stop(&stop_url),
            // It found the query running: this URL's server answers synchronously.
            StopResult::Stopped => self.servers.answered(&url, 200),
            _ => {}
        }
        let unanswered = late.is_some_and(|late| !self.is_answered(late));
        // Ended in flight, it may have reached the server after its stop: once more.
        let ended_in_flight = self
            .query_mut(id, qid)
            .and_then(|q| q.stopped.as_ref())
            .is_some_and(|s| s.ended_in_flight && s.confirms == 0);
        if result == StopResult::NotRunning
            && (unanswered || ended_in_flight)
            && confirms < MAX_CONFIRMS
            && !self.ended(id)
        {
            // Nothing found while its request is still out: the stop may have overtaken it.
            if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
                s.stop = Some(result);
            }
            self.set_timer(
                Wake::Confirm {
                    guard: id,
                    query: qid,
                },
                CONFIRM_MS,
            );
            return;
        }
        self.settle_stopped(id, qid, Some(result));
    }

    pub(super) fn stop_failed(&mut self, id: GuardId, qid: u32, _req: ReqId) {
        if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
            s.stop_req = None;
        }
        self.settle_stopped(id, qid, Some(StopResult::Failed));
    }

    /// The stop that found nothing is sent again, if its request is still unanswered.
    pub(super) fn confirm_stop(&mut self, id: GuardId, qid: u32) {
        let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) else {
            return;
        };
        let (late, again) = (s.late, s.ended_in_flight && s.confirms == 0);
        let unanswered = late.is_some_and(|late| !self.is_answered(late));
        if (unanswered || again) && !self.ended(id) {
            if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
                s.confirms = s.confirms.saturating_add(1);
            }
            self.send_stop(id, qid);
        } else {
            self.settle_stopped(id, qid, None);
        }
    }

    /// Whether the page ended for guard `id`.
    fn ended(&self, id: GuardId) -> bool {
        self.guards.iter().any(|g| g.id == id && g.ended)
    }

    /// Whether a stop of query `qid` waits to be sent again.
    pub(super) fn confirm_pending(&self, id: GuardId, qid: u32) -> Option<super::io::TimerId> {
        self.timers
            .iter()
            .find(|(_, w)| {
                *w == Wake::Confirm {
                    guard: id,
                    query: qid,
                }
            })
            .map(|(t, _)| *t)
    }

    /// No answer within its stale timeout: the query is given up (`stale`) and stopped on the
    /// server.
    pub(super) fn give_up(&mut self, id: GuardId, qid: u32) {
        let plan = self.plan_for(id, qid);
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        q.stopped = Some(Stopped::new(None));
        if plan.stop {
            self.send_stop(id, qid);
        } else {
            self.settle_stopped(id, qid, Some(StopResult::Unsupported));
        }
    }

    /// Hands over the outcome of stopped query `qid` (`stop`: how the server was told, if
    /// that is known now), unless it was handed over already.
    pub(super) fn settle_stopped(&mut self, id: GuardId, qid: u32, stop: Option<StopResult>) {
        if let Some(timer) = self.confirm_pending(id, qid) {
            self.clear_timer(timer);
        }
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let Some(s) = &mut q.stopped else {
            return;
        };
        if stop.is_some() {
            s.stop = stop;
        }
        if s.settled {
            return self.drop_if_done(id, qid);
        }
        let outcome = match s.reason {
            Some(reason) => {
                let (stop, cancelling) = (s.stop, s.cancelling.clone());
                q.life.aborted(reason, stop, cancelling)
            }
            None => {
                let stale = q.wait.stale_ms;
                let mut o = QueryOutcome::new(
                    QueryResult::Stale,
                    q.life.client_id.as_deref(),
                    format!("No answer for {stale} ms: stopped on the server"),
                );
                o.stop = s.stop;
                o
            }
        };
        self.finish_query(id, qid, outcome, None);
    }

    /// Query `qid`'s request kept for a late answer ended (answered, or not).
    pub(super) fn late_ended(&mut self, id: GuardId, qid: u32) {
        let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) else {
            return;
        };
        s.late = None;
        let (group, waiting) = (s.group.take(), !s.settled && s.stop_req.is_none());
        if let Some(group) = group {
            self.delivered(group);
        }
        // A stop waiting to be sent again has its answer now: the request ended on the server.
        if waiting {
            self.settle_stopped(id, qid, None);
        }
        self.drop_if_done(id, qid);
    }

    /// A `202` that came after query `qid` was stopped: what it started is cancelled with
    /// `keepalive`, as the session that sent it, where the guard is still that identity's or
    /// signed out (the server answers as whoever its cookie is, and only ever lets a job's
    /// owner cancel it); never after another identity signed in. Nothing is recorded.
    pub(super) fn cancel_late(&mut self, id: GuardId, qid: u32, input: &WaitInput) {
        let (jobs, contract, tab_id) = input.started();
        let Some(guard) = self.guard(id) else {
            return;
        };
        let session = guard.store.session();
        let Some(q) = guard.queries.iter().find(|q| q.id == qid) else {
            return;
        };
        if !session.is_none_or(|s| s.same_identity(&q.owner)) {
            return;
        }
        let tab = tab_id.or_else(|| q.tab_id.clone());
        let group = q.stopped.as_ref().and_then(|s| s.group);
        let jobs: Vec<String> = jobs
            .into_iter()
            .filter(|job| !guard.waits.rules.awaits(job))
            .collect();
        for job in &jobs {
            self.send_cancel_raw(id, job, contract, tab.as_deref(), group);
        }
        if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
            if !s.settled && !jobs.is_empty() {
                s.cancelling = jobs;
            }
        }
    }

    /// Sends the cancel of `job` under `contract` as `cancel()` sends it, without a record,
    /// with `keepalive`, its answer not read (in a logout's `group`, whose `stopped` waits for
    /// it).
    pub(super) fn send_cancel_raw(
        &mut self,
        id: GuardId,
        job: &str,
        contract: super::super::response::Contract,
        tab_id: Option<&str>,
        group: Option<u32>,
    ) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let url = guard.options.cancel_url_for(job, contract);
        let body = GuardOptions::cancel_body(contract, tab_id);
        self.send_delivery(id, url, body, group);
    }

    /// A waited step in the words of what stopped query `qid`: the reason it was stopped for
    /// (its signal, the page's end, a logout) rather than its waiter's. A waiter that found
    /// the session gone (another tab's logout not heard yet) cancels the query's jobs with
    /// `keepalive`, from what the query knows of them (their records are gone).
    pub(super) fn in_its_words(
        &mut self,
        id: GuardId,
        qid: u32,
        step: Step,
        waited: &WaitOutcome,
    ) -> Step {
        let Step::Settle { mut outcome, stop } = step else {
            return step;
        };
        if outcome.outcome != QueryResult::Aborted {
            return Step::Settle { outcome, stop };
        }
        let known = self
            .query_mut(id, qid)
            .and_then(|q| q.stopped.as_ref())
            .map(|s| (s.reason, s.stop, s.cancelling.clone()));
        let (reason, sent, cancelling) = known.unwrap_or((None, None, Vec::new()));
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
        if outcome.reason == Some(QueryReason::Logout) && sent.is_none() {
            let jobs = if self.taken_by_logout(id, qid) {
                self.query_mut(id, qid)
                    .map(|q| q.jobs.clone())
                    .unwrap_or_default()
            } else {
                self.cancel_by_snapshot(id, qid, None)
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

    /// Sends, with `keepalive`, the cancel of each job of query `qid` that no waiter of its
    /// guard awaits, from what the query kept of its `202` (its records may be gone); the
    /// jobs it sent for.
    pub(super) fn cancel_by_snapshot(
        &mut self,
        id: GuardId,
        qid: u32,
        group: Option<u32>,
    ) -> Vec<String> {
        let Some(guard) = self.guard(id) else {
            return Vec::new();
        };
        let Some(q) = guard.queries.iter().find(|q| q.id == qid) else {
            return Vec::new();
        };
        let (contract, tab) = (q.contract, q.tab_id.clone());
        let jobs: Vec<String> = q
            .jobs
            .iter()
            .filter(|job| !guard.waits.rules.awaits(job))
            .cloned()
            .collect();
        for job in &jobs {
            self.send_cancel_raw(id, job, contract, tab.as_deref(), group);
        }
        jobs
    }

    /// Whether another tab's logout took query `qid` with its guard's entry (its request in
    /// flight, or all its jobs, were listed there): that tab stopped it.
    pub(super) fn taken_by_logout(&mut self, id: GuardId, qid: u32) -> bool {
        let Some(guard) = self.guard(id) else {
            return false;
        };
        let Some(listed) = guard.waits.entry.taken.as_ref() else {
            return false;
        };
        let Some(q) = guard.queries.iter().find(|q| q.id == qid) else {
            return false;
        };
        let request = q
            .life
            .client_id
            .as_ref()
            .is_some_and(|c| listed.stops.iter().any(|(_, listed)| listed == c));
        let jobs = !q.jobs.is_empty() && q.jobs.iter().all(|j| listed.queries.contains(j));
        request || jobs
    }

    /// Guard `id`'s queries' synchronous requests in flight, where a stop can reach them: each
    /// one's stop URL and `client_id` (what its wait entry lists for a logout in another tab).
    pub(super) fn stops_in_flight(&mut self, id: GuardId) -> Vec<(String, String)> {
        let Some(guard) = self.guards.iter().find(|g| g.id == id) else {
            return Vec::new();
        };
        guard
            .queries
            .iter()
            .filter(|q| q.stopped.is_none() && q.req.is_some())
            .filter(|q| matches!(q.life.phase(), Phase::Sending | Phase::Refetching))
            .filter(|q| !self.servers.has_no_stop(&self.server_key(id, &q.stop_url)))
            .filter_map(|q| Some((q.stop_url.clone(), q.life.client_id.clone()?)))
            .collect()
    }
}
