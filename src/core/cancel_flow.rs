//! One cancel, from the local check to the last answer: what to do next after each step, and
//! the outcome the app is given. The browser shell only sends requests and waits; every
//! decision is made here, natively testable with an injected clock and random source.

use super::cancel::{CancelCheck, RefusalReason};
use serde::Serialize;
use serde_json::Value;

use super::error::GuardError;
use super::ids::quote;
use super::model::TaskStatus;
use super::random::Random;
use super::response::{
    after_accepted_status_read, after_status_read, classify, network_failure, timed_out,
    Classification, Contract, Outcome, Reply,
};
use super::retry::RetryPolicy;

/// The result of `cancel`, ready to show: it never rejects. Its TypeScript declaration,
/// `CancelOutcomeFields`, is narrowed by `CancelOutcome`: only a `refused` outcome has a
/// `reason`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "CancelOutcomeFields", missing_as_null)
)]
pub struct CancelOutcome {
    #[cfg_attr(target_arch = "wasm32", tsify(type = "CancelOutcomeKind"))]
    pub outcome: Outcome,
    pub job_id: String,
    /// Ready to show to a person.
    pub message: String,
    /// Whether trying again later could succeed.
    pub retryable: bool,
    /// The last HTTP status, or `null` when no answer came (or nothing was sent).
    pub http_status: Option<u16>,
    /// Requests sent; 0 when decided locally.
    pub attempts: u32,
    /// Why a `refused` outcome refused, when the guard or the task's status knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<RefusalReason>,
    /// The task contract's 200: what the server did (`aborted`, `unsubscribed`, `detached`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(type = "\"aborted\" | \"unsubscribed\" | \"detached\" | (string & {})")
    )]
    pub action: Option<String>,
    /// The task's status as read back after a 422, for its record (not shown to the app).
    #[serde(skip)]
    pub status: Option<TaskStatus>,
}

impl CancelOutcome {
    /// The outcome of a `cancel()` whose options cannot be taken (`message` says why):
    /// `refused` with `invalid_input`, nothing sent. An option is never ignored: a cancel the
    /// app believes it can abort, run with no signal, could not be stopped.
    pub fn invalid_input(job_id: String, message: String) -> Self {
        CancelOutcome {
            outcome: Outcome::Refused,
            job_id,
            message,
            retryable: false,
            http_status: None,
            attempts: 0,
            reason: Some(RefusalReason::InvalidInput),
            action: None,
            status: None,
        }
    }
}

/// Reads `cancel()`'s options as JSON writes them, without `signal` (the shell takes it out
/// first: JSON cannot hold it): `null` (none given) or an object with no other key. Anything
/// else is refused, naming what is wrong, in the words of `waitFor()`'s and `query()`'s
/// options. (The parsed value, not a serde struct: options with nothing to read need no
/// reader of their own in the module.)
pub fn read_options(options: &Value) -> Result<(), GuardError> {
    match options {
        Value::Null => Ok(()),
        // `signal` is a known key (the shell takes it out first).
        Value::Object(keys) => match keys.keys().find(|k| *k != "signal") {
            None => Ok(()),
            Some(key) => Err(GuardError::InvalidOptions(
                [
                    "unknown option `",
                    &quote(key),
                    "` of cancel (known: signal)",
                ]
                .concat(),
            )),
        },
        _ => Err(GuardError::InvalidOptions(
            "cancel's options must be an object, null or undefined".to_owned(),
        )),
    }
}

/// What one answer to a cancel request was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The server answered with this status (and maybe a `Retry-After` header).
    Status {
        status: u16,
        retry_after: Option<String>,
        reply: Reply,
    },
    /// No answer: the request failed on the way.
    NetworkError,
    /// No answer within the per-attempt timeout.
    TimedOut,
}

/// What the shell does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Wait this many milliseconds, check again, then send the next request.
    Wait(u64),
    /// A task's 422, or its 2xx whose body could not be read: read the task's status once
    /// (`GET /api/v1/task/<uuid>/status`, no retry) and give it to
    /// [`CancelFlow::after_status`].
    ReadStatus,
    /// Done: give the app this outcome.
    Finish(CancelOutcome),
}

