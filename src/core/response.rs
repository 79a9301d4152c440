//! What Superset's answer to a cancel means, for each contract the guard speaks.
//!
//! `async_event` (`POST /api/v1/async_event/<job_id>/cancel`, PR #42305):
//!
//! | status | outcome | retried |
//! |---|---|---|
//! | 2xx | `cancelled` | no |
//! | 401 | `unauthenticated` (no or expired `async-token` cookie) | no |
//! | 403 | `not_job_owner` (`Not authorized to cancel this job`) | never |
//! | 404, JSON | `not_found` (`Job not found or already completed`) | no |
//!
//! `task` (`POST /api/v1/task/<uuid>/cancel`, the task framework):
//!
//! | status | outcome | retried |
//! |---|---|---|
//! | 200 `action: "aborted"` | `cancelled` | no |
//! | 200 `action: "unsubscribed"` or `"detached"` | `left`: it runs on for others | no |
//! | 401 | `unauthenticated` | no |
//! | 403 | `refused` (shared or system task, `force`) | never |
//! | 404, JSON | `not_job_owner`: not visible to this user (or ended and gone) | never |
//! | 422 | `refused`: not cancelled; the task has finished, or runs without an abort handler | never |
//!
//! A task's 422 says nothing certain on its own (Superset answers it both for a finished task
//! and for a running one that cannot be aborted, and its text is no contract): the guard's own
//! cancel then reads the task's status ([`after_status_read`]).
//!
//! Both: a 404 that is not JSON (Superset 6.1.0's HTML page for a route it does not have, or a
//! dev server's bare 404 with no `Content-Type`) is `unsupported`: this server cannot cancel.
//! A 2xx that is not the endpoint's answer is no cancel: one `fetch` reached by following a
//! redirect (Superset sends a signed-out request to its login page) is `unauthenticated`, one
//! whose body is not JSON `failed`. 408, 429, 500, 502, 503, 504, network errors and requests
//! that time out are `failed` and retried; anything else is `failed`, not retried.

use serde::{Deserialize, Deserializer, Serialize};

use super::error::GuardError;
use super::model::TaskStatus;
use super::names::names;
use super::quiet::json_within_limits;
use super::wire::AnyJson;

/// The server contract: `"async_event"` (PR #42305's endpoint) or `"task"` (today's task
/// framework).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum Contract {
    /// `POST /api/v1/async_event/<job_id>/cancel` (Superset between PR #42305 and #43407).
    #[default]
    AsyncEvent,
    /// `POST /api/v1/task/<uuid>/cancel`: today's task framework.
    Task,
}

/// The rule a contract keeps, as its error says it.
pub const CONTRACT_RULE: &str = "`contract` must be \"async_event\" or \"task\"";

impl Contract {
    /// Reads a contract as the API takes it: absent or `null` is the default; anything but the
    /// two names is refused (`invalid_options`).
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        Option::<Contract>::deserialize(value)
            .map(Option::unwrap_or_default)
            .map_err(|_| GuardError::InvalidOptions(CONTRACT_RULE.to_owned()))
    }
}

names! {
    /// How a cancel ended.
    pub enum Outcome ("not a cancel outcome") as "CancelOutcomeKind" {
        Cancelled = "cancelled",
        Left = "left",
        NotJobOwner = "not_job_owner",
        NotFound = "not_found",
        AlreadyFinished = "already_finished",
        Unsupported = "unsupported",
        Unauthenticated = "unauthenticated",
        Refused = "refused",
        Failed = "failed",
        Aborted = "aborted",
    }
}

/// What the body of an answer said, as far as the outcome depends on it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reply {
    /// Not read (the app classifies by status alone): a 404 counts as the server's own answer.
    #[default]
    Unread,
    /// Not the endpoint's JSON: another content type (an HTML error page), a body that does not
    /// parse, or one beyond the guard's limits ([`MAX_BODY_CHARS`], [`wire::MAX_DEPTH`]).
    ///
    /// [`MAX_BODY_CHARS`]: super::quiet::MAX_BODY_CHARS
    ///
    /// [`wire::MAX_DEPTH`]: super::wire::MAX_DEPTH
    NotJson,
    /// `fetch` followed a redirect: the answer is another page's (Superset's login page).
    Redirected,
    /// A JSON body, with its `action` when that is a string.
    Json { action: Option<String> },
    /// A 2xx JSON answer whose body could not be read at all: its `text()` threw or rejected
    /// (a body stream that broke after the headers). The status is the server's yes; where a
    /// contract needs the body (the task contract's `action`), the guard's own cancel reads
    /// the task back.
    Unreadable,
}

