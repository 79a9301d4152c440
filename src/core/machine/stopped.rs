//! What comes after a query was stopped: its outcome handed over once the server's answer
//! says how it was stopped, a late answer to its request (a `202`'s jobs cancelled as the
//! session that sent it), a waited step told in the words of what stopped it, and what its
//! guard's entry says of it for another tab's logout.

use super::super::chart::StopResult;
use super::super::query::{Phase, QueryOutcome, QueryReason, QueryResult, Step};
use super::super::wait_input::WaitInput;
use super::super::wait_outcome::WaitOutcome;
use super::io::GuardId;
use super::unawaited::Scope;
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
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
        let jobs: Vec<String> = self
            .unawaited(id, jobs, &[], Scope::Abort)
            .into_iter()
            .filter(|job| self.send_cancel_raw(id, job, Some(contract), tab.as_deref(), group))
            .collect();
        if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
            if !s.settled && !jobs.is_empty() {
                s.cancelling = jobs;
            }
        }
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
        outcome.stop = sent.or(Some(cancel_word(
            &waited.cancelling,
            StopResult::Cancelling,
        )));
        if !cancelling.is_empty() {
            outcome.cancelling = cancelling;
        }
        if outcome.reason == Some(QueryReason::Logout) && sent.is_none() {
            let taken = self.taken_by_logout(id, qid);
            let jobs = self.heard_cancels(id, qid, taken);
            outcome.stop = Some(cancel_word(&jobs, StopResult::Sent));
            outcome.cancelling = jobs;
        }
        Step::Settle { outcome, stop }
    }

    /// The cancels of query `qid`'s jobs for another tab's logout heard here: none where that
    /// tab `taken` them (it sent them: the jobs it listed), else from what the query kept.
    pub(super) fn heard_cancels(&mut self, id: GuardId, qid: u32, taken: bool) -> Vec<String> {
        if taken {
            return self
                .query_mut(id, qid)
                .map(|q| q.jobs.clone())
                .unwrap_or_default();
        }
        self.cancel_by_snapshot(id, qid, Scope::Heard, None)
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
            .filter(|q| {
                let url = self.server_key(id, &q.url);
                self.servers
                    .can_stop(Some(&url), &self.server_key(id, &q.stop_url))
            })
            .filter_map(|q| Some((q.stop_url.clone(), q.life.client_id.clone()?)))
            .collect()
    }
}

/// How a stop's cancels are told: nothing sent where there are none, else `sent` (`sent`, or
/// `cancelling` while their answers are read).
pub(super) fn cancel_word(jobs: &[String], sent: StopResult) -> StopResult {
    if jobs.is_empty() {
        StopResult::NotSent
    } else {
        sent
    }
}
