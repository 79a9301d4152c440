//! The requests in flight and the timers, each with what it is for ([`Purpose`], [`Wake`]):
//! every answer, body, failure and timer goes to its owner's room. Every request has a
//! deadline; every request ends with [`Effect::End`], so the executor keeps no handle longer
//! than the machine needs it.

use super::super::endpoints::{drains_unread, reading, Limit, Read};
use super::super::response::Reply;
use super::io::{Answer, Body, Effect, GuardId, Method, ReqId, Request, TimerId};
use super::servers::stop_key_for;
use super::{Machine, Platform};

/// The longest timer a browser keeps (`setTimeout` takes up to 2^31-1 ms).
pub const MAX_TIMER_MS: u64 = 2_147_483_647;

/// How many connections a browser keeps per server over HTTP/1.1.
const HTTP1_CONNECTIONS: usize = 6;

/// What a cancel's request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CancelStep {
    /// The cancel itself.
    Post,
    /// A task's status, read back after its 422 (or a 2xx whose body broke).
    Status,
    /// The route that tells whether the task framework is switched off.
    Framework,
}

/// What a request is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    Cancel {
        guard: GuardId,
        job: String,
        step: CancelStep,
    },
    /// A poll of `follow()`, or a task read back after it.
    Poll { guard: GuardId },
    /// A query's chart-data request (or its result's read, or the request sent again).
    Chart { guard: GuardId, query: u32 },
    /// A query's stop.
    Stop { guard: GuardId, query: u32 },
    /// The stop endpoint's question for chart-data URL `url` (whether its server takes a
    /// `client_id`).
    Probe { guard: GuardId, url: String },
    /// Sent with `keepalive`, its answer not read; a logout's `stopped` waits for the answers
    /// of its group.
    /// A cancel's (`cancel`: its endpoint's key and contract) still teaches what its status
    /// says of the endpoint.
    Delivery {
        guard: GuardId,
        group: u32,
        cancel: Option<(String, super::super::response::Contract)>,
    },
}

impl Purpose {
    pub(super) fn guard(&self) -> Option<GuardId> {
        match self {
            Purpose::Cancel { guard, .. }
            | Purpose::Poll { guard }
            | Purpose::Chart { guard, .. }
            | Purpose::Stop { guard, .. }
            | Purpose::Probe { guard, .. }
            | Purpose::Delivery { guard, .. } => Some(*guard),
        }
    }
}

/// What a timer wakes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Wake {
    /// A request's deadline.
    Deadline(ReqId),
    /// A cancel's next attempt.
    Retry { guard: GuardId, job: String },
    /// A guard's waiters: a stale clock, an expiry, a missing record's grace, the entry's
    /// refresh.
    Waits(GuardId),
    /// `follow()`'s next poll.
    Follow(GuardId),
    /// A query's stop sent again (a stop that may have overtaken its request).
    Confirm { guard: GuardId, query: u32 },
    /// A logout's `stopped`, settled at the latest.
    Delivered(u32),
    /// The first cancel to an endpoint has been out for [`ASK_MS`](super::servers::ASK_MS):
    /// the others go.
    /// Connections freed: what waits for one goes, once the app's current task has run (it
    /// may stop the next queued query too: a filter change aborts every chart's old query).
    HandOn,
    Asked {
        template: String,
        contract: super::super::response::Contract,
    },
}

/// A request in flight, or waiting for a connection.
#[derive(Debug)]
pub(super) struct Open {
    pub(super) req: ReqId,
    pub(super) purpose: Purpose,
    deadline: Option<TimerId>,
    /// The answer's declared length, once answered (whether an end lets its body arrive).
    declared: Option<Option<String>>,
    /// Its body was asked for ([`Effect::Read`]): nothing is left to let arrive at its end.
    read: bool,
    /// Asked for after a 401 to its guard: it never leaves, and its owner hears the 401.
    barred: bool,
    /// A chart-data request waiting for one of the page's connections: not sent yet, with its
    /// timeout.
    pub(super) waiting: Option<(Request, u64)>,
}

impl Open {
    /// Whether it is a chart-data request: it leaves after the others waiting, and leaves a
    /// connection free for them.
    fn chart(&self) -> bool {
        matches!(self.purpose, Purpose::Chart { .. })
    }

