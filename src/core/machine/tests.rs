//! The machine's tests: a page of guards driven as the browser's executor drives it, every
//! effect logged and every event fed back by hand (a server that answers what a test says, a
//! clock that moves when told).
#![cfg(test)]

use serde_json::{json, Value};

use super::*;
use crate::core::chart::QuerySettings;
use crate::core::doubles::{ManualClock, SequenceRandom, SharedMemory};
use crate::core::endpoints::Limit;
use crate::core::model::JobMetadata;
use crate::core::options::GuardOptions;
use crate::core::quiet::Json;
use crate::core::session::Session;
use crate::core::store::JobStore;
use crate::core::tabs::{Change, Source};
use crate::core::wait_input::{read_input, WaitSettings};

pub(super) struct Native;

impl Platform for Native {
    type Storage = SharedMemory;
    type Clock = ManualClock;
    type Random = SequenceRandom;
}

pub(super) const T0: u64 = 1_700_000_000_000;
pub(super) const JOB: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";
pub(super) const TASK: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01";

/// A page, as the executor sees it: the machine, and what it asked for.
pub(super) struct Page {
    pub(super) m: Machine<Native>,
    pub(super) clock: ManualClock,
    pub(super) storage: SharedMemory,
    /// Every request sent, in order.
    pub(super) sent: Vec<Request>,
    /// The requests not ended yet.
    pub(super) open: Vec<ReqId>,
    pub(super) ended: Vec<(ReqId, bool)>,
    pub(super) reads: Vec<(ReqId, Limit)>,
    /// The timers set, with when they are due.
    pub(super) timers: Vec<(TimerId, u64)>,
    pub(super) settled: Vec<(PromiseId, Settled)>,
    pub(super) notified: Vec<(GuardId, Change, Source)>,
    pub(super) posted: Vec<Effect>,
    pub(super) forgotten: Vec<SignalId>,
    pub(super) locks: Vec<(LockId, String)>,
    next: u32,
}

impl Page {
    pub(super) fn new() -> Self {
        Self::over(SharedMemory::new(), ManualClock::at(T0))
    }

    /// Another tab of the same browser: the same storage and clock.
    pub(super) fn over(storage: SharedMemory, clock: ManualClock) -> Self {
        Page {
            m: Machine::new(clock.clone(), SequenceRandom::new(vec![0.25, 0.5, 0.75])),
            clock,
            storage,
            sent: Vec::new(),
            open: Vec::new(),
            ended: Vec::new(),
            reads: Vec::new(),
            timers: Vec::new(),
            settled: Vec::new(),
            notified: Vec::new(),
            posted: Vec::new(),
            forgotten: Vec::new(),
            locks: Vec::new(),
            next: 0,
        }
    }

    pub(super) fn guard(&mut self, options: Value) -> GuardId {
        let options = GuardOptions::read(Json(&options)).unwrap();
        let store = match options.storage {
            crate::core::options::StorageKind::Memory => {
                JobStore::private(SharedMemory::new(), None, self.clock.clone(), &options)
            }
            crate::core::options::StorageKind::Local => {
                JobStore::new(self.storage.clone(), self.clock.clone(), &options)
            }
        };
        let id = self.m.add_guard(options, store, 0);
        self.pump();
        id
    }

    /// A guard signed in as user 1.
    pub(super) fn signed_in(&mut self, options: Value) -> GuardId {
        let g = self.guard(options);
        self.m.login(g, session(1)).unwrap();
        self.pump();
        g
    }

    /// Takes the machine's effects into the logs; a lock asked for is granted at once (this
    /// tab is the browser's only one).
    pub(super) fn pump(&mut self) {
        loop {
            let granted = self.take_effects();
            if granted.is_empty() {
                break;
            }
            for lock in granted {
                self.m.handle(Event::Locked(lock));
            }
        }
    }

