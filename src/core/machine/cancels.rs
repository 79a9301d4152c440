//! `cancel()` in the machine: one cancel per record, from the local check to its last answer,
//! as [`CancelFlow`] decides each step (send, wait and retry, read a task's status back). A
//! second `cancel()` of a job whose cancel runs joins it. The first cancel to an endpoint not
//! known yet goes alone; the others wait for its answer, and an endpoint found absent (an
//! HTML 404: Superset 6.1.0; a task framework switched off) is not asked again. After a 401
//! nothing is sent until the next login.

use super::super::cancel::CancelCheck;
use super::super::cancel_flow::{Answer as CancelAnswer, CancelFlow, CancelOutcome, Step};
use super::super::response::{Contract, Outcome};
use super::super::tabs::Change;
use super::cancel_endpoints::absent_outcome;
use super::io::{Effect, GuardId, Method, PromiseId, ReqId, Settled, SignalId};
use super::requests::{CancelStep, Purpose, Wake};
use super::servers::Presence;
use super::{Machine, Platform};

/// Where a cancel is.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum At {
    /// Waiting for the first cancel to its endpoint to say whether the endpoint is there.
    Held,
    /// Its request is out; once answered, the status and `Retry-After` while its body is read.
    Sending(ReqId, Option<(u16, Option<String>)>),
    /// Waiting to send again.
    Retrying,
    /// Its task's status is being read back.
    Status(ReqId),
    /// Asking whether the task framework is switched off, with the outcome otherwise.
    Framework(ReqId, Box<CancelOutcome>),
}

/// One cancel running.
#[derive(Debug)]
pub(super) struct Cancel {
    pub(super) job: String,
    pub(super) flow: CancelFlow,
    pub(super) contract: Contract,
    /// The promises it settles; the first is the one a later `cancel(id)` of the job joins.
    pub(super) promises: Vec<PromiseId>,
    pub(super) signal: Option<SignalId>,
    pub(super) at: At,
    /// Its endpoint's template: what is learned of the endpoint is learned for it.
    pub(super) template: String,
    /// Whether an answer came (what is learned of the endpoint needs one).
    pub(super) answered: bool,
    /// It is its endpoint's first: the timer after which the others go anyway.
    pub(super) asked: Option<super::io::TimerId>,
}

/// What `cancel()` did with its promise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelStart {
    /// The promise given settles with this cancel's outcome.
    Own,
    /// A cancel of the job already runs: its promise is the one to hand back.
    Joined(PromiseId),
}

/// Why no cancel request may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Barred {
    /// The server answered 401: nothing is sent until the next login.
    Unauthenticated,
    /// Its endpoint is known absent, or the task framework is switched off.
    Absent,
}

/// The contract a cancel speaks: the record's kind (a task's, or else an async_event job's).
pub(super) fn contract_of(check: &CancelCheck) -> Contract {
    match check {
        CancelCheck::Allowed(record) if record.is_task() => Contract::Task,
        _ => Contract::AsyncEvent,
    }
}

impl<P: Platform> Machine<P> {
    /// `cancel(jobId, { signal })`: `promise` settles with its outcome, or the promise of the
    /// job's cancel already running is to be handed back.
    pub fn cancel(
        &mut self,
        id: GuardId,
        job: &str,
        signal: Option<(SignalId, bool)>,
        promise: PromiseId,
    ) -> CancelStart {
        let Some(guard) = self.live(id) else {
            let outcome = CancelFlow::new(job, Default::default(), Default::default(), 0).aborted();
            self.settle_promise(promise, outcome);
            return CancelStart::Own;
        };
        // The id its record is stored under (a task's uuid in any case): one cancel per record.
        let job = guard.store.record_id(job).into_owned();
        if let Some(running) = guard.cancels.iter_mut().find(|c| c.job == job) {
            let first = running.promises.first().copied();
            if first.is_none() {
                running.promises.push(promise);
            }
            if let Some((signal, _)) = signal {
                self.emit(Effect::Forget(signal));
            }
            return first.map_or(CancelStart::Own, CancelStart::Joined);
        }
        if let Some((signal, true)) = signal {
            // Aborted already: nothing leaves.
            self.emit(Effect::Forget(signal));
            let outcome =
                CancelFlow::new(&job, Default::default(), Default::default(), 0).aborted();
            self.settle_promise(promise, outcome);
            return CancelStart::Own;
        }
        self.begin_cancel(id, &job, Some(promise), signal.map(|(s, _)| s));
        self.settle_waits();
        CancelStart::Own
    }

    pub(super) fn settle_promise(&mut self, promise: PromiseId, outcome: CancelOutcome) {
        self.emit(Effect::Settle {
            promise,
            value: Settled::Cancel(outcome),
        });
    }

