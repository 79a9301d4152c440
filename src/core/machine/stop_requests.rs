//! A synchronous query's stop request (`POST …/chart/data/stop {client_id}`, with
//! `keepalive`), its answer read: what it says of the server is learned, and a stop that found
//! nothing while its request is unanswered (it may have overtaken it) is sent again after
//! [`CONFIRM_MS`], [`MAX_CONFIRMS`] times at most.

use super::super::chart::{classify_stop, stop_body, StopResult};
use super::io::{Answer, GuardId, Method, ReqId};
use super::requests::{Purpose, Wake};
use super::{Machine, Platform};

/// How long a stop that found nothing waits before it is sent again, while its request is
/// unanswered: the request may have been on its way when the stop overtook it.
pub(super) const CONFIRM_MS: u64 = 300;
/// How many times a stop is sent again.
pub(super) const MAX_CONFIRMS: u8 = 2;

impl<P: Platform> Machine<P> {
    /// Sends query `qid`'s stop (`POST …/chart/data/stop {client_id}`, with `keepalive`: it
    /// outlives the page), its answer read.
    pub(super) fn send_stop(&mut self, id: GuardId, qid: u32) {
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
            StopResult::Unsupported => self.servers.stop_absent(&url, &stop_url),
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
    pub(super) fn ended(&self, id: GuardId) -> bool {
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
}