    fn take_effects(&mut self) -> Vec<LockId> {
        let now = self.clock.now_ms();
        let mut granted = Vec::new();
        for effect in self.m.effects() {
            match effect {
                Effect::Send(request) => {
                    self.open.push(request.req);
                    self.sent.push(request);
                }
                Effect::Read { req, limit } => self.reads.push((req, limit)),
                Effect::End { req, drain } => {
                    self.open.retain(|r| *r != req);
                    self.ended.push((req, drain));
                }
                Effect::SetTimer { timer, ms } => self.timers.push((timer, now + ms)),
                Effect::ClearTimer(timer) => self.timers.retain(|(t, _)| *t != timer),
                Effect::Settle { promise, value } => self.settled.push((promise, value)),
                Effect::Forget(signal) => self.forgotten.push(signal),
                Effect::Notify {
                    guard,
                    change,
                    source,
                } => self.notified.push((guard, change, source)),
                Effect::Lock { lock, name } => {
                    self.locks.push((lock, name));
                    granted.push(lock);
                }
                effect @ (Effect::Post { .. } | Effect::Unlock(_) | Effect::Gone(_)) => {
                    self.posted.push(effect)
                }
            }
        }
        granted
    }

    pub(super) fn handle(&mut self, event: Event) {
        self.m.handle(event);
        self.pump();
    }

    pub(super) fn promise(&mut self) -> PromiseId {
        self.next += 1;
        PromiseId(self.next)
    }

    pub(super) fn signal(&mut self) -> SignalId {
        self.next += 1;
        SignalId(self.next)
    }

    /// Moves the clock `ms` on, firing each timer that comes due, in order.
    pub(super) fn advance(&mut self, ms: u64) {
        let end = self.clock.now_ms() + ms;
        loop {
            let due = self
                .timers
                .iter()
                .filter(|(_, at)| *at <= end)
                .min_by_key(|(_, at)| *at)
                .copied();
            let Some((timer, at)) = due else {
                break;
            };
            self.timers.retain(|(t, _)| *t != timer);
            self.clock.set(at.max(self.clock.now_ms()));
            self.handle(Event::Timer(timer));
        }
        self.clock.set(end);
    }

    /// The requests sent to `url` (its path, query left out) with `method`.
    pub(super) fn to(&self, method: Method, path: &str) -> Vec<Request> {
        self.sent
            .iter()
            .filter(|r| r.method == method && r.url.split('?').next() == Some(path))
            .cloned()
            .collect()
    }

    /// The last open request to `path`.
    pub(super) fn open_to(&self, path: &str) -> Option<ReqId> {
        self.sent
            .iter()
            .rev()
            .find(|r| r.url.split('?').next() == Some(path) && self.open.contains(&r.req))
            .map(|r| r.req)
    }

    /// Answers request `req` with `status`: `body` as JSON (its text when the machine reads
    /// it), or `html`.
    pub(super) fn answer(&mut self, req: ReqId, status: u16, body: Option<Value>) {
        let content_type = body.as_ref().map(|_| "application/json".to_owned());
        self.answer_with(req, status, content_type, body.map(|b| b.to_string()));
    }

    pub(super) fn answer_html(&mut self, req: ReqId, status: u16) {
        let html = "<html>Not Found</html>".to_owned();
        self.answer_with(req, status, Some("text/html".to_owned()), Some(html));
    }

    pub(super) fn answer_with(
        &mut self,
        req: ReqId,
        status: u16,
        content_type: Option<String>,
        text: Option<String>,
    ) {
        let answer = Answer {
            status,
            content_type,
            ..Answer::default()
        };
        self.handle(Event::Answered(req, answer));
        let read = self.reads.iter().rev().find(|(r, _)| *r == req).copied();
        if let Some((_, limit)) = read {
            self.reads.retain(|(r, _)| *r != req);
            let body = match (limit, text) {
                (Limit::Result, Some(text)) if serde_json::from_str::<Value>(&text).is_ok() => {
                    Body::Kept
                }
                (_, Some(text)) => Body::Text(text),
                (_, None) => Body::Broken,
            };
            self.handle(Event::Body(req, body));
        }
    }

