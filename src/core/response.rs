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
//! | 422 | `already_finished` (`refused` when the task is not abortable) | never |
//!
//! Both: a 404 that is not JSON (Superset 6.1.0's HTML page for a route it does not have) is
//! `unsupported`: this server cannot cancel; 408, 429, 500, 502, 503, 504 and network errors
//! are `failed` and retried; anything else is `failed`, not retried.

use serde::{Deserialize, Deserializer, Serialize};

use super::error::GuardError;
use super::wire::Field;

/// The server contract the guard speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// How a cancel ended, as the app sees it; it crosses as its name ([`as_str`](Self::as_str)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub enum Outcome {
    Cancelled,
    Left,
    NotJobOwner,
    NotFound,
    AlreadyFinished,
    Unsupported,
    Unauthenticated,
    Refused,
    Failed,
    Aborted,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Cancelled => "cancelled",
            Outcome::Left => "left",
            Outcome::NotJobOwner => "not_job_owner",
            Outcome::NotFound => "not_found",
            Outcome::AlreadyFinished => "already_finished",
            Outcome::Unsupported => "unsupported",
            Outcome::Unauthenticated => "unauthenticated",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
            Outcome::Aborted => "aborted",
        }
    }
}

impl From<Outcome> for &'static str {
    fn from(outcome: Outcome) -> Self {
        outcome.as_str()
    }
}

/// What the body of an answer said, as far as the outcome depends on it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reply {
    /// Not read (the app classifies by status alone): a 404 counts as the server's own answer.
    #[default]
    Unread,
    /// Not JSON: an HTML error page, so not the endpoint's own answer.
    NotJson,
    /// A JSON body, with its `action` and `message` when they are strings.
    Json {
        action: Option<String>,
        message: Option<String>,
    },
}

impl Reply {
    /// Reads a JSON body already parsed (a JS value or `serde_json::Value`); any JSON that is
    /// not an object with string fields is a JSON reply without them.
    pub fn from_json<'de, D: Deserializer<'de>>(value: D) -> Self {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct Wire {
            action: Field<String>,
            message: Field<String>,
        }
        let w = Wire::deserialize(value).unwrap_or_default();
        Reply::Json {
            action: w.action.valid(),
            message: w.message.valid(),
        }
    }

    /// Reads a body from its text: JSON or not.
    pub fn from_text(text: &str) -> Self {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) => Self::from_json(&value),
            Err(_) => Reply::NotJson,
        }
    }

    fn action(&self) -> Option<&str> {
        match self {
            Reply::Json { action, .. } => action.as_deref(),
            _ => None,
        }
    }

    fn message(&self) -> &str {
        match self {
            Reply::Json {
                message: Some(m), ..
            } => m,
            _ => "",
        }
    }
}

