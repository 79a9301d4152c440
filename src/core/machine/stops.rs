//! Stopping one query on the server, by what the server can do ([`Servers::supersede`]): a
//! request in flight is ended at once, or kept open where its answer may be a `202` whose
//! jobs can be cancelled; a synchronous query is stopped by its `client_id`, and that stop is
//! sent again while its request is unanswered (a stop may overtake its own request and find
//! nothing yet); a `202`'s jobs are cancelled through `cancel()`'s path, except what another
//! waiter of the browser awaits. Stopping every query of a guard at once is
//! [`stop_all`](super::stop_all)'s.
//!
//! [`Servers::supersede`]: super::servers::Servers::supersede

use super::super::chart::{stop_body, StopResult};
use super::super::query::{Phase, QueryReason};
use super::io::{GuardId, SignalId};
use super::queries::Stopped;
use super::servers::Supersede;
use super::stopped::cancel_word;
use super::unawaited::Scope;
use super::{Machine, Platform};

/// How a query's stop is sent, by what stopped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Manner {
    /// The app (its signal, or its guard freed): the stop's answer is read, and the outcome
    /// says how the server stopped it; a `202`'s jobs are cancelled through `cancel()`'s path.
    Read,
    /// This tab's logout, before the session ends: with `keepalive`, in the logout's group.
    Logout(u32),
    /// Another tab's logout, heard here: with `keepalive`, from what the query knows, except
    /// what that tab stopped.
    Heard,
    /// The page's end: with `keepalive`, except what `cancelOnClose: false` keeps.
    Closing,
    /// Another identity signed in: nothing is sent for it as them.
    Drop,
}