    /// Whether it waits for a connection: all but what is sent with `keepalive` as a session
    /// or the page ends (it must leave now).
    fn pooled(&self) -> bool {
        !matches!(self.purpose, Purpose::Delivery { .. })
    }

    fn busy(&self) -> bool {
        self.pooled() && self.waiting.is_none() && !self.barred
    }
}

impl<P: Platform> Machine<P> {
    /// Sends a request for `purpose`, its deadline `timeout_ms` from now; its id.
    pub(super) fn send(
        &mut self,
        purpose: Purpose,
        method: Method,
        url: String,
        body: Option<String>,
        keepalive: bool,
        timeout_ms: u64,
    ) -> ReqId {
        let req = ReqId(self.id());
        let guard = purpose.guard().unwrap_or_default();
        let request = Request {
            req,
            guard,
            method,
            url,
            body,
            keepalive,
        };
        let mut open = Open {
            req,
            purpose,
            deadline: None,
            declared: None,
            read: false,
            barred: false,
            waiting: None,
        };
        // After a 401 nothing is sent for the session until the next login, whatever it is
        // for: its owner hears the 401 as if the server said it again, once the event or call
        // that asked for it has made its decisions ([`Machine::effects`]).
        if self.guard(guard).is_some_and(|g| g.unauthenticated) {
            open.barred = true;
            self.open.push(open);
            self.barred.push(req);
            return req;
        }
        // Behind what waits before it: everything, for a chart-data request; the others, for
        // the rest.
        let first = !self
            .open
            .iter()
            .any(|o| o.waiting.is_some() && (open.chart() || !o.chart()));
        if open.pooled() && !(first && self.connection_free(guard, &request.url, open.chart())) {
            open.waiting = Some((request, timeout_ms));
            self.open.push(open);
            return req;
        }
        self.emit(Effect::Send(request));
        open.deadline = Some(self.set_timer(Wake::Deadline(req), timeout_ms));
        self.open.push(open);
        req
    }

    /// Whether a request of guard `id` to `url` (a chart-data request, `chart`) may go now. The
    /// browser keeps a few connections per server over HTTP/1.1 ([`Machine::set_protocol`])
    /// and queues the rest, in no order the guard can see; the guard queues its requests
    /// itself instead: what it sent is on the wire, a chart-data request superseded before it
    /// left is dropped with nothing sent, and a stop, a cancel or a poll goes before the
    /// chart-data requests waiting, with a connection left free for it where the server can
    /// stop queries.
    fn connection_free(&self, id: GuardId, url: &str, chart: bool) -> bool {
        let Some(connections) = self.connections else {
            return true;
        };
        let busy = self.open.iter().filter(|o| o.busy()).count();
        if !chart {
            return busy < connections;
        }
        let key = self.server_key(id, url);
        let stoppable = self.servers.client_ids.carries(&key)
            && self.servers.can_stop(Some(&key), &stop_key_for(&key));
        let limit = if stoppable {
            connections.saturating_sub(1).max(1)
        } else {
            connections
        };
        let charts = self.open.iter().filter(|o| o.busy() && o.chart()).count();
        busy < connections && charts < limit
    }

    /// The requests waiting for a connection go, as far as there are free ones: the others
    /// first, then the chart-data requests, each in the order they came; none of a guard whose
    /// page ended.
    pub(super) fn send_waiting(&mut self) {
        // Nor of a page in the back/forward cache (it hands them on when it comes back).
        let ended: Vec<GuardId> = self
            .guards
            .iter()
            .filter(|g| g.ended || g.frozen)
            .map(|g| g.id)
            .collect();
        loop {
            let next = self
                .open
                .iter()
                .filter(|o| o.waiting.is_some())
                .filter(|o| o.purpose.guard().is_none_or(|g| !ended.contains(&g)))
                .min_by_key(|o| o.chart())
                .and_then(|o| {
                    let (r, _) = o.waiting.as_ref()?;
                    Some((o.req, r.guard, r.url.clone(), o.chart()))
                });
            let Some((req, guard, url, chart)) = next else {
                return;
            };
            if !self.connection_free(guard, &url, chart) {
                return;
            }
            let Some((request, timeout)) = self
                .open
                .iter_mut()
                .find(|o| o.req == req)
                .and_then(|o| o.waiting.take())
            else {
                return;
            };
            self.emit(Effect::Send(request));
            let deadline = self.set_timer(Wake::Deadline(req), timeout);
            if let Some(open) = self.open.iter_mut().find(|o| o.req == req) {
                open.deadline = Some(deadline);
            }
        }
    }