impl Reply {
    /// Reads a JSON body already parsed (a JS value or `serde_json::Value`), at most
    /// [`wire::MAX_DEPTH`](super::wire::MAX_DEPTH) levels deep like every JSON the guard reads:
    /// deeper is [`Reply::NotJson`]. JSON that is not an object with a string `action` is a JSON
    /// reply without one.
    pub fn from_json<'de, D: Deserializer<'de>>(value: D) -> Self {
        match AnyJson::deserialize(value) {
            Ok(AnyJson(value)) => Self::from_value(&value),
            Err(_) => Reply::NotJson,
        }
    }

    /// Reads a body from its text: JSON within the limits, or not.
    pub fn from_text(text: &str) -> Self {
        match json_within_limits(text) {
            Some(value) => Self::from_value(&value),
            None => Reply::NotJson,
        }
    }

    fn from_value(value: &serde_json::Value) -> Self {
        Reply::Json {
            action: value
                .get("action")
                .and_then(|a| a.as_str())
                .map(str::to_owned),
        }
    }

    fn action(&self) -> Option<&str> {
        match self {
            Reply::Json { action } => action.as_deref(),
            _ => None,
        }
    }

    /// The body is not the endpoint's own answer.
    fn is_foreign(&self) -> bool {
        matches!(self, Reply::NotJson | Reply::Redirected)
    }
}

/// The meaning of one answer: the outcome, a message to show a person, whether a later attempt
/// could succeed, and for the task contract's 200 the `action` the server took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "CancelClassification")
)]
pub struct Classification {
    #[cfg_attr(target_arch = "wasm32", tsify(type = "CancelOutcomeKind"))]
    pub outcome: Outcome,
    pub message: String,
    pub retryable: bool,
    /// The task contract's 200: what the server did (`aborted`, `unsubscribed`, `detached`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(type = "\"aborted\" | \"unsubscribed\" | \"detached\" | (string & {})")
    )]
    pub action: Option<String>,
}

/// The statuses worth another attempt: the server or something in front of it was busy.
pub fn is_transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

pub const NOT_JOB_OWNER_MESSAGE: &str = "Not job owner: the server says this job was started by another user or in another session, so it cannot be cancelled from here";

pub const NOT_TASK_OWNER_MESSAGE: &str = "Not job owner: the server does not show this task to you. Another user started it, or it has already ended and is gone";

/// Classifies a cancel answer by its status, the contract and what its body said. Pure: the
/// same table the guard's own `cancel` uses, for apps that send the request themselves.
pub fn classify(status: u16, contract: Contract, reply: &Reply) -> Classification {
    let task = contract == Contract::Task;
    let what = if task { "task" } else { "job" };
    let mut action = None;
    let (outcome, message, retryable) = match status {
        200..=299 if matches!(reply, Reply::Redirected) => (
            Outcome::Unauthenticated,
            format!("The server sent the cancel to another page (its sign-in page): sign in again to cancel {what}s"),
            false,
        ),
        200..=299 if matches!(reply, Reply::NotJson) => (
            Outcome::Failed,
            format!("The server's answer (HTTP {status}) was not the cancel endpoint's: the {what} was not cancelled"),
            false,
        ),
        200..=299 if matches!(reply, Reply::Unreadable) => (
            Outcome::Cancelled,
            format!("The server accepted the cancel (HTTP {status}); its answer could not be read"),
            false,
        ),
        200..=299 if task => match reply.action() {
            Some(a @ ("unsubscribed" | "detached")) => {
                action = Some(a.to_owned());
                let message = if a == "detached" {
                    "You stopped watching this task in this tab; it runs on for your other tabs"
                } else {
                    "You left this task; it runs on for the other users who asked for it"
                };
                (Outcome::Left, message.to_owned(), false)
            }
            a => {
                action = a.map(str::to_owned);
                (Outcome::Cancelled, "Task cancelled".to_owned(), false)
            }
        },
        200..=299 => (Outcome::Cancelled, "Job cancelled".to_owned(), false),
        401 => (
            Outcome::Unauthenticated,
            format!("Your session has expired: sign in again to cancel {what}s"),
            false,
        ),
        404 if reply.is_foreign() => (
            Outcome::Unsupported,
            "Cancel is not available on this server (no cancel endpoint answered: Superset 6.1.0 has none; on another, check `cancelUrl` and the page's proxy): the job runs until it ends"
                .to_owned(),
            false,
        ),
        403 if task => (
            Outcome::Refused,
            "The server refused to cancel this task (HTTP 403): it is shared with others or a system task"
                .to_owned(),
            false,
        ),
        403 => (
            Outcome::NotJobOwner,
            NOT_JOB_OWNER_MESSAGE.to_owned(),
            false,
        ),
        404 if task => (
            Outcome::NotJobOwner,
            NOT_TASK_OWNER_MESSAGE.to_owned(),
            false,
        ),
        404 => (
            Outcome::NotFound,
            "The job was not found or has already finished".to_owned(),
            false,
        ),
        422 if task => (Outcome::Refused, TASK_422_MESSAGE.to_owned(), false),
        s if is_transient(s) => (
            Outcome::Failed,
            format!(
                "The server could not cancel the {what} right now (HTTP {s}); try again in a moment"
            ),
            true,
        ),
        s => (
            Outcome::Failed,
            format!("The server refused to cancel the {what} (HTTP {s})"),
            false,
        ),
    };
    Classification {
        outcome,
        message,
        retryable,
        action,
    }
}