/// The state of one cancel: which job, under which contract (the record's), the retry policy,
/// the per-attempt timeout, how many requests went out.
#[derive(Clone, Debug)]
pub struct CancelFlow {
    job_id: String,
    policy: RetryPolicy,
    contract: Contract,
    timeout_ms: u64,
    sent: u32,
    /// The status whose answer sent the flow to read the task back (422, or a 2xx).
    read_after: u16,
}

impl CancelFlow {
    pub fn new(job_id: &str, policy: RetryPolicy, contract: Contract, timeout_ms: u64) -> Self {
        Self {
            job_id: job_id.to_owned(),
            policy,
            contract,
            timeout_ms,
            sent: 0,
            read_after: 422,
        }
    }

    pub fn sent(&self) -> u32 {
        self.sent
    }

    /// Counts a request as sent; call just before sending it.
    pub fn sending(&mut self) {
        self.sent = self.sent.saturating_add(1);
    }

    /// The outcome of a local check that refused: `not_job_owner` for a record of another
    /// owner, `refused` with the reason otherwise. `None` when the check allows the cancel.
    pub fn refusal(&self, check: &CancelCheck) -> Option<CancelOutcome> {
        let CancelCheck::Refused { reason, message } = check else {
            return None;
        };
        let reason = reason.outcome_reason();
        let outcome = if reason.is_some() {
            Outcome::Refused
        } else {
            Outcome::NotJobOwner
        };
        Some(CancelOutcome {
            outcome,
            job_id: self.job_id.clone(),
            message: message.clone(),
            retryable: false,
            http_status: None,
            attempts: self.sent,
            reason,
            action: None,
            status: None,
        })
    }

    /// The outcome when the app's signal or a logout ended the cancel.
    pub fn aborted(&self) -> CancelOutcome {
        CancelOutcome {
            outcome: Outcome::Aborted,
            job_id: self.job_id.clone(),
            message: "Cancel aborted before the server answered".to_owned(),
            retryable: false,
            http_status: None,
            attempts: self.sent,
            reason: None,
            action: None,
            status: None,
        }
    }

    /// Decides what follows an answer: finish, wait and retry a transient failure while
    /// attempts remain, or (a task's 422) read the task's status. A 403 finishes at once: it is
    /// never retried.
    pub fn after(&mut self, answer: &Answer, now_ms: u64, random: &mut dyn Random) -> Step {
        let (classification, status, retry_after) = match answer {
            Answer::Status {
                status: 422,
                reply: Reply::Json { .. } | Reply::NotJson | Reply::Unread,
                ..
            } if self.contract == Contract::Task => {
                self.read_after = 422;
                return Step::ReadStatus;
            }
            Answer::Status {
                status: status @ 200..=299,
                reply: Reply::Unreadable,
                ..
            } if self.contract == Contract::Task => {
                self.read_after = *status;
                return Step::ReadStatus;
            }
            Answer::Status {
                status,
                retry_after,
                reply,
            } => (
                classify(*status, self.contract, reply),
                Some(*status),
                retry_after.as_deref(),
            ),
            Answer::NetworkError => (network_failure(), None, None),
            Answer::TimedOut => (timed_out(self.timeout_ms), None, None),
        };
        if classification.retryable && self.sent < self.policy.attempts {
            return Step::Wait(self.policy.delay_ms(self.sent, retry_after, now_ms, random));
        }
        Step::Finish(self.finish(classification, status))
    }

    /// The outcome of a task's 422 once its status was read back: `None` when no answer gave
    /// one the guard knows. A running task cannot be stopped: `refused`, reason
    /// `not_abortable`.
    pub fn after_status(&self, status: Option<TaskStatus>) -> CancelOutcome {
        if self.read_after != 422 {
            let mut outcome =
                self.finish(after_accepted_status_read(status), Some(self.read_after));
            outcome.status = status;
            return outcome;
        }
        let mut outcome = self.finish(after_status_read(status), Some(422));
        if status.is_some_and(|s| !s.is_terminal()) {
            outcome.reason = Some(RefusalReason::NotAbortable);
        }
        outcome.status = status;
        outcome
    }