    /// Starts the cancel of `job` for guard `id` (a waiter's abort, a query's stop: no promise
    /// yet; `cancel(id)` joins it). Whether it runs (the session may cancel it).
    pub(super) fn start_cancel(&mut self, id: GuardId, job: &str) -> bool {
        let Some(guard) = self.live(id) else {
            return false;
        };
        if guard.cancels.iter().any(|c| c.job == job) {
            return true;
        }
        if !guard.store.check_cancel(job).is_allowed() {
            return false;
        }
        self.begin_cancel(id, job, None, None);
        true
    }

    /// The local check, then the first request (or a wait for the endpoint's first answer).
    pub(super) fn begin_cancel(
        &mut self,
        id: GuardId,
        job: &str,
        promise: Option<PromiseId>,
        signal: Option<SignalId>,
    ) {
        let Some(guard) = self.live(id) else {
            return;
        };
        let check = guard.store.check_cancel(job);
        let contract = contract_of(&check);
        let options = &guard.options;
        let flow = CancelFlow::new(job, options.retry, contract, options.timeout_ms);
        let template = options.cancel_template(contract).to_owned();
        let template = self.server_key(id, &template);
        let barred = self.cancel_barred(id, contract);
        let mut cancel = Cancel {
            job: job.to_owned(),
            flow,
            contract,
            promises: promise.into_iter().collect(),
            signal,
            at: At::Retrying,
            template,
            answered: false,
            asked: None,
        };
        let refused = cancel.flow.refusal(&check).or_else(|| match barred? {
            Barred::Unauthenticated => Some(unauthenticated_outcome(&cancel.flow)),
            Barred::Absent => Some(absent_outcome(&cancel.flow, contract)),
        });
        if let Some(refused) = refused {
            settle_cancel_with(self, id, cancel, refused);
            return;
        }
        match self.servers.cancel(&cancel.template, contract) {
            Some(Presence::Asking) => cancel.at = At::Held,
            None => cancel.asked = Some(self.ask(&cancel.template.clone(), contract)),
            _ => {}
        }
        let held = cancel.at == At::Held;
        if let Some(guard) = self.guard(id) {
            guard.cancels.push(cancel);
        }
        if !held {
            self.send_cancel(id, job);
        }
    }

    pub(super) fn set_cancel_at(&mut self, id: GuardId, job: &str, at: At) {
        if let Some(c) = self
            .guard(id)
            .and_then(|g| g.cancels.iter_mut().find(|c| c.job == job))
        {
            c.at = at;
        }
    }

    pub(super) fn cancel_of(&mut self, id: GuardId, job: &str) -> Option<&mut Cancel> {
        self.guard(id)?.cancels.iter_mut().find(|c| c.job == job)
    }

    /// What follows an answer, as the flow decides.
    pub(super) fn cancel_after(&mut self, id: GuardId, job: &str, answer: CancelAnswer) {
        let now = self.now();
        let Some(guard) = self.guards.iter_mut().find(|g| g.id == id) else {
            return;
        };
        let Some(cancel) = guard.cancels.iter_mut().find(|c| c.job == job) else {
            return;
        };
        match cancel.flow.after(&answer, now, &mut self.random) {
            Step::Finish(outcome) => self.cancel_finished(id, job, outcome),
            Step::Wait(ms) => {
                self.set_cancel_at(id, job, At::Retrying);
                self.set_timer(
                    Wake::Retry {
                        guard: id,
                        job: job.to_owned(),
                    },
                    ms,
                );
            }
            Step::ReadStatus => {
                let Some(guard) = self.guard(id) else {
                    return;
                };
                let url = guard.options.status_url_for(job);
                let timeout = guard.options.timeout_ms;
                let purpose = Purpose::Cancel {
                    guard: id,
                    job: job.to_owned(),
                    step: CancelStep::Status,
                };
                let req = self.send(purpose, Method::Get, url, None, false, timeout);
                self.set_cancel_at(id, job, At::Status(req));
            }
        }
    }