impl Manner {
    pub(super) fn group(self) -> Option<u32> {
        match self {
            Self::Logout(group) => Some(group),
            _ => None,
        }
    }
}

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
            self.stop_query(id, qid, QueryReason::Signal, None);
        }
    }

    /// Stops query `qid` for `reason`, where it is: the one place a query is stopped. How the
    /// stop is sent is its [`Manner`] (`group`: this tab's logout, whose `stopped` waits for
    /// what it sends); a query stopped already has only what is left of it seen to
    /// ([`stop_lingering`](Self::stop_lingering)).
    pub(super) fn stop_query(
        &mut self,
        id: GuardId,
        qid: u32,
        reason: QueryReason,
        group: Option<u32>,
    ) {
        // Aborted after the session ended (the app heard another tab's logout): stopped for the
        // logout, and not again where that tab already stopped it.
        let ended = self.guard(id).is_some_and(|g| g.store.session().is_none());
        let reason = match reason {
            QueryReason::Signal if ended => QueryReason::Logout,
            other => other,
        };
        let manner = match (reason, group) {
            (QueryReason::UserChanged, _) => Manner::Drop,
            (QueryReason::Logout, Some(group)) => Manner::Logout(group),
            (QueryReason::Logout, None) => Manner::Heard,
            (QueryReason::PageEnd, _) => Manner::Closing,
            _ => Manner::Read,
        };
        if self.query_mut(id, qid).is_none_or(|q| q.stopped.is_some()) {
            return self.stop_lingering(id, qid, reason, group);
        }
        if manner == Manner::Drop {
            return self.drop_query(id, qid);
        }
        let taken = self.taken_by_logout(id, qid);
        let plan = self.plan_for(id, qid);
        let waiting = self.waiting_for_connection(id, qid);
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        q.stopped = Some(Stopped::new(Some(reason)));
        if std::mem::take(&mut q.probing) {
            return self.settle_stopped(id, qid, Some(StopResult::NotSent));
        }
        let stop = match q.life.phase() {
            Phase::Sending | Phase::Refetching => {
                self.stop_request(id, qid, manner, plan, taken, waiting)
            }
            Phase::Waiting => self.stop_waiting(id, qid, manner, taken),
            Phase::Fetching | Phase::Ended => {
                if let Some(req) = q.req.take() {
                    self.end(req, false);
                }
                Some(StopResult::NotSent)
            }
        };
        if let Some(stop) = stop {
            self.settle_stopped(id, qid, Some(stop));
        }
        self.keep_entry(id);
    }

    /// Query `qid`'s request is in flight: ended, or kept open where its answer may be a
    /// `202` whose jobs can be cancelled (`plan`, not at the page's end, not where another
    /// tab's logout `taken` it); stopped by its `client_id` where its server has a stop. How it
    /// was stopped, or `None` where the stop's answer will say.
    fn stop_request(
        &mut self,
        id: GuardId,
        qid: u32,
        manner: Manner,
        plan: Supersede,
        taken: bool,
        waiting: bool,
    ) -> Option<StopResult> {
        let guard = self.guard(id)?;
        let timeout = guard.options.timeout_ms;
        let q = guard.queries.iter().find(|q| q.id == qid)?;
        let sends = manner != Manner::Closing || guard.cancels_on_close(q.wait.cancel_on_close);
        let q = self.query_mut(id, qid)?;
        let req = q.req.take();
        let stop = q.life.client_id.as_deref().map(stop_body);
        let stop_url = q.stop_url.clone();
        let group = manner.group();
        match req {
            // Still waiting for a connection: it never leaves.
            Some(req) if waiting => {
                self.end(req, false);
                return Some(StopResult::NotSent);
            }
            Some(req) if plan.keep && manner != Manner::Closing && !taken => {
                let s = q.stopped.as_mut()?;
                s.late = Some(req);
                s.group = group;
                self.count_in(group);
                // A late answer is watched for `timeoutMs` from now.
                self.set_deadline(req, timeout);
            }
            Some(req) => {
                self.end(req, false);
                if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
                    s.ended_in_flight = true;
                }
            }
            None => return Some(StopResult::NotSent),
        }
        match stop {
            _ if taken => Some(StopResult::Sent),
            _ if !sends => Some(StopResult::NotSent),
            Some(_) if plan.stop && manner == Manner::Read => {
                self.send_stop(id, qid);
                None
            }
            Some(body) if plan.stop => {
                self.send_delivery(id, stop_url, Some(body), group);
                Some(StopResult::Sent)
            }
            _ => Some(StopResult::Unsupported),
        }
    }

    /// Query `qid` awaits its `202`'s jobs: what nobody else awaits is cancelled. The app's
    /// stop aborts its waiter (through `cancel()`'s path; the outcome follows from the
    /// waiter's); a logout here cancels from the records in its group, one heard from another
    /// tab from what the query kept (but what that tab `taken`); the page's end decided over
    /// every waiter before this.
    fn stop_waiting(
        &mut self,
        id: GuardId,
        qid: u32,
        manner: Manner,
        taken: bool,
    ) -> Option<StopResult> {
        let waiter = self.guard(id).and_then(|g| g.waits.of_query(qid));
        let jobs = self.query_mut(id, qid).map(|q| q.jobs.clone())?;
        let sent = match manner {
            Manner::Read | Manner::Drop => {
                let Some(waiter) = waiter else {
                    return Some(StopResult::NotSent);
                };
                self.abort_waiter(id, waiter);
                return None;
            }
            Manner::Closing => return Some(StopResult::Cancelling),
            Manner::Heard => self.heard_cancels(id, qid, taken),
            Manner::Logout(group) => {
                let own = self
                    .guard(id)
                    .map_or_else(Vec::new, |g| g.waits.of_queries());
                self.unawaited(id, jobs, &own, Scope::Logout)
                    .into_iter()
                    .filter(|job| self.send_cancel_record(id, job, Some(group)))
                    .collect()
            }
        };
        if let Some(waiter) = waiter {
            self.drop_waiter(id, waiter);
        }
        let stop = match manner {
            Manner::Heard => cancel_word(&sent, StopResult::Sent),
            _ => cancel_word(&sent, StopResult::Cancelling),
        };
        if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
            s.cancelling = sent;
        }
        Some(stop)
    }

    /// Another identity signed in: query `qid` ends with nothing sent for it as them.
    pub(super) fn drop_query(&mut self, id: GuardId, qid: u32) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        q.stopped = Some(Stopped::new(Some(QueryReason::UserChanged)));
        q.probing = false;
        if let Some(req) = q.req.take() {
            self.end(req, false);
        }
        if let Some(waiter) = self.guard(id).and_then(|g| g.waits.of_query(qid)) {
            self.drop_waiter(id, waiter);
        }
        self.settle_stopped(id, qid, Some(StopResult::NotSent));
    }

    /// What is left of a stopped query at a logout, a user switch or the page's end: a late
    /// answer a logout's `stopped` waits for; a stop waiting to be sent again, sent now at the
    /// page's end; nothing more for another user.
    pub(super) fn stop_lingering(
        &mut self,
        id: GuardId,
        qid: u32,
        reason: QueryReason,
        group: Option<u32>,
    ) {
        let pending = self.confirm_pending(id, qid);
        let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) else {
            return;
        };
        match reason {
            QueryReason::Logout if s.late.is_some() && s.group.is_none() && group.is_some() => {
                s.group = group;
                self.count_in(group);
            }
            QueryReason::UserChanged => {
                if let Some(late) = s.late.take() {
                    self.end(late, false);
                }
                if let Some(timer) = pending {
                    self.clear_timer(timer);
                }
                self.settle_stopped(id, qid, None);
            }
            QueryReason::PageEnd => {
                if let Some(timer) = pending {
                    self.clear_timer(timer);
                    let stop = self.query_mut(id, qid).and_then(|q| {
                        Some((q.stop_url.clone(), stop_body(q.life.client_id.as_deref()?)))
                    });
                    if let Some((url, body)) = stop {
                        self.send_delivery(id, url, Some(body), None);
                    }
                    self.settle_stopped(id, qid, Some(StopResult::Sent));
                }
            }
            _ => {}
        }
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
}
