//! `waitFor`'s rules: the page's waiters, each awaiting a set of the session's jobs, and how each
//! settles. A waiter settles `done` when every job of it ended well, `failed` at the first that
//! ended otherwise, `refused` when a job is not the session's (nothing is sent), `stale` after
//! `staleTimeoutMs` without progress (a status that moved), and `aborted` by its signal; on an
//! abort or the page's end, only the jobs no other waiter of the page awaits are cancelled (a
//! task shared by two charts runs on for the other). Superset's own frontend keeps the same
//! registry (its task-framework `asyncEvent.ts`: a task id maps to a set of waiters).
//!
//! Pure: the shell reads the records and the clock, and sends what the rules name.

use serde::Serialize;
use serde_json::Value;

use super::cancel::{CancelCheck, CancelRefusal};
use super::error::GuardError;
use super::ids::quote;
use super::model::{JobMetadata, JobRecord};
use super::names::names;
use super::quiet::Json;
use super::statuses::{JobStatus, Status, TaskStatus};
use super::task::Submission;

/// Superset's `GLOBAL_ASYNC_QUERIES_POLLING_STALE_TIMEOUT`: 600 s without progress.
pub const DEFAULT_STALE_MS: u64 = 600_000;
/// The longest `staleTimeoutMs` taken: a day.
pub const MAX_STALE_MS: u64 = 86_400_000;
/// The most jobs one waiter awaits.
pub const MAX_JOBS_PER_WAITER: usize = 100;

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
    fn new(outcome: WaitResult, job_ids: &[String], message: String) -> Self {
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

/// What `waitFor` was given: job ids (a string or an array of them), or a `202` body to record
/// first (a task-framework submission, or an async_event job's metadata).
#[derive(Debug)]
pub enum WaitInput {
    Ids(Vec<String>),
    Tasks(Submission),
    Job(JobMetadata),
}

/// A refusal and its message.
pub type Refused = (WaitRefusal, String);

/// Reads `waitFor`'s first argument: an id, up to [`MAX_JOBS_PER_WAITER`] ids (each once), or
/// a `202` body (one with `task_ids` or `async_job` is a task submission).
pub fn read_input(value: &Value) -> Result<WaitInput, Refused> {
    let invalid = |m: &str| (WaitRefusal::InvalidInput, m.to_owned());
    match value {
        Value::String(id) => Ok(WaitInput::Ids(vec![id.clone()])),
        Value::Array(ids) => {
            if ids.is_empty() || ids.len() > MAX_JOBS_PER_WAITER {
                return Err(invalid("waitFor needs 1 to 100 job ids"));
            }
            let mut list: Vec<String> = Vec::with_capacity(ids.len());
            for id in ids {
                let id = id
                    .as_str()
                    .ok_or_else(|| invalid("a job id must be a string"))?;
                if !list.iter().any(|seen| seen == id) {
                    list.push(id.to_owned());
                }
            }
            Ok(WaitInput::Ids(list))
        }
        Value::Object(body) if body.contains_key("task_ids") || body.contains_key("async_job") => {
            Submission::read(Json(value))
                .map(WaitInput::Tasks)
                .map_err(|e| refused_by(&e))
        }
        Value::Object(_) => JobMetadata::read(Json(value))
            .map(WaitInput::Job)
            .map_err(|e| refused_by(&e)),
        _ => Err(invalid(
            "waitFor needs a 202 body, a job id or an array of job ids",
        )),
    }
}

/// The refusal for an error recording a `202` body raised.
pub fn refused_by(error: &GuardError) -> Refused {
    let reason = match error {
        GuardError::NoSession => WaitRefusal::NoSession,
        GuardError::NotJobOwner { .. } => WaitRefusal::NotJobOwner,
        _ => WaitRefusal::InvalidInput,
    };
    (reason, error.to_string())
}

/// `staleTimeoutMs`: absent is Superset's 600 s; else a whole number of ms from 1 to a day.
pub fn stale_ms(value: Option<f64>) -> Result<u64, Refused> {
    match value {
        None => Ok(DEFAULT_STALE_MS),
        Some(ms) if ms.fract() == 0.0 && (1.0..=MAX_STALE_MS as f64).contains(&ms) => Ok(ms as u64),
        Some(_) => Err((
            WaitRefusal::InvalidInput,
            "`staleTimeoutMs` must be a whole number of milliseconds from 1 to 86400000".to_owned(),
        )),
    }
}

/// A waiter's `cancelOnClose`: absent (`None`) is the guard's option; a value that is not a
/// boolean (`Err`) is refused.
pub fn cancel_on_close(given: Result<Option<bool>, ()>, guards: bool) -> Result<bool, Refused> {
    match given {
        Ok(value) => Ok(value.unwrap_or(guards)),
        Err(()) => Err((
            WaitRefusal::InvalidInput,
            "`cancelOnClose` must be true or false".to_owned(),
        )),
    }
}

/// Whether `waitFor` may await `job_id`, as `check` (the cancel's check) found it: the session's
/// record of it, ended or not (a cancel's check refuses an ended job; a wait settles on it).
/// The refusal otherwise, in a wait's words.
pub fn admit(check: &CancelCheck, job_id: &str) -> Result<(), Refused> {
    let CancelCheck::Refused { reason, .. } = check else {
        return Ok(());
    };
    let job = quote(job_id);
    Err(match reason {
        CancelRefusal::AlreadyFinished => return Ok(()),
        CancelRefusal::NoSession => (
            WaitRefusal::NoSession,
            format!("No session: nobody is signed in (or the session ended), so job {job} is not awaited"),
        ),
        CancelRefusal::UnknownJob => (
            WaitRefusal::UnknownJob,
            format!("Unknown job {job}: it was not recorded in this session, or its record expired or was removed"),
        ),
        CancelRefusal::NotJobOwner => (
            WaitRefusal::NotJobOwner,
            format!("Not job owner: job {job} was started by another user or in another session"),
        ),
    })
}

/// Whether an ended status is the job's success.
fn succeeded(status: Status) -> bool {
    status == JobStatus::Done || status == TaskStatus::Success
}

/// One waiter: its jobs, the status each had when last read, when one last moved.
#[derive(Clone, Debug)]
struct Waiter {
    id: u32,
    jobs: Vec<String>,
    seen: Vec<Option<Status>>,
    stale_ms: u64,
    progress_at: u64,
    /// Whether the page's end cancels its jobs (`cancelOnClose`, the waiter's or the guard's).
    cancel_on_close: bool,
}

/// The page's waiters (one guard's).
#[derive(Debug, Default)]
pub struct Waiters {
    waiters: Vec<Waiter>,
    next_id: u32,
}

impl Waiters {
    /// Adds a waiter for `jobs` (each a record id the session holds, checked by [`admit`]);
    /// its id. `cancel_on_close`: whether the page's end cancels them.
    pub fn add(
        &mut self,
        jobs: Vec<String>,
        stale_ms: u64,
        now_ms: u64,
        cancel_on_close: bool,
    ) -> u32 {
        self.next_id = self.next_id.wrapping_add(1);
        let id = self.next_id;
        let seen = vec![None; jobs.len()];
        self.waiters.push(Waiter {
            id,
            jobs,
            seen,
            stale_ms,
            progress_at: now_ms,
            cancel_on_close,
        });
        id
    }

    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Whether waiter `id` still waits.
    pub fn has(&self, id: u32) -> bool {
        self.waiters.iter().any(|w| w.id == id)
    }

    /// Removes waiter `id` (aborted): its jobs, and those of them no other waiter awaits (to
    /// cancel), in its order. `None` if it had already settled.
    pub fn remove(&mut self, id: u32) -> Option<(Vec<String>, Vec<String>)> {
        let at = self.waiters.iter().position(|w| w.id == id)?;
        let waiter = self.waiters.remove(at);
        let alone = waiter
            .jobs
            .iter()
            .filter(|job| !self.awaits(job))
            .cloned()
            .collect();
        Some((waiter.jobs, alone))
    }

    /// Whether any waiter awaits `job`.
    fn awaits(&self, job: &str) -> bool {
        self.waiters.iter().any(|w| w.jobs.iter().any(|j| j == job))
    }

    /// What the page's end cancels: every job a waiter with `cancel_on_close` awaits and no
    /// waiter without it does, each once, in the order first awaited (the waiters are the
    /// page's own).
    pub fn closing(&self) -> Vec<String> {
        let kept = |job: &String| {
            self.waiters
                .iter()
                .any(|w| !w.cancel_on_close && w.jobs.contains(job))
        };
        let mut all: Vec<String> = Vec::new();
        for job in self
            .waiters
            .iter()
            .filter(|w| w.cancel_on_close)
            .flat_map(|w| &w.jobs)
        {
            if !all.contains(job) && !kept(job) {
                all.push(job.clone());
            }
        }
        all
    }

    /// Reads every waiter's jobs (`read`: the session's record of an id, `Err` with the
    /// refusal when it has none) and settles those that can: `(id, outcome)` for each, removed.
    /// A status that moved restarts the waiter's stale clock.
    pub fn check(
        &mut self,
        now_ms: u64,
        mut read: impl FnMut(&str) -> Result<JobRecord, (WaitRefusal, String)>,
    ) -> Vec<(u32, WaitOutcome)> {
        let mut settled = Vec::new();
        self.waiters
            .retain_mut(|waiter| match settle(waiter, now_ms, &mut read) {
                Some(outcome) => {
                    settled.push((waiter.id, outcome));
                    false
                }
                None => true,
            });
        settled
    }

    /// When the first waiter goes stale, if nothing moves before.
    pub fn next_deadline(&self) -> Option<u64> {
        self.waiters
            .iter()
            .map(|w| w.progress_at.saturating_add(w.stale_ms))
            .min()
    }
}

/// How `waiter` stands now: `Some` when it settles.
fn settle(
    waiter: &mut Waiter,
    now_ms: u64,
    read: &mut impl FnMut(&str) -> Result<JobRecord, (WaitRefusal, String)>,
) -> Option<WaitOutcome> {
    let mut all_done = true;
    let mut moved = false;
    for (job, seen) in waiter.jobs.iter().zip(waiter.seen.iter_mut()) {
        let record = match read(job) {
            Ok(record) => record,
            Err((reason, message)) => {
                return Some(WaitOutcome::refused(
                    &waiter.jobs,
                    Some(job),
                    reason,
                    message,
                ));
            }
        };
        let status = record.status();
        if *seen != Some(status) {
            moved |= seen.is_some();
            *seen = Some(status);
        }
        if !status.is_terminal() {
            all_done = false;
        } else if !succeeded(status) {
            return Some(failed(&waiter.jobs, &record));
        }
    }
    if all_done {
        let message = format!("{} job(s) done", waiter.jobs.len());
        return Some(WaitOutcome::new(WaitResult::Done, &waiter.jobs, message));
    }
    if moved {
        waiter.progress_at = now_ms;
    }
    (now_ms.saturating_sub(waiter.progress_at) >= waiter.stale_ms).then(|| {
        let message = format!(
            "No progress for {} ms: stopped waiting (the jobs were not cancelled)",
            waiter.stale_ms
        );
        WaitOutcome::new(WaitResult::Stale, &waiter.jobs, message)
    })
}

fn failed(job_ids: &[String], record: &JobRecord) -> WaitOutcome {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::RecordKind;
    use crate::core::names::assert_names;
    use std::collections::HashMap;

    fn task(id: &str, status: TaskStatus) -> JobRecord {
        let mut r = JobRecord::task(
            crate::core::ids::TaskId::parse(id).unwrap(),
            Some("1".into()),
            None,
            1,
        );
        r.set_task_status(status);
        r
    }

    const A: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01";
    const B: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c02";

    fn reader<'a>(
        records: &'a HashMap<&str, JobRecord>,
    ) -> impl FnMut(&str) -> Result<JobRecord, (WaitRefusal, String)> + 'a {
        |id| {
            records
                .get(id)
                .cloned()
                .ok_or((WaitRefusal::UnknownJob, format!("unknown {id}")))
        }
    }

    #[test]
    fn named_as_their_typescript_declarations() {
        assert_names!(WaitResult);
        assert_names!(WaitRefusal);
    }

    #[test]
    fn settles_done_when_every_job_succeeded_and_failed_at_the_first_failure() {
        let mut records = HashMap::from([
            (A, task(A, TaskStatus::Pending)),
            (B, task(B, TaskStatus::InProgress)),
        ]);
        let mut waiters = Waiters::default();
        let id = waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true);
        assert!(waiters.check(10, reader(&records)).is_empty());
        records.insert(A, task(A, TaskStatus::Success));
        assert!(
            waiters.check(20, reader(&records)).is_empty(),
            "B still runs"
        );
        records.insert(B, task(B, TaskStatus::Success));
        let settled = waiters.check(30, reader(&records));
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].0, id);
        assert_eq!(settled[0].1.outcome, WaitResult::Done);
        assert_eq!(settled[0].1.job_ids, [A, B]);
        assert!(waiters.is_empty());

        let mut failing = task(B, TaskStatus::Failure);
        failing.set_task_error("relation \"x\" does not exist");
        records.insert(B, failing);
        records.insert(A, task(A, TaskStatus::Pending));
        waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true);
        let settled = waiters.check(40, reader(&records));
        let outcome = &settled[0].1;
        assert_eq!(outcome.outcome, WaitResult::Failed);
        assert_eq!(outcome.job_id.as_deref(), Some(B));
        assert_eq!(outcome.status, Some("failure"));
        assert_eq!(
            outcome.errors[0]["message"],
            "relation \"x\" does not exist"
        );
        assert!(
            outcome.message.contains("does not exist"),
            "{}",
            outcome.message
        );
    }

    #[test]
    fn every_end_but_success_fails() {
        for status in [
            TaskStatus::Failure,
            TaskStatus::Aborted,
            TaskStatus::TimedOut,
        ] {
            let records = HashMap::from([(A, task(A, status))]);
            let mut waiters = Waiters::default();
            waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true);
            assert_eq!(
                waiters.check(1, reader(&records))[0].1.outcome,
                WaitResult::Failed
            );
        }
        for (status, result) in [
            (JobStatus::Done, WaitResult::Done),
            (JobStatus::Error, WaitResult::Failed),
            (JobStatus::Cancelled, WaitResult::Failed),
        ] {
            let mut job = task(A, TaskStatus::Pending);
            job.kind = RecordKind::Job {
                channel_id: "c".into(),
                status,
                details: Default::default(),
            };
            let records = HashMap::from([(A, job)]);
            let mut waiters = Waiters::default();
            waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true);
            assert_eq!(waiters.check(1, reader(&records))[0].1.outcome, result);
        }
    }

    #[test]
    fn a_record_that_went_refuses_with_its_reason() {
        let records = HashMap::new();
        let mut waiters = Waiters::default();
        waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true);
        let outcome = &waiters.check(1, reader(&records))[0].1;
        assert_eq!(outcome.outcome, WaitResult::Refused);
        assert_eq!(outcome.reason, Some(WaitRefusal::UnknownJob));
        assert_eq!(outcome.job_id.as_deref(), Some(A));
    }

    #[test]
    fn stale_after_the_timeout_without_progress_and_progress_restarts_the_clock() {
        let mut records = HashMap::from([(A, task(A, TaskStatus::Pending))]);
        let mut waiters = Waiters::default();
        waiters.add(vec![A.into()], 1000, 0, true);
        assert_eq!(waiters.next_deadline(), Some(1000));
        assert!(waiters.check(999, reader(&records)).is_empty());
        records.insert(A, task(A, TaskStatus::InProgress));
        assert!(
            waiters.check(999, reader(&records)).is_empty(),
            "moved at 999"
        );
        assert_eq!(waiters.next_deadline(), Some(1999));
        assert!(waiters.check(1500, reader(&records)).is_empty());
        let settled = waiters.check(1999, reader(&records));
        assert_eq!(settled[0].1.outcome, WaitResult::Stale);
        assert_eq!(waiters.next_deadline(), None);
    }

    #[test]
    fn an_abort_cancels_only_what_no_other_waiter_awaits() {
        let mut waiters = Waiters::default();
        let first = waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true);
        let second = waiters.add(vec![B.into()], DEFAULT_STALE_MS, 0, true);
        assert_eq!(waiters.closing(), [A, B]);
        let (jobs, alone) = waiters.remove(first).unwrap();
        assert_eq!(jobs, [A, B]);
        assert_eq!(alone, [A], "B is the second waiter's too");
        assert_eq!(waiters.remove(first), None, "settled once");
        let (_, alone) = waiters.remove(second).unwrap();
        assert_eq!(alone, [B]);
        assert!(waiters.is_empty());
    }

    #[test]
    fn reads_ids_bodies_and_refuses_the_rest() {
        use serde_json::json;
        let ids = |v: Value| match read_input(&v) {
            Ok(WaitInput::Ids(ids)) => ids,
            other => panic!("{other:?}"),
        };
        assert_eq!(ids(json!("job-1")), ["job-1"]);
        assert_eq!(ids(json!(["a", "b", "a"])), ["a", "b"]);
        assert!(matches!(
            read_input(&json!({ "task_ids": [A], "cursor": "c", "tab_id": "t1" })),
            Ok(WaitInput::Tasks(s)) if s.task_ids.len() == 1 && s.tab_id.is_some()
        ));
        assert!(matches!(
            read_input(&json!({ "async_job": { "task_id": A } })),
            Ok(WaitInput::Tasks(_))
        ));
        let meta = json!({ "channel_id": "c", "job_id": "j", "user_id": "1", "status": "pending", "errors": [], "result_url": null });
        assert!(matches!(read_input(&meta), Ok(WaitInput::Job(m)) if &*m.job_id == "j"));
        for bad in [
            json!(null),
            json!(5),
            json!([]),
            json!([1]),
            json!({ "task_ids": "x" }),
            json!({ "job_id": 5 }),
        ] {
            let (reason, message) = read_input(&bad).unwrap_err();
            assert_eq!(reason, WaitRefusal::InvalidInput, "{bad}: {message}");
        }
        let many: Vec<String> = (0..=MAX_JOBS_PER_WAITER).map(|i| i.to_string()).collect();
        assert!(read_input(&json!(many)).is_err());
        assert_eq!(refused_by(&GuardError::NoSession).0, WaitRefusal::NoSession);
        assert_eq!(
            refused_by(&GuardError::NotJobOwner { job_id: "j".into() }).0,
            WaitRefusal::NotJobOwner
        );
    }

    #[test]
    fn the_stale_timeout_is_a_whole_number_up_to_a_day() {
        assert_eq!(stale_ms(None), Ok(DEFAULT_STALE_MS));
        assert_eq!(stale_ms(Some(1.0)), Ok(1));
        assert_eq!(stale_ms(Some(86_400_000.0)), Ok(86_400_000));
        for bad in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY, 86_400_001.0] {
            assert_eq!(
                stale_ms(Some(bad)).unwrap_err().0,
                WaitRefusal::InvalidInput
            );
        }
    }

    #[test]
    fn a_waiters_cancel_on_close_is_its_own_or_the_guards() {
        assert_eq!(cancel_on_close(Ok(None), true), Ok(true));
        assert_eq!(cancel_on_close(Ok(None), false), Ok(false));
        assert_eq!(cancel_on_close(Ok(Some(false)), true), Ok(false));
        assert_eq!(cancel_on_close(Ok(Some(true)), false), Ok(true));
        assert_eq!(
            cancel_on_close(Err(()), true).unwrap_err().0,
            WaitRefusal::InvalidInput
        );
    }

    #[test]
    fn the_pages_end_cancels_only_what_no_waiter_keeps() {
        let mut waiters = Waiters::default();
        waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true);
        waiters.add(vec![B.into()], DEFAULT_STALE_MS, 0, false);
        assert_eq!(
            waiters.closing(),
            [A],
            "B is kept by a waiter that lets it run on"
        );
        let mut kept = Waiters::default();
        kept.add(vec![A.into()], DEFAULT_STALE_MS, 0, false);
        assert!(kept.closing().is_empty());
    }

    #[test]
    fn an_ended_job_is_admitted_and_others_refused_with_the_checks_reason() {
        let record = task(A, TaskStatus::Success);
        assert_eq!(admit(&CancelCheck::Allowed(record), A), Ok(()));
        let refused = |reason| CancelCheck::Refused {
            reason,
            message: "the cancel's words".into(),
        };
        assert_eq!(admit(&refused(CancelRefusal::AlreadyFinished), A), Ok(()));
        for (reason, wait, words) in [
            (
                CancelRefusal::NotJobOwner,
                WaitRefusal::NotJobOwner,
                "another user",
            ),
            (
                CancelRefusal::NoSession,
                WaitRefusal::NoSession,
                "nobody is signed in",
            ),
            (
                CancelRefusal::UnknownJob,
                WaitRefusal::UnknownJob,
                "not recorded",
            ),
        ] {
            let (got, message) = admit(&refused(reason), A).unwrap_err();
            assert_eq!(got, wait);
            assert!(message.contains(words) && message.contains(A), "{message}");
            assert!(!message.contains("cancel"), "a wait's words: {message}");
        }
    }
}