const TASK_422_MESSAGE: &str = "The server did not cancel this task (HTTP 422): it has finished, or it is running and cannot be stopped";

/// A task's 422, once its status was read back (`GET /api/v1/task/<uuid>/status`): a terminal
/// status is `already_finished`; a running one a refusal (the task has no abort handler: it
/// cannot be stopped); no status (no answer, or one the guard does not know) leaves the 422's
/// own `refused`.
pub fn after_status_read(status: Option<TaskStatus>) -> Classification {
    let (outcome, message) = match status {
        Some(s) if s.is_terminal() => (
            Outcome::AlreadyFinished,
            format!("The task has already finished ({})", s.as_str()),
        ),
        Some(_) => (
            Outcome::Refused,
            "This task cannot be stopped: it is still running, and it cannot be aborted".to_owned(),
        ),
        None => (Outcome::Refused, TASK_422_MESSAGE.to_owned()),
    };
    Classification {
        outcome,
        message,
        retryable: false,
        action: None,
    }
}

/// A task's 2xx whose body could not be read ([`Reply::Unreadable`]), once its status was read
/// back (`GET /api/v1/task/<uuid>/status`): the server accepted the cancel, and the status says
/// what it did. `aborting` or `aborted`: `cancelled`; still `pending` or `in_progress`: `left`
/// (it runs on for others: this tab detached, or this user unsubscribed); another terminal
/// status: `already_finished`; no status read: `cancelled`, as far as the answer says.
pub fn after_accepted_status_read(status: Option<TaskStatus>) -> Classification {
    let (outcome, message) = match status {
        Some(TaskStatus::Aborting | TaskStatus::Aborted) => {
            (Outcome::Cancelled, "Task cancelled".to_owned())
        }
        Some(TaskStatus::Pending | TaskStatus::InProgress) => (
            Outcome::Left,
            "The server accepted the cancel and the task runs on for others".to_owned(),
        ),
        Some(s) => (
            Outcome::AlreadyFinished,
            format!("The task has already finished ({})", s.as_str()),
        ),
        None => (
            Outcome::Cancelled,
            "The server accepted the cancel (HTTP 200); its answer could not be read".to_owned(),
        ),
    };
    Classification {
        outcome,
        message,
        retryable: false,
        action: None,
    }
}

/// A request that never got an answer (offline, DNS, CORS, connection reset).
pub fn network_failure() -> Classification {
    Classification {
        outcome: Outcome::Failed,
        message: "The cancel request could not reach the server; try again in a moment".to_owned(),
        retryable: true,
        action: None,
    }
}

/// A request that got no answer within the per-attempt timeout (`timeoutMs`).
pub fn timed_out(timeout_ms: u64) -> Classification {
    Classification {
        outcome: Outcome::Failed,
        message: format!(
            "The server did not answer the cancel within {timeout_ms} ms; try again in a moment"
        ),
        retryable: true,
        action: None,
    }
}

#[cfg(test)]
mod tests;
