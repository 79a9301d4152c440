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
mod tests;
