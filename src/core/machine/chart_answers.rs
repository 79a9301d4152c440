//! A chart-data request's answers, read as [`QueryLife`] needs them: its status and headers
//! (a body is read only where it may mean something, within [`Limit::Body`]), its body, and
//! its failure; the step that follows is the life's.
//!
//! [`QueryLife`]: super::super::query::QueryLife

use super::super::chart::{classify_chart, classify_result, no_answer, ChartAnswer};
use super::super::client_ids::AfterAnswer;
use super::super::endpoints::{declared_too_long, json_within_limits, Limit};
use super::super::query::Phase;
use super::io::{Answer, Body, GuardId, ReqId};
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
    pub(super) fn chart_answered(&mut self, id: GuardId, qid: u32, req: ReqId, answer: &Answer) {
        let Some(q) = self.query_mut(id, qid) else {
            return self.end(req, true);
        };
        let status = answer.status;
        let json = answer.is_json();
        let (phase, url) = (q.life.phase(), q.url.clone());
        let url = self.server_key(id, &url);
        if phase != Phase::Fetching {
            self.servers.answered(&url, status);
        }
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        if q.stopped.is_some() {
            // Its late answer: a 202's body names what to cancel.
            let late = q.stopped.as_ref().and_then(|s| s.late) == Some(req);
            if late
                && status == 202
                && json
                && !declared_too_long(answer.content_length.as_deref(), Limit::Body)
            {
                q.reading = Some(202);
                return self.read_body(req, Limit::Body);
            }
            self.end(req, true);
            return self.late_ended(id, qid);
        }
        if q.req != Some(req) {
            return self.end(req, true);
        }
        // The client_id question, answered by the first request that carried one.
        if q.without.is_some() || q.resent {
            let resent = std::mem::take(&mut q.resent);
            let plain = q.without.take();
            let owner = q.owner.clone();
            let again = if resent {
                self.servers.client_ids.resent(&url, status);
                false
            } else {
                self.servers.client_ids.answered(&url, status) == AfterAnswer::SendWithout
            };
            // Not again once the session that sent it has ended (a stop from another tab's
            // logout answers 400 too).
            let same = self
                .guard(id)
                .and_then(|g| g.store.session())
                .is_some_and(|s| s.same_identity(&owner));
            if let (true, true, Some(plain)) = (again, same, plain) {
                self.end(req, true);
                if let Some(q) = self.query_mut(id, qid) {
                    q.life.client_id = None;
                    q.resent = true;
                }
                return self.post_chart(id, qid, plain);
            }
        }
        let limit = if status == 200 {
            Limit::Result
        } else {
            Limit::Body
        };
        if json && !declared_too_long(answer.content_length.as_deref(), limit) {
            if let Some(q) = self.query_mut(id, qid) {
                q.reading = Some(status);
            }
            return self.read_body(req, limit);
        }
        self.end(req, !json);
        let read = if phase == Phase::Fetching {
            classify_result(status, false, None)
        } else {
            classify_chart(status, json && status != 200, None)
        };
        self.chart_read(id, qid, read, Some(status), None);
    }

    pub(super) fn chart_body(&mut self, id: GuardId, qid: u32, req: ReqId, body: Body) {
        let Some(q) = self.query_mut(id, qid) else {
            return self.end(req, false);
        };
        let Some(status) = q.reading.take() else {
            return self.end(req, false);
        };
        if q.stopped.is_some() {
            self.end(req, false);
            if let Body::Text(text) = body {
                let parsed = json_within_limits(&text);
                if let ChartAnswer::Accepted(input) = classify_chart(202, true, parsed.as_ref()) {
                    self.cancel_late(id, qid, &input);
                }
            }
            return self.late_ended(id, qid);
        }
        let fetching = q.life.phase() == Phase::Fetching;
        let classify = if fetching {
            classify_result
        } else {
            classify_chart
        };
        match body {
            // The result, kept by the executor: handed over as `JSON.parse` read it.
            Body::Kept if status == 200 => {
                self.chart_read(id, qid, ChartAnswer::Result, Some(200), Some(req))
            }
            Body::Text(text) => {
                self.end(req, false);
                let parsed = json_within_limits(&text);
                self.chart_read(
                    id,
                    qid,
                    classify(status, true, parsed.as_ref()),
                    Some(status),
                    None,
                );
            }
            _ => {
                self.end(req, false);
                let answer = classify(status, status != 200, None);
                self.chart_read(id, qid, answer, Some(status), None);
            }
        }
    }

    /// Query `qid`'s request got no answer (`timed_out`: none within its stale timeout).
    pub(super) fn chart_failed(&mut self, id: GuardId, qid: u32, req: ReqId, timed_out: bool) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        if q.stopped.as_ref().is_some_and(|s| s.late == Some(req)) {
            return self.late_ended(id, qid);
        }
        if q.req != Some(req) {
            return;
        }
        q.req = None;
        let phase = q.life.phase();
        if timed_out && phase != Phase::Fetching {
            // No answer for the stale timeout: given up, and stopped on the server.
            return self.give_up(id, qid);
        }
        self.chart_read(id, qid, no_answer(), None, None);
    }

    /// What an answer to query `qid`'s request means, acted on.
    pub(super) fn chart_read(
        &mut self,
        id: GuardId,
        qid: u32,
        answer: ChartAnswer,
        status: Option<u16>,
        result: Option<ReqId>,
    ) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        q.req = None;
        let step = q.life.answered(answer, status);
        self.act(id, qid, step, result);
        self.keep_entry(id);
        self.settle_waits();
    }
}