    /// A retry's wait came: the session may have changed meanwhile, in this tab or another.
    pub(super) fn cancel_retry(&mut self, id: GuardId, job: &str) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let check = guard.store.check_cancel(job);
        let refused = guard
            .cancels
            .iter()
            .find(|c| c.job == job)
            .and_then(|c| c.flow.refusal(&check));
        match refused {
            Some(refused) => self.cancel_finished(id, job, refused),
            None => self.send_cancel(id, job),
        }
    }

    /// The flow finished with `outcome`. A task's 404 (read as `not_job_owner` or
    /// `not_found`) may be a task framework switched off (every task route answers 404): one
    /// `GET` of a route it always has tells them apart.
    pub(super) fn cancel_finished(&mut self, id: GuardId, job: &str, outcome: CancelOutcome) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let task = guard
            .cancels
            .iter()
            .any(|c| c.job == job && c.contract == Contract::Task);
        if outcome.http_status == Some(404) && task {
            let url = guard.options.changes_url(None);
            let timeout = guard.options.timeout_ms;
            let purpose = Purpose::Cancel {
                guard: id,
                job: job.to_owned(),
                step: CancelStep::Framework,
            };
            let req = self.send(purpose, Method::Get, url, None, false, timeout);
            self.set_cancel_at(id, job, At::Framework(req, Box::new(outcome)));
            return;
        }
        self.cancel_settled(id, job, outcome);
    }

    pub(super) fn framework_answered(&mut self, id: GuardId, job: &str, off: bool) {
        let Some(At::Framework(_, outcome)) = self.cancel_of(id, job).map(|c| c.at.clone()) else {
            return;
        };
        let outcome = if off {
            // The task framework is off: a task guard's stream is too (its endpoint is absent
            // for every guard through its outcome, `unsupported`).
            if let Some(guard) = self.guard(id) {
                if guard.options.contract == Contract::Task {
                    guard.stream_absent = true;
                }
            }
            let flow = self.cancel_of(id, job).map(|c| c.flow.clone());
            match flow {
                Some(flow) => CancelOutcome {
                    http_status: Some(404),
                    attempts: outcome.attempts,
                    ..absent_outcome(&flow, Contract::Task)
                },
                None => *outcome,
            }
        } else {
            *outcome
        };
        self.cancel_settled(id, job, outcome);
    }

    /// The cancel ends with `outcome`: its record settled, what its endpoint said learned,
    /// its promises settled, the cancels that waited for its endpoint's answer started.
    pub(super) fn cancel_settled(&mut self, id: GuardId, job: &str, outcome: CancelOutcome) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let Some(at) = guard.cancels.iter().position(|c| c.job == job) else {
            return;
        };
        let cancel = guard.cancels.remove(at);
        settle_cancel_with(self, id, cancel, outcome);
    }

    /// The app's signal `signal` aborted: the cancels of guard `id` it started end.
    pub(super) fn abort_cancels_of(&mut self, id: GuardId, signal: SignalId) {
        let jobs: Vec<String> = self.guard(id).map_or_else(Vec::new, |g| {
            g.cancels
                .iter()
                .filter(|c| c.signal == Some(signal))
                .map(|c| c.job.clone())
                .collect()
        });
        for job in jobs {
            self.abort_cancel(id, &job);
        }
    }

    /// Ends every cancel of guard `id` as `aborted` (a logout, a session that ended or changed).
    pub(super) fn end_cancels(&mut self, id: GuardId) {
        let jobs: Vec<String> = self.guard(id).map_or_else(Vec::new, |g| {
            g.cancels.iter().map(|c| c.job.clone()).collect()
        });
        for job in jobs {
            self.abort_cancel(id, &job);
        }
    }

    pub(super) fn abort_cancel(&mut self, id: GuardId, job: &str) {
        let Some(cancel) = self.cancel_of(id, job) else {
            return;
        };
        let outcome = cancel.flow.aborted();
        match cancel.at.clone() {
            At::Sending(req, _) | At::Status(req) | At::Framework(req, _) => self.end(req, false),
            At::Retrying | At::Held => {}
        }
        let timers: Vec<_> = self
            .timers
            .iter()
            .filter(|(_, w)| matches!(w, Wake::Retry { guard, job: j } if *guard == id && j == job))
            .map(|(t, _)| *t)
            .collect();
        for timer in timers {
            self.clear_timer(timer);
        }
        self.cancel_settled(id, job, outcome);
    }
}

/// A cancel refused without a request after a 401.
pub(super) fn unauthenticated_outcome(flow: &CancelFlow) -> CancelOutcome {
    CancelOutcome {
        outcome: Outcome::Unauthenticated,
        message: "The server answered 401 to this session: nothing is sent until the next login"
            .to_owned(),
        ..flow.aborted()
    }
}

/// Settles `cancel` (taken off its guard) with `outcome`: the record, the endpoint, the
/// promises, the listeners, the cancels that waited for this endpoint.
fn settle_cancel_with<P: Platform>(
    m: &mut Machine<P>,
    id: GuardId,
    cancel: Cancel,
    outcome: CancelOutcome,
) {
    if let Some(timer) = cancel.asked {
        m.clear_timer(timer);
    }
    m.servers.cancel_settled(
        &cancel.template,
        cancel.contract,
        outcome.outcome,
        cancel.answered,
    );
    if let Some(guard) = m.guard(id) {
        guard.store.settle_cancel(
            &cancel.job,
            outcome.outcome,
            outcome.action.as_deref(),
            outcome.status,
        );
    }
    if let Some(signal) = cancel.signal {
        m.emit(Effect::Forget(signal));
    }
    for promise in &cancel.promises {
        m.settle_promise(*promise, outcome.clone());
    }
    // An answer from the server may have changed the record.
    if outcome.http_status.is_some() {
        m.changed(id, Change::JobsChanged);
    }
    m.release_held(&cancel.template, cancel.contract);
}