    fn finish(&self, c: Classification, http_status: Option<u16>) -> CancelOutcome {
        CancelOutcome {
            outcome: c.outcome,
            job_id: self.job_id.clone(),
            message: c.message,
            retryable: c.retryable,
            http_status,
            attempts: self.sent,
            reason: None,
            action: c.action,
            status: None,
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::core::cancel::CancelRefusal;
    use crate::core::doubles::SequenceRandom;

    #[test]
    fn cancel_options_are_nothing_but_their_signal() {
        let read = |text: &str| {
            let value = crate::core::quiet::parse(text).unwrap();
            read_options(&value).map_err(|e| e.message())
        };
        for no_options in ["null", "{}", r#"{"signal": null}"#] {
            assert_eq!(read(no_options), Ok(()), "{no_options}");
        }
        let unknown = read(r#"{"timeoutMs": 5}"#).unwrap_err();
        assert!(
            unknown.contains("`timeoutMs` of cancel (known: signal)"),
            "{unknown}"
        );
        let not_object = read("[]").unwrap_err();
        assert!(
            not_object.contains("cancel's options must be an object"),
            "{not_object}"
        );
        let out = CancelOutcome::invalid_input("job-1".to_owned(), "why".to_owned());
        assert_eq!(
            (out.outcome, out.reason, out.attempts, out.http_status),
            (Outcome::Refused, Some(RefusalReason::InvalidInput), 0, None)
        );
    }

    fn status(s: u16) -> Answer {
        Answer::Status {
            status: s,
            retry_after: None,
            reply: Reply::Unread,
        }
    }

    /// Runs a flow against scripted answers; returns the waits and the outcome.
    fn run(policy: RetryPolicy, answers: &[Answer]) -> (Vec<u64>, CancelOutcome) {
        let mut flow = CancelFlow::new("job-1", policy, Contract::AsyncEvent, 10_000);
        let mut random = SequenceRandom::new(vec![0.5]);
        let mut waits = Vec::new();
        for answer in answers {
            flow.sending();
            match flow.after(answer, 0, &mut random) {
                Step::Wait(ms) => waits.push(ms),
                Step::Finish(outcome) => return (waits, outcome),
                Step::ReadStatus => panic!("{answer:?} asked for a task's status"),
            }
        }
        panic!("the flow wanted more answers than scripted: {waits:?}");
    }

    #[test]
    fn cancelled_on_the_first_answer() {
        let (waits, out) = run(RetryPolicy::default(), &[status(200)]);
        assert!(waits.is_empty());
        assert_eq!(out.outcome, Outcome::Cancelled);
        assert_eq!(
            (out.attempts, out.http_status, out.retryable),
            (1, Some(200), false)
        );
    }

    #[test]
    fn forbidden_is_never_retried() {
        let policy = RetryPolicy {
            attempts: 10,
            ..RetryPolicy::default()
        };
        let (waits, out) = run(policy, &[status(403)]);
        assert!(waits.is_empty());
        assert_eq!(out.outcome, Outcome::NotJobOwner);
        assert_eq!(out.attempts, 1);
        assert!(!out.retryable);
        assert!(out.message.starts_with("Not job owner"));
    }

    #[test]
    fn not_found_and_unauthenticated_are_final() {
        for (s, outcome) in [
            (404, Outcome::NotFound),
            (401, Outcome::Unauthenticated),
            (400, Outcome::Failed),
        ] {
            let (waits, out) = run(RetryPolicy::default(), &[status(s)]);
            assert!(waits.is_empty(), "{s}");
            assert_eq!((out.outcome, out.attempts), (outcome, 1));
        }
    }

    #[test]
    fn transient_failures_retry_with_backoff_then_succeed() {
        let (waits, out) = run(
            RetryPolicy::default(),
            &[status(503), status(503), status(200)],
        );
        // Full jitter at 0.5: half of 200, then half of 400.
        assert_eq!(waits, [100, 200]);
        assert_eq!(out.outcome, Outcome::Cancelled);
        assert_eq!(out.attempts, 3);
    }

    #[test]
    fn retries_run_out_as_a_retryable_failure() {
        let (waits, out) = run(
            RetryPolicy::default(),
            &[Answer::NetworkError, status(502), status(504)],
        );
        assert_eq!(waits.len(), 2);
        assert_eq!(out.outcome, Outcome::Failed);
        assert_eq!(
            (out.attempts, out.http_status, out.retryable),
            (3, Some(504), true)
        );
        let (_, out) = run(
            RetryPolicy {
                attempts: 1,
                ..RetryPolicy::default()
            },
            &[Answer::NetworkError],
        );
        assert_eq!(
            (out.outcome, out.attempts, out.http_status),
            (Outcome::Failed, 1, None)
        );
        assert!(out.retryable);
    }

    #[test]
    fn retry_after_sets_the_wait() {
        let answers = [
            Answer::Status {
                status: 429,
                retry_after: Some("1".into()),
                reply: Reply::Unread,
            },
            status(200),
        ];
        let (waits, out) = run(RetryPolicy::default(), &answers);
        assert_eq!(waits, [1000]);
        assert_eq!(out.attempts, 2);
    }

    #[test]
    fn local_refusals_become_outcomes_without_requests() {
        let flow = CancelFlow::new("j", RetryPolicy::default(), Contract::AsyncEvent, 10_000);
        let owner = CancelCheck::Refused {
            reason: CancelRefusal::NotJobOwner,
            message: "Not job owner: x".into(),
        };
        let out = flow.refusal(&owner).unwrap();
        assert_eq!(
            (out.outcome, out.attempts, out.reason),
            (Outcome::NotJobOwner, 0, None)
        );
        let unknown = CancelCheck::Refused {
            reason: CancelRefusal::UnknownJob,
            message: "Unknown job j".into(),
        };
        let out = flow.refusal(&unknown).unwrap();
        assert_eq!(out.outcome, Outcome::Refused);
        assert_eq!(out.reason, Some(RefusalReason::UnknownJob));
        let v: serde_json::Value = serde_json::to_value(&out).unwrap();
        assert_eq!(v["reason"], "unknown_job");
        assert_eq!(v["jobId"], "j");
        assert_eq!(v["httpStatus"], serde_json::Value::Null);
        let aborted: serde_json::Value = serde_json::to_value(flow.aborted()).unwrap();
        assert_eq!(aborted["outcome"], "aborted");
        assert!(aborted.get("reason").is_none());
    }

    #[test]
    fn task_answers_are_final_and_carry_the_action() {
        let answer = |status, reply| Answer::Status {
            status,
            retry_after: None,
            reply,
        };
        let json = |action: Option<&str>| Reply::Json {
            action: action.map(str::to_owned),
        };
        for (a, outcome) in [
            (answer(200, json(Some("detached"))), Outcome::Left),
            (answer(200, json(Some("aborted"))), Outcome::Cancelled),
            (answer(404, json(None)), Outcome::NotJobOwner),
            (answer(403, json(None)), Outcome::Refused),
            (answer(404, Reply::NotJson), Outcome::Unsupported),
        ] {
            let policy = RetryPolicy {
                attempts: 10,
                ..RetryPolicy::default()
            };
            let mut flow = CancelFlow::new("t", policy, Contract::Task, 10_000);
            flow.sending();
            let Step::Finish(out) = flow.after(&a, 0, &mut SequenceRandom::new(vec![0.5])) else {
                panic!("{a:?} was retried")
            };
            assert_eq!((out.outcome, out.attempts), (outcome, 1), "{a:?}");
            if outcome == Outcome::Left {
                assert_eq!(out.action.as_deref(), Some("detached"));
                let v: serde_json::Value = serde_json::to_value(&out).unwrap();
                assert_eq!(v["outcome"], "left");
                assert_eq!(v["action"], "detached");
            }
        }
    }

    fn task_flow(attempts: u32) -> CancelFlow {
        let policy = RetryPolicy {
            attempts,
            ..RetryPolicy::default()
        };
        CancelFlow::new("t", policy, Contract::Task, 10_000)
    }

    #[test]
    fn a_tasks_422_reads_the_status_once_and_decides_by_it() {
        let mut random = SequenceRandom::new(vec![0.5]);
        for body in [
            r#"{"message": "Task could not be aborted."}"#,
            r#"{"message": "Task t is in progress but has not registered an abort handler (is_abortable is not true)"}"#,
            "<html>",
        ] {
            let mut flow = task_flow(10);
            flow.sending();
            let answer = Answer::Status {
                status: 422,
                retry_after: None,
                reply: Reply::from_text(body),
            };
            assert_eq!(flow.after(&answer, 0, &mut random), Step::ReadStatus);
            let done = flow.after_status(Some(TaskStatus::Success));
            assert_eq!(
                (done.outcome, done.http_status, done.attempts, done.reason),
                (Outcome::AlreadyFinished, Some(422), 1, None)
            );
            assert_eq!(done.status, Some(TaskStatus::Success));
            let running = flow.after_status(Some(TaskStatus::InProgress));
            assert_eq!(
                (running.outcome, running.reason, running.status),
                (
                    Outcome::Refused,
                    Some(RefusalReason::NotAbortable),
                    Some(TaskStatus::InProgress)
                )
            );
            let v: serde_json::Value = serde_json::to_value(&running).unwrap();
            assert_eq!(v["reason"], "not_abortable");
            assert!(
                v.get("status").is_none(),
                "the status is for the record only"
            );
            // No status read back (no answer, or one the guard does not know).
            let none = flow.after_status(None);
            assert_eq!(
                (none.outcome, none.reason, none.status, none.retryable),
                (Outcome::Refused, None, None, false)
            );
        }
        // Not on the async_event contract: its 422 is a plain failure.
        let mut flow = CancelFlow::new("j", RetryPolicy::default(), Contract::AsyncEvent, 10_000);
        flow.sending();
        let Step::Finish(out) = flow.after(&status(422), 0, &mut random) else {
            panic!("an async_event 422 read a task status")
        };
        assert_eq!((out.outcome, out.retryable), (Outcome::Failed, false));
    }

    #[test]
    fn a_2xx_whose_body_cannot_be_read_is_the_servers_yes() {
        let mut random = SequenceRandom::new(vec![0.5]);
        let unreadable = Answer::Status {
            status: 200,
            retry_after: None,
            reply: Reply::Unreadable,
        };
        // async_event: the status decides.
        let mut flow = CancelFlow::new("j", RetryPolicy::default(), Contract::AsyncEvent, 10_000);
        flow.sending();
        let Step::Finish(out) = flow.after(&unreadable, 0, &mut random) else {
            panic!("an async_event 2xx was not final")
        };
        assert_eq!(
            (out.outcome, out.http_status, out.retryable),
            (Outcome::Cancelled, Some(200), false)
        );
        // task: the action is in the body; the task is read back to say what happened.
        let mut flow = task_flow(3);
        flow.sending();
        assert_eq!(flow.after(&unreadable, 0, &mut random), Step::ReadStatus);
        for (status, outcome) in [
            (Some(TaskStatus::Aborted), Outcome::Cancelled),
            (Some(TaskStatus::Aborting), Outcome::Cancelled),
            (Some(TaskStatus::InProgress), Outcome::Left),
            (Some(TaskStatus::Pending), Outcome::Left),
            (Some(TaskStatus::Success), Outcome::AlreadyFinished),
            (None, Outcome::Cancelled),
        ] {
            let out = flow.after_status(status);
            assert_eq!(
                (out.outcome, out.http_status, out.status, out.reason),
                (outcome, Some(200), status, None),
                "{status:?}"
            );
        }
        // A 422 after it reads as a 422 again.
        flow.sending();
        assert_eq!(flow.after(&status(422), 0, &mut random), Step::ReadStatus);
        assert_eq!(
            flow.after_status(Some(TaskStatus::Success)).http_status,
            Some(422)
        );
    }

    #[test]
    fn a_request_that_times_out_is_a_retryable_failure() {
        let mut flow = task_flow(2);
        let mut random = SequenceRandom::new(vec![0.5]);
        flow.sending();
        assert!(matches!(
            flow.after(&Answer::TimedOut, 0, &mut random),
            Step::Wait(_)
        ));
        flow.sending();
        let Step::Finish(out) = flow.after(&Answer::TimedOut, 0, &mut random) else {
            panic!("retried past its attempts")
        };
        assert_eq!(
            (out.outcome, out.retryable, out.attempts, out.http_status),
            (Outcome::Failed, true, 2, None)
        );
        assert!(out.message.contains("10000 ms"), "{}", out.message);
    }

    #[test]
    fn sent_counts_the_requests() {
        let mut flow = task_flow(3);
        assert_eq!(flow.sent(), 0);
        flow.sending();
        flow.sending();
        assert_eq!(flow.sent(), 2);
        assert_eq!(flow.aborted().attempts, 2);
    }
}