    pub(super) fn outcome(&self, promise: PromiseId) -> Option<&Settled> {
        self.settled
            .iter()
            .find(|(p, _)| *p == promise)
            .map(|(_, v)| v)
    }

    pub(super) fn cancel_outcome(
        &self,
        promise: PromiseId,
    ) -> crate::core::cancel_flow::CancelOutcome {
        match self.outcome(promise) {
            Some(Settled::Cancel(o)) => o.clone(),
            other => panic!("not a settled cancel: {other:?}"),
        }
    }

    pub(super) fn query_outcome(
        &self,
        promise: PromiseId,
    ) -> (crate::core::query::QueryOutcome, Option<ReqId>) {
        match self.outcome(promise) {
            Some(Settled::Query(o, r)) => ((**o).clone(), *r),
            other => panic!("not a settled query: {other:?}"),
        }
    }

    pub(super) fn wait_outcome(
        &self,
        promise: PromiseId,
    ) -> crate::core::wait_outcome::WaitOutcome {
        match self.outcome(promise) {
            Some(Settled::Wait(o)) => o.clone(),
            other => panic!("not a settled wait: {other:?}"),
        }
    }

    pub(super) fn record(&mut self, g: GuardId, job: &str) {
        let meta = JobMetadata::read(Json(&job_meta(job))).unwrap();
        self.m.record_job(g, meta).unwrap();
        self.pump();
    }

    pub(super) fn cancel(&mut self, g: GuardId, job: &str, signal: Option<SignalId>) -> PromiseId {
        let promise = self.promise();
        self.m.cancel(g, job, signal.map(|s| (s, false)), promise);
        self.pump();
        promise
    }

    pub(super) fn query(&mut self, g: GuardId, signal: Option<SignalId>) -> PromiseId {
        self.query_with(g, signal, json!({}))
    }

    pub(super) fn query_with(
        &mut self,
        g: GuardId,
        signal: Option<SignalId>,
        options: Value,
    ) -> PromiseId {
        let promise = self.promise();
        let settings = QuerySettings::read(Json(&options)).unwrap();
        let body = json!({ "datasource": { "id": 1, "type": "table" }, "queries": [{}] });
        let Value::Object(body) = body else {
            unreachable!()
        };
        self.m
            .query(g, body, settings, signal.map(|s| (s, false)), promise);
        self.pump();
        promise
    }

    pub(super) fn wait(&mut self, g: GuardId, input: Value, signal: Option<SignalId>) -> PromiseId {
        let promise = self.promise();
        let input = read_input(&input).unwrap();
        let settings = WaitSettings::read(Json(&json!(null))).unwrap();
        self.m
            .wait_for(g, input, settings, signal.map(|s| (s, false)), promise);
        self.pump();
        promise
    }

    /// Whether the machine keeps nothing running: no request, no timer.
    pub(super) fn quiet(&self) -> bool {
        self.m.is_idle() && self.open.is_empty() && self.timers.is_empty()
    }
}

pub(super) fn session(user: u32) -> Session {
    Session::from_login(Json(&json!({ "userId": user }))).unwrap()
}

pub(super) fn job_meta(job: &str) -> Value {
    json!({"channel_id": "c1", "job_id": job, "user_id": "1", "status": "pending",
           "errors": [], "result_url": null})
}

pub(super) fn tasks_body() -> Value {
    json!({ "task_ids": [TASK], "cursor": "2026-12-07T10:00:00", "tab_id": "tab-1" })
}

pub(super) const CANCEL: &str = "/api/v1/async_event/10a0bd9a-03c8-4737-9345-f4234ba86512/cancel";
pub(super) const CHART: &str = "/api/v1/chart/data";
pub(super) const STOP: &str = "/api/v1/chart/data/stop";

mod cancels;
mod queries;
mod stops;
mod waits;