/// The meaning of one answer: the outcome, a message to show a person, whether a later attempt
/// could succeed, and for the task contract's 200 the `action` the server took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Classification {
    pub outcome: Outcome,
    pub message: String,
    pub retryable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
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
        404 if *reply == Reply::NotJson => (
            Outcome::Unsupported,
            "Cancel is not available on this server (it has no cancel endpoint): the job runs until it ends"
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
        422 if task && reply.message().contains("not abortable") => (
            Outcome::Refused,
            "This task cannot be cancelled: the server says it is not abortable".to_owned(),
            false,
        ),
        422 if task => (
            Outcome::AlreadyFinished,
            "The task has already finished".to_owned(),
            false,
        ),
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

/// A request that never got an answer (offline, DNS, CORS, connection reset).
pub fn network_failure() -> Classification {
    Classification {
        outcome: Outcome::Failed,
        message: "The cancel request could not reach the server; try again in a moment".to_owned(),
        retryable: true,
        action: None,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn the_contract_table() {
        let table = [
            (200, Outcome::Cancelled, false),
            (204, Outcome::Cancelled, false),
            (401, Outcome::Unauthenticated, false),
            (403, Outcome::NotJobOwner, false),
            (404, Outcome::NotFound, false),
            (408, Outcome::Failed, true),
            (429, Outcome::Failed, true),
            (500, Outcome::Failed, true),
            (502, Outcome::Failed, true),
            (503, Outcome::Failed, true),
            (504, Outcome::Failed, true),
            (400, Outcome::Failed, false),
            (405, Outcome::Failed, false),
            (409, Outcome::Failed, false),
            (501, Outcome::Failed, false),
            (302, Outcome::Failed, false),
            (0, Outcome::Failed, false),
        ];
        for (status, outcome, retryable) in table {
            let c = classify(status, Contract::AsyncEvent, &Reply::Unread);
            assert_eq!((c.outcome, c.retryable), (outcome, retryable), "{status}");
            assert!(!c.message.is_empty());
        }
    }

    #[test]
    fn not_job_owner_is_never_retryable_and_says_so() {
        let c = classify(403, Contract::AsyncEvent, &Reply::Unread);
        assert!(!c.retryable);
        assert!(c.message.starts_with("Not job owner"));
    }

    #[test]
    fn messages_name_the_status_when_it_failed() {
        assert!(classify(503, Contract::AsyncEvent, &Reply::Unread)
            .message
            .contains("503"));
        assert!(classify(418, Contract::AsyncEvent, &Reply::Unread)
            .message
            .contains("418"));
        assert!(network_failure().retryable);
    }

    fn json(action: Option<&str>, message: Option<&str>) -> Reply {
        Reply::Json {
            action: action.map(str::to_owned),
            message: message.map(str::to_owned),
        }
    }

    #[test]
    fn the_task_contract_table() {
        let t = Contract::Task;
        let table = [
            (200, json(Some("aborted"), None), Outcome::Cancelled, false),
            (200, json(Some("unsubscribed"), None), Outcome::Left, false),
            (200, json(Some("detached"), None), Outcome::Left, false),
            (200, Reply::Unread, Outcome::Cancelled, false),
            (401, Reply::Unread, Outcome::Unauthenticated, false),
            (403, json(None, Some("Forbidden")), Outcome::Refused, false),
            (
                404,
                json(None, Some("Not found")),
                Outcome::NotJobOwner,
                false,
            ),
            (404, Reply::Unread, Outcome::NotJobOwner, false),
            (404, Reply::NotJson, Outcome::Unsupported, false),
            (
                422,
                json(None, Some("Task could not be aborted.")),
                Outcome::AlreadyFinished,
                false,
            ),
            (
                422,
                json(None, Some("Task is not abortable (no abort handler)")),
                Outcome::Refused,
                false,
            ),
            (500, Reply::Unread, Outcome::Failed, true),
            (429, Reply::Unread, Outcome::Failed, true),
            (400, Reply::Unread, Outcome::Failed, false),
        ];
        for (status, reply, outcome, retryable) in table {
            let c = classify(status, t, &reply);
            assert_eq!(
                (c.outcome, c.retryable),
                (outcome, retryable),
                "{status} {reply:?}"
            );
        }
        let left = classify(200, t, &json(Some("detached"), None));
        assert_eq!(left.action.as_deref(), Some("detached"));
        let owner = classify(404, t, &json(None, None));
        assert!(owner.message.starts_with("Not job owner"));
        assert!(owner.message.contains("ended"));
        assert!(classify(401, t, &Reply::Unread).message.contains("tasks"));
    }

    #[test]
    fn an_html_404_means_no_cancel_endpoint_under_either_contract() {
        for contract in [Contract::AsyncEvent, Contract::Task] {
            let c = classify(
                404,
                contract,
                &Reply::from_text("<!DOCTYPE html><title>404</title>"),
            );
            assert_eq!((c.outcome, c.retryable), (Outcome::Unsupported, false));
            assert!(c.message.contains("not available on this server"));
        }
        let json_404 = Reply::from_text(r#"{"message":"Job not found or already completed"}"#);
        assert_eq!(
            classify(404, Contract::AsyncEvent, &json_404).outcome,
            Outcome::NotFound
        );
        // JSON that is not an object is still the server's JSON.
        assert_eq!(Reply::from_text("[1]"), json(None, None));
        assert_eq!(Reply::from_text(r#"{"action": 5}"#), json(None, None));
    }

    #[test]
    fn messages_are_single_spaced_sentences() {
        let replies = [
            Reply::Unread,
            Reply::NotJson,
            json(Some("detached"), Some("Task is not abortable")),
        ];
        for contract in [Contract::AsyncEvent, Contract::Task] {
            for reply in &replies {
                for status in [200, 401, 403, 404, 418, 422, 503] {
                    let m = classify(status, contract, reply).message;
                    assert!(!m.contains("  ") && m.trim() == m, "{status}: {m:?}");
                }
            }
        }
    }

    #[test]
    fn contracts_are_read_by_name() {
        use serde_json::json;
        assert_eq!(Contract::read(&json!(null)).unwrap(), Contract::AsyncEvent);
        assert_eq!(Contract::read(json!("task")).unwrap(), Contract::Task);
        assert_eq!(
            Contract::read(json!("async_event")).unwrap(),
            Contract::AsyncEvent
        );
        for bad in [json!("tasks"), json!(1), json!({})] {
            let err = Contract::read(&bad).unwrap_err();
            assert_eq!(err.code(), "invalid_options");
            assert!(err.to_string().contains("contract"));
        }
    }
}
