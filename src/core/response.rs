//! What Superset's answer to `POST /api/v1/async_event/<job_id>/cancel` means.
//!
//! | status | outcome | retried |
//! |---|---|---|
//! | 2xx | `cancelled` | no |
//! | 401 | `unauthenticated` (no or expired `async-token` cookie) | no |
//! | 403 | `not_job_owner` (`Not authorized to cancel this job`) | never |
//! | 404 | `not_found` (`Job not found or already completed`) | no |
//! | 408, 429, 500, 502, 503, 504, network error | `failed`, retryable | yes |
//! | anything else | `failed`, not retryable | no |

use serde::Serialize;

/// How a cancel ended, as the app sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Cancelled,
    NotJobOwner,
    NotFound,
    Unauthenticated,
    Refused,
    Failed,
    Aborted,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Cancelled => "cancelled",
            Outcome::NotJobOwner => "not_job_owner",
            Outcome::NotFound => "not_found",
            Outcome::Unauthenticated => "unauthenticated",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
            Outcome::Aborted => "aborted",
        }
    }
}

/// The meaning of one HTTP status: the outcome, a message to show a person, and whether a
/// later attempt could succeed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Classification {
    pub outcome: Outcome,
    pub message: String,
    pub retryable: bool,
}

/// The statuses worth another attempt: the server or something in front of it was busy.
pub fn is_transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
}

pub const NOT_JOB_OWNER_MESSAGE: &str = "Not job owner: the server says this job was started by another user or in another session, so it cannot be cancelled from here";

/// Classifies a cancel response by its status. Pure: the same table the guard's own `cancel`
/// uses, for apps that send the request through their own client.
pub fn classify(status: u16) -> Classification {
    let (outcome, message, retryable) = match status {
        200..=299 => (Outcome::Cancelled, "Job cancelled".to_owned(), false),
        401 => (
            Outcome::Unauthenticated,
            "Your session has expired: sign in again to cancel jobs".to_owned(),
            false,
        ),
        403 => (
            Outcome::NotJobOwner,
            NOT_JOB_OWNER_MESSAGE.to_owned(),
            false,
        ),
        404 => (
            Outcome::NotFound,
            "The job was not found or has already finished".to_owned(),
            false,
        ),
        s if is_transient(s) => (
            Outcome::Failed,
            format!(
                "The server could not cancel the job right now (HTTP {s}); try again in a moment"
            ),
            true,
        ),
        s => (
            Outcome::Failed,
            format!("The server refused to cancel the job (HTTP {s})"),
            false,
        ),
    };
    Classification {
        outcome,
        message,
        retryable,
    }
}

/// A request that never got an answer (offline, DNS, CORS, connection reset).
pub fn network_failure() -> Classification {
    Classification {
        outcome: Outcome::Failed,
        message: "The cancel request could not reach the server; try again in a moment".to_owned(),
        retryable: true,
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
            let c = classify(status);
            assert_eq!((c.outcome, c.retryable), (outcome, retryable), "{status}");
            assert!(!c.message.is_empty());
        }
    }

    #[test]
    fn not_job_owner_is_never_retryable_and_says_so() {
        let c = classify(403);
        assert!(!c.retryable);
        assert!(c.message.starts_with("Not job owner"));
    }

    #[test]
    fn messages_name_the_status_when_it_failed() {
        assert!(classify(503).message.contains("503"));
        assert!(classify(418).message.contains("418"));
        assert!(network_failure().retryable);
    }
}
