//! What a `waitFor` settles with: its outcome, why it was refused, and the words of each. The
//! rules that decide which are [`waiters`](super::waiters)'.

use serde::Serialize;
use serde_json::Value;

use super::ids::quote;
use super::model::JobRecord;
use super::names::names;

names! {
    /// How a `waitFor` settled.
    pub enum WaitResult ("not a wait outcome") as "WaitOutcomeKind" {
        /// Every job ended well (`done`, `success`).
        Done = "done",
        /// A job ended otherwise (`error`, `cancelled`, `failure`, `aborted`, `timed_out`):
        /// `jobId` names it.
        Failed = "failed",
        /// A job is not this session's (or there is no session, or the input was not a job):
        /// nothing was sent.
        Refused = "refused",
        /// No progress for `staleTimeoutMs`.
        Stale = "stale",
        /// The waiter's signal aborted it.
        Aborted = "aborted",
    }
}

names! {
    /// Why a `waitFor` was refused.
    pub enum WaitRefusal ("not a wait refusal") as "WaitRefusalReason" {
        /// Nobody is signed in.
        NoSession = "no_session",
        /// The session has no record of the job (never recorded here, expired, or gone).
        UnknownJob = "unknown_job",
        /// The job belongs to another user or session.
        NotJobOwner = "not_job_owner",
        /// What was given is neither a `202` body nor job ids, or an option is wrong.
        InvalidInput = "invalid_input",
        /// Another user or guest signed in (here or in another tab) while it waited.
        UserChanged = "user_changed",
        /// The server answered `401` to the session's poll (`follow()`, here or in another
        /// tab): nothing will be heard until the next `login`.
        Unauthenticated = "unauthenticated",
        /// A job's record expired (`ttlSeconds`) while it waited.
        Expired = "expired",
        /// A job's record went while it waited (evicted over `maxJobs`, removed by page code or
        /// another tab, or this tab left the task).
        Removed = "removed",
        /// The server answered `403` to the session's poll (a role without the Task
        /// permission): nothing will be heard until the next `login`.
        Forbidden = "forbidden",
        /// The server has no stream to follow (its task framework is switched off: every task
        /// route answers 404).
        Unsupported = "unsupported",
    }
}

/// What `waitFor` settles with; it never rejects.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "WaitOutcome", missing_as_null)
)]
pub struct WaitOutcome {
    #[cfg_attr(target_arch = "wasm32", tsify(type = "WaitOutcomeKind"))]
    pub outcome: WaitResult,
    /// The jobs (a task's uuid for a task) the waiter awaited.
    pub job_ids: Vec<String>,
    /// `failed`: the job that failed; `refused`: the job refused, where one was.
    pub job_id: Option<String>,
    /// `failed`: the job's final status.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "JobStatus | TaskStatus | null"))]
    pub status: Option<&'static str>,
    /// `failed`: the job's errors (a task's `semantic_result_error` where it was read back, as
    /// `[{ message }]`).
    #[cfg_attr(target_arch = "wasm32", tsify(type = "unknown[]"))]
    pub errors: Vec<Value>,
    /// `refused`: why.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "WaitRefusalReason | null"))]
    pub reason: Option<WaitRefusal>,
    /// `aborted`: the jobs whose cancel the abort started (those no other waiter awaits);
    /// `guard.cancel(id)` hands back each one's running cancel.
    pub cancelling: Vec<String>,
    /// Ready to show to a person.
    pub message: String,
}

impl WaitOutcome {
    pub(super) fn new(outcome: WaitResult, job_ids: &[String], message: String) -> Self {
        Self {
            outcome,
            job_ids: job_ids.to_vec(),
            job_id: None,
            status: None,
            errors: Vec::new(),
            reason: None,
            cancelling: Vec::new(),
            message,
        }
    }

    /// Refused before anything was sent.
    pub fn refused(
        job_ids: &[String],
        job_id: Option<&str>,
        reason: WaitRefusal,
        message: String,
    ) -> Self {
        Self {
            job_id: job_id.map(str::to_owned),
            reason: Some(reason),
            ..Self::new(WaitResult::Refused, job_ids, message)
        }
    }

    /// Every job ended well.
    pub fn done(job_ids: &[String]) -> Self {
        let message = format!("{} job(s) done", job_ids.len());
        Self::new(WaitResult::Done, job_ids, message)
    }

    /// No progress for `stale_ms`.
    pub fn stale(job_ids: &[String], stale_ms: u64) -> Self {
        let message =
            format!("No progress for {stale_ms} ms: stopped waiting (the jobs were not cancelled)");
        Self::new(WaitResult::Stale, job_ids, message)
    }

    /// Aborted by the waiter's signal; `cancelling` the jobs whose cancel it started.
    pub fn aborted(job_ids: &[String], cancelling: Vec<String>) -> Self {
        let message = if cancelling.is_empty() {
            "Stopped waiting; no job was cancelled (another waiter awaits it, or it ended)"
                .to_owned()
        } else {
            format!(
                "Stopped waiting; cancelling {} job(s) nobody else awaits",
                cancelling.len()
            )
        };
        Self {
            cancelling,
            ..Self::new(WaitResult::Aborted, job_ids, message)
        }
    }
}

/// A refusal and its message.
pub type Refused = (WaitRefusal, String);

/// A job ended otherwise than well: its status, its errors and what they said.
pub(super) fn failed(job_ids: &[String], record: &JobRecord) -> WaitOutcome {
    let status = record.status().as_str();
    let errors = record.errors().to_vec();
    let said = errors
        .iter()
        .find_map(|e| e.get("message").and_then(Value::as_str))
        .map(|m| format!(": {}", quote(m)))
        .unwrap_or_default();
    WaitOutcome {
        job_id: Some(record.job_id.to_string()),
        status: Some(status),
        errors,
        message: format!("Job {} ended {status}{said}", quote(&record.job_id)),
        ..WaitOutcome::new(WaitResult::Failed, job_ids, String::new())
    }
}