    /// The protocol the page came over (`None`: not known, not a page): how many connections
    /// the browser keeps to its server. Six over HTTP/1.1 (every browser's limit per host, and
    /// what a browser that does not say is taken to keep); no limit over HTTP/2 and HTTP/3.
    pub fn set_protocol(&mut self, protocol: Option<&str>) {
        self.connections = match protocol {
            None | Some("h2" | "h3") => None,
            Some(_) => Some(HTTP1_CONNECTIONS),
        };
    }

    /// Whether request `req` has left (it may be waiting for a connection).
    pub(super) fn is_sent(&self, req: ReqId) -> bool {
        self.open
            .iter()
            .any(|o| o.req == req && o.waiting.is_none())
    }

    /// Ends request `req` (if it is still open): with `drain`, an answer whose body was not
    /// read lets it arrive first, unless it declares more than an answer the guard reads.
    pub(super) fn end(&mut self, req: ReqId, drain: bool) {
        let Some(at) = self.open.iter().position(|o| o.req == req) else {
            return;
        };
        let open = self.open.remove(at);
        if let Some(timer) = open.deadline {
            self.clear_timer(timer);
        }
        // Never sent: nothing left the page.
        if open.waiting.is_none() && !open.barred {
            let drain = drain
                && !open.read
                && open
                    .declared
                    .as_ref()
                    .is_some_and(|length| drains_unread(length.as_deref()));
            self.emit(Effect::End { req, drain });
        }
        if open.busy() {
            self.hand_on = true;
        }
    }

    /// The requests asked for after a 401 are answered 401, as the server would; a cancel
    /// settles `unauthenticated` with nothing learned of its endpoint.
    pub(super) fn answer_barred(&mut self) {
        while !self.barred.is_empty() {
            for req in std::mem::take(&mut self.barred) {
                match self.purpose_of(req) {
                    Some(Purpose::Cancel { guard, job, .. }) => {
                        self.end(req, false);
                        self.cancel_unauthenticated(guard, &job);
                    }
                    Some(_) => {
                        let answer = Answer {
                            status: 401,
                            ..Answer::default()
                        };
                        self.answered(req, answer);
                    }
                    None => {}
                }
            }
        }
    }

    /// Reads request `req`'s body, within `limit`.
    pub(super) fn read_body(&mut self, req: ReqId, limit: Limit) {
        if let Some(open) = self.open.iter_mut().find(|o| o.req == req) {
            open.read = true;
        }
        self.emit(Effect::Read { req, limit });
    }

    /// Moves request `req`'s deadline to `ms` from now.
    pub(super) fn set_deadline(&mut self, req: ReqId, ms: u64) {
        let Some(old) = self
            .open
            .iter_mut()
            .find(|o| o.req == req)
            .and_then(|o| o.deadline.take())
        else {
            return;
        };
        self.clear_timer(old);
        let timer = self.set_timer(Wake::Deadline(req), ms);
        if let Some(open) = self.open.iter_mut().find(|o| o.req == req) {
            open.deadline = Some(timer);
        }
    }

    /// Whether request `req` has been answered (its body may still be coming).
    pub(super) fn is_answered(&self, req: ReqId) -> bool {
        self.open
            .iter()
            .any(|o| o.req == req && o.declared.is_some())
    }

    /// Sets a timer for `wake`, `ms` from now, at most [`MAX_TIMER_MS`] (no owner asks for
    /// longer: a waiter's deadline is a day at most).
    pub(super) fn set_timer(&mut self, wake: Wake, ms: u64) -> TimerId {
        let ms = ms.min(MAX_TIMER_MS);
        let timer = TimerId(self.id());
        self.timers.push((timer, wake));
        self.emit(Effect::SetTimer { timer, ms });
        timer
    }

    pub(super) fn clear_timer(&mut self, timer: TimerId) {
        let before = self.timers.len();
        self.timers.retain(|(t, _)| *t != timer);
        if self.timers.len() != before {
            self.emit(Effect::ClearTimer(timer));
        }
    }

    fn purpose_of(&self, req: ReqId) -> Option<Purpose> {
        self.open
            .iter()
            .find(|o| o.req == req)
            .map(|o| o.purpose.clone())
    }

    pub(super) fn answered(&mut self, req: ReqId, answer: Answer) {
        let Some(open) = self.open.iter_mut().find(|o| o.req == req) else {
            return;
        };
        if open.declared.is_some() {
            return;
        }
        open.declared = Some(answer.content_length.clone());
        let purpose = open.purpose.clone();
        // A 401 to any request of a guard, whatever it was for: nothing more is sent for its
        // session until the next login. Decided here, once, before its owner reads it.
        if let (401, Some(guard)) = (answer.status, purpose.guard()) {
            self.unauthorized(guard);
        }
        match purpose {
            Purpose::Cancel { guard, job, step } => {
                self.cancel_answered(guard, &job, step, req, &answer)
            }
            Purpose::Poll { guard } => self.poll_answered(guard, req, &answer),
            Purpose::Chart { guard, query } => self.chart_answered(guard, query, req, &answer),
            Purpose::Stop { guard, query } => self.stop_answered(guard, query, req, &answer),
            Purpose::Probe { url, .. } => self.probe_answered(&url, req, Some(&answer)),
            Purpose::Delivery { group, cancel, .. } => {
                self.end(req, true);
                // An HTML 404 (6.1.0's missing route) says the cancel endpoint is not there:
                // learned once, as a read cancel learns it, and not asked again.
                let read = reading(
                    answer.status,
                    answer.redirected,
                    answer.content_type.as_deref(),
                );
                if let (Some((template, contract)), 404, Read::Decided(Reply::NotJson)) =
                    (cancel, answer.status, read)
                {
                    let absent = super::super::response::Outcome::Unsupported;
                    self.servers
                        .cancel_settled(&template, contract, absent, true);
                }
                self.delivered(group);
            }
        }
    }

    /// No answer came: `fetch` failed, or its deadline passed (`timed_out`).
    fn failed(&mut self, req: ReqId, timed_out: bool) {
        let Some(purpose) = self.purpose_of(req) else {
            return;
        };
        self.end(req, false);
        match purpose {
            Purpose::Cancel { guard, job, step } => {
                self.cancel_failed(guard, &job, step, timed_out)
            }
            Purpose::Poll { guard } => self.poll_failed(guard, req),
            Purpose::Chart { guard, query } => self.chart_failed(guard, query, req, timed_out),
            Purpose::Stop { guard, query } => self.stop_failed(guard, query, req),
            Purpose::Probe { url, .. } => self.probe_answered(&url, req, None),
            Purpose::Delivery { group, .. } => self.delivered(group),
        }
    }

    pub(super) fn no_answer(&mut self, req: ReqId) {
        self.failed(req, false);
    }

    pub(super) fn body(&mut self, req: ReqId, body: Body) {
        let Some(purpose) = self.purpose_of(req) else {
            return;
        };
        match purpose {
            Purpose::Cancel { guard, job, step } => self.cancel_body(guard, &job, step, req, body),
            Purpose::Poll { guard } => self.poll_body(guard, req, body),
            Purpose::Chart { guard, query } => self.chart_body(guard, query, req, body),
            _ => self.end(req, false),
        }
    }

    pub(super) fn timer(&mut self, timer: TimerId) {
        let Some(at) = self.timers.iter().position(|(t, _)| *t == timer) else {
            return;
        };
        let (_, wake) = self.timers.remove(at);
        match wake {
            Wake::Deadline(req) => {
                // A deadline that came: its timer is gone already, the request ends.
                if let Some(open) = self.open.iter_mut().find(|o| o.req == req) {
                    open.deadline = None;
                }
                self.failed(req, true);
            }
            Wake::Retry { guard, job } => self.cancel_retry(guard, &job),
            Wake::Waits(guard) => self.waits_timer(guard),
            Wake::Follow(guard) => self.follow_timer(guard),
            Wake::Confirm { guard, query } => self.confirm_stop(guard, query),
            Wake::Delivered(group) => self.delivery_timeout(group),
            Wake::Asked { template, contract } => self.asked(&template, contract),
            Wake::HandOn => self.send_waiting(),
        }
    }
}
