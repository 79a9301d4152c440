//! `waitFor`'s rules: a guard's waiters, each awaiting a set of the session's jobs, and how each
//! settles. A waiter settles `done` when every job of it ended well, `failed` at the first that
//! ended otherwise, `refused` when a job is not the session's (nothing is sent) and at once
//! when it can no longer hear anything (its session ended or changed, the server answered
//! 401, a record expired or went), `stale` after `staleTimeoutMs` without progress (a status
//! that moved), and `aborted` by its signal. What an abort or the page's end may cancel is
//! decided over every waiter of the browser ([`awaited`](super::awaited)): a task shared by
//! two charts runs on for the other. Superset's own frontend keeps the same registry (its
//! task-framework `asyncEvent.ts`: a task id maps to a set of waiters).
//!
//! Pure: the shell reads the records, the session and the clock, and sends what the rules name.

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::cancel::{CancelCheck, CancelRefusal};
use super::error::GuardError;
use super::ids::quote;
use super::model::{JobMetadata, JobRecord};
use super::names::names;
use super::options::{unknown_option, whole};
use super::quiet::Json;
use super::session::Session;
use super::statuses::{JobStatus, Status, TaskStatus};
use super::store::Gone;
use super::task::Submission;
use super::wire::{self, Field, Object};

/// Superset's `GLOBAL_ASYNC_QUERIES_POLLING_STALE_TIMEOUT`: 600 s without progress.
pub const DEFAULT_STALE_MS: u64 = 600_000;
/// The longest `staleTimeoutMs` taken: a day.
pub const MAX_STALE_MS: u64 = 86_400_000;
/// The most jobs one waiter awaits.
pub const MAX_JOBS_PER_WAITER: usize = 100;
/// How long a record may be missing, with the session unchanged, before its waiter settles
/// `removed`: another tab's logout or user switch removes the session and the records one key
/// at a time, and this tab hears each removal as its own `storage` event, in whatever order the
/// browser delivers them. Within this grace the session's change, if that is what it was,
/// arrives, and the waiter settles with that reason instead.
pub const MISSING_GRACE_MS: u64 = 50;

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

/// `waitFor`'s options as JSON writes them (the shell takes `signal` out first: JSON cannot
/// hold it); any other key is refused.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct OptionsWire {
    /// Taken out before; named so that an unknown key's message lists it as known.
    #[allow(dead_code)]
    signal: Option<IgnoredAny>,
    stale_timeout_ms: Field<Option<f64>>,
    cancel_on_close: Field<Option<bool>>,
}

const STALE_RULE: &str =
    "`staleTimeoutMs` must be a whole number of milliseconds from 1 to 86400000";

/// `waitFor`'s options, read: its stale timeout and `cancelOnClose`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitSettings {
    pub stale_ms: u64,
    pub cancel_on_close: bool,
}

impl WaitSettings {
    /// Reads `waitFor`'s options (without `signal`), once: `null`/`undefined` is every default
    /// (`cancelOnClose` the guard's, `guards`); anything but an object, an unknown key, or a
    /// value breaking its rule is refused with the rule as the message.
    pub fn read<'de, D: Deserializer<'de>>(value: D, guards: bool) -> Result<Self, GuardError> {
        let invalid = GuardError::InvalidOptions;
        let w: Option<Object<OptionsWire>> = wire::read(
            value,
            "waitFor's options must be an object, null or undefined",
        )
        .map_err(|m| unknown_option(&m, " of waitFor").unwrap_or(invalid(m)))?;
        let w = w.map(|Object(w)| w).unwrap_or_default();
        let stale = w
            .stale_timeout_ms
            .nullable()
            .map_err(|_| invalid(STALE_RULE.to_owned()))?;
        let stale_ms = match stale {
            None => DEFAULT_STALE_MS,
            Some(ms) => whole(ms, 1, MAX_STALE_MS).ok_or_else(|| invalid(STALE_RULE.to_owned()))?,
        };
        let cancel_on_close = w
            .cancel_on_close
            .nullable()
            .map_err(|_| invalid("`cancelOnClose` must be true or false".to_owned()))?
            .unwrap_or(guards);
        Ok(Self {
            stale_ms,
            cancel_on_close,
        })
    }
}

/// What a waiter can hear: the session now, and whether the server answered `401` to its poll
/// since the last `login`.
#[derive(Clone, Copy, Debug)]
pub struct Hearing<'a> {
    pub session: Option<&'a Session>,
    pub unauthenticated: bool,
}

/// Whether a waiter admitted under `owner` (or about to be, `None`) can still hear anything
/// about its jobs: the session it hears under; the refusal that ends it otherwise.
pub fn can_hear<'a>(hearing: Hearing<'a>, owner: Option<&Session>) -> Result<&'a Session, Refused> {
    let Some(session) = hearing.session else {
        return Err((
            WaitRefusal::NoSession,
            "No session: nobody is signed in (or the session ended), so nothing is awaited"
                .to_owned(),
        ));
    };
    if owner.is_some_and(|owner| !owner.same_identity(session)) {
        return Err((
            WaitRefusal::UserChanged,
            "Another user signed in: the jobs of the session that waited are not awaited"
                .to_owned(),
        ));
    }
    if hearing.unauthenticated {
        return Err((
            WaitRefusal::Unauthenticated,
            "The server answered 401 (the session's login ended there): nothing is heard until \
             the next login"
                .to_owned(),
        ));
    }
    Ok(session)
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
    /// The session it was admitted under.
    owner: Session,
    /// When the first of its records expires, as last read.
    expires_at: Option<u64>,
    /// Since when one of its records has been missing with the session unchanged.
    missing_since: Option<u64>,
}

/// One guard's waiters.
#[derive(Clone, Debug, Default)]
pub struct Waiters {
    waiters: Vec<Waiter>,
    next_id: u32,
}

impl Waiters {
    /// Adds a waiter for `jobs` (each a record id `owner`'s session holds, checked by
    /// [`admit`]); its id. `cancel_on_close`: whether the page's end cancels them.
    pub fn add(
        &mut self,
        jobs: Vec<String>,
        stale_ms: u64,
        now_ms: u64,
        cancel_on_close: bool,
        owner: Session,
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
            owner,
            expires_at: None,
            missing_since: None,
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
    pub fn awaits(&self, job: &str) -> bool {
        self.waiters.iter().any(|w| w.jobs.iter().any(|j| j == job))
    }

    /// Whether a waiter that lets its jobs run on at the page's end (`cancelOnClose: false`)
    /// awaits `job`.
    pub fn keeps(&self, job: &str) -> bool {
        self.waiters
            .iter()
            .any(|w| !w.cancel_on_close && w.jobs.iter().any(|j| j == job))
    }

    /// Every job some waiter awaits, each once, in the order first awaited; with
    /// `closing_only`, only those of waiters whose jobs the page's end cancels.
    pub fn jobs(&self, closing_only: bool) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for job in self
            .waiters
            .iter()
            .filter(|w| w.cancel_on_close || !closing_only)
            .flat_map(|w| &w.jobs)
        {
            if !all.contains(job) {
                all.push(job.clone());
            }
        }
        all
    }

    /// Reads every waiter's jobs (`read`: the session's record of an id and when it expires,
    /// or why there is none) and settles those that can: `(id, outcome)` for each, removed. A
    /// waiter that can no longer hear anything ([`can_hear`]) settles at once; a status that
    /// moved restarts its stale clock.
    pub fn check(
        &mut self,
        now_ms: u64,
        hearing: Hearing,
        mut read: impl FnMut(&str) -> Result<(JobRecord, u64), Gone>,
    ) -> Vec<(u32, WaitOutcome)> {
        let mut settled = Vec::new();
        self.waiters.retain_mut(|waiter| {
            let outcome = match can_hear(hearing, Some(&waiter.owner)) {
                Err((reason, message)) => {
                    Some(WaitOutcome::refused(&waiter.jobs, None, reason, message))
                }
                Ok(_) => settle(waiter, now_ms, &mut read),
            };
            match outcome {
                Some(outcome) => {
                    settled.push((waiter.id, outcome));
                    false
                }
                None => true,
            }
        });
        settled
    }

    /// When the next waiter settles if nothing is heard before: its stale deadline, the first
    /// of its records' expiry, or the end of a missing record's grace.
    pub fn next_deadline(&self) -> Option<u64> {
        self.waiters
            .iter()
            .flat_map(|w| {
                [
                    Some(w.progress_at.saturating_add(w.stale_ms)),
                    w.expires_at,
                    w.missing_since.map(|t| t.saturating_add(MISSING_GRACE_MS)),
                ]
            })
            .flatten()
            .min()
    }
}

/// How `waiter` stands now: `Some` when it settles.
fn settle(
    waiter: &mut Waiter,
    now_ms: u64,
    read: &mut impl FnMut(&str) -> Result<(JobRecord, u64), Gone>,
) -> Option<WaitOutcome> {
    let mut all_done = true;
    let mut moved = false;
    let mut missing = false;
    waiter.expires_at = None;
    for (job, seen) in waiter.jobs.iter().zip(waiter.seen.iter_mut()) {
        let record = match read(job) {
            Ok((record, expires_at)) => {
                waiter.expires_at =
                    Some(waiter.expires_at.map_or(expires_at, |t| t.min(expires_at)));
                record
            }
            Err(Gone::Expired) => {
                let message = format!(
                    "The record of job {} expired (ttlSeconds) while it was awaited",
                    quote(job)
                );
                return Some(WaitOutcome::refused(
                    &waiter.jobs,
                    Some(job),
                    WaitRefusal::Expired,
                    message,
                ));
            }
            Err(Gone::Removed) => {
                let since = *waiter.missing_since.get_or_insert(now_ms);
                if now_ms.saturating_sub(since) >= MISSING_GRACE_MS {
                    let message = format!(
                        "The record of job {} went while it was awaited (evicted, removed, or \
                         left)",
                        quote(job)
                    );
                    return Some(WaitOutcome::refused(
                        &waiter.jobs,
                        Some(job),
                        WaitRefusal::Removed,
                        message,
                    ));
                }
                missing = true;
                all_done = false;
                continue;
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
    if !missing {
        waiter.missing_since = None;
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
    ) -> impl FnMut(&str) -> Result<(JobRecord, u64), Gone> + 'a {
        |id| {
            records
                .get(id)
                .cloned()
                .map(|r| (r, u64::MAX))
                .ok_or(Gone::Removed)
        }
    }

    fn user(id: u64) -> Session {
        Session::from_login(Json(&serde_json::json!({ "userId": id }))).unwrap()
    }

    /// User 1 signed in, heard from.
    fn heard(session: &Session) -> Hearing<'_> {
        Hearing {
            session: Some(session),
            unauthenticated: false,
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
        let id = waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true, user(1));
        assert!(waiters
            .check(10, heard(&user(1)), reader(&records))
            .is_empty());
        records.insert(A, task(A, TaskStatus::Success));
        assert!(
            waiters
                .check(20, heard(&user(1)), reader(&records))
                .is_empty(),
            "B still runs"
        );
        records.insert(B, task(B, TaskStatus::Success));
        let settled = waiters.check(30, heard(&user(1)), reader(&records));
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].0, id);
        assert_eq!(settled[0].1.outcome, WaitResult::Done);
        assert_eq!(settled[0].1.job_ids, [A, B]);
        assert!(waiters.is_empty());

        let mut failing = task(B, TaskStatus::Failure);
        failing.set_task_error("relation \"x\" does not exist");
        records.insert(B, failing);
        records.insert(A, task(A, TaskStatus::Pending));
        waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true, user(1));
        let settled = waiters.check(40, heard(&user(1)), reader(&records));
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
            waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true, user(1));
            assert_eq!(
                waiters.check(1, heard(&user(1)), reader(&records))[0]
                    .1
                    .outcome,
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
            waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true, user(1));
            assert_eq!(
                waiters.check(1, heard(&user(1)), reader(&records))[0]
                    .1
                    .outcome,
                result
            );
        }
    }

    #[test]
    fn a_record_that_went_settles_removed_after_the_grace_and_one_that_expired_at_once() {
        let records = HashMap::from([(B, task(B, TaskStatus::Pending))]);
        let mut waiters = Waiters::default();
        waiters.add(vec![B.into(), A.into()], DEFAULT_STALE_MS, 0, true, user(1));
        assert!(
            waiters
                .check(1, heard(&user(1)), reader(&records))
                .is_empty(),
            "within the grace: maybe a logout whose session removal comes next"
        );
        assert_eq!(waiters.next_deadline(), Some(1 + MISSING_GRACE_MS));
        let settled = waiters.check(1 + MISSING_GRACE_MS, heard(&user(1)), reader(&records));
        let outcome = &settled[0].1;
        assert_eq!(outcome.outcome, WaitResult::Refused);
        assert_eq!(outcome.reason, Some(WaitRefusal::Removed));
        assert_eq!(outcome.job_id.as_deref(), Some(A));

        // Found again within the grace: the clock of the grace starts over.
        let mut records = HashMap::from([(B, task(B, TaskStatus::Pending))]);
        waiters.add(vec![B.into(), A.into()], DEFAULT_STALE_MS, 0, true, user(1));
        assert!(waiters
            .check(1, heard(&user(1)), reader(&records))
            .is_empty());
        records.insert(A, task(A, TaskStatus::Pending));
        assert!(waiters
            .check(2, heard(&user(1)), reader(&records))
            .is_empty());
        assert_eq!(waiters.next_deadline(), Some(DEFAULT_STALE_MS));

        // Expired: at once, and the first expiry is a deadline.
        let mut waiters = Waiters::default();
        waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true, user(1));
        let expiring = |id: &str| match id {
            A => Ok((task(A, TaskStatus::Pending), 5_000)),
            _ => Err(Gone::Removed),
        };
        assert!(waiters.check(1, heard(&user(1)), expiring).is_empty());
        assert_eq!(waiters.next_deadline(), Some(5_000));
        let settled = waiters.check(5_000, heard(&user(1)), |_| Err(Gone::Expired));
        assert_eq!(settled[0].1.reason, Some(WaitRefusal::Expired));
    }

    #[test]
    fn a_waiter_that_can_no_longer_hear_settles_at_once_with_why() {
        let records = HashMap::from([(A, task(A, TaskStatus::Pending))]);
        let alice = user(1);
        let bob = user(2);
        for (hearing, reason) in [
            (
                Hearing {
                    session: None,
                    unauthenticated: false,
                },
                WaitRefusal::NoSession,
            ),
            (heard(&bob), WaitRefusal::UserChanged),
            (
                Hearing {
                    session: Some(&alice),
                    unauthenticated: true,
                },
                WaitRefusal::Unauthenticated,
            ),
        ] {
            let mut waiters = Waiters::default();
            waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true, user(1));
            let settled = waiters.check(1, hearing, reader(&records));
            assert_eq!(settled.len(), 1, "{reason:?}");
            assert_eq!(settled[0].1.outcome, WaitResult::Refused);
            assert_eq!(settled[0].1.reason, Some(reason));
            assert!(waiters.is_empty());
        }
        // The same user with a new channel still hears.
        let mut waiters = Waiters::default();
        waiters.add(vec![A.into()], DEFAULT_STALE_MS, 0, true, user(1));
        let same =
            Session::from_login(Json(&serde_json::json!({ "userId": 1, "channelId": "c2" })))
                .unwrap();
        assert!(waiters.check(1, heard(&same), reader(&records)).is_empty());
        assert_eq!(can_hear(heard(&same), None), Ok(&same));
    }

    #[test]
    fn stale_after_the_timeout_without_progress_and_progress_restarts_the_clock() {
        let mut records = HashMap::from([(A, task(A, TaskStatus::Pending))]);
        let mut waiters = Waiters::default();
        waiters.add(vec![A.into()], 1000, 0, true, user(1));
        assert_eq!(waiters.next_deadline(), Some(1000));
        assert!(waiters
            .check(999, heard(&user(1)), reader(&records))
            .is_empty());
        records.insert(A, task(A, TaskStatus::InProgress));
        assert!(
            waiters
                .check(999, heard(&user(1)), reader(&records))
                .is_empty(),
            "moved at 999"
        );
        assert_eq!(waiters.next_deadline(), Some(1999));
        assert!(waiters
            .check(1500, heard(&user(1)), reader(&records))
            .is_empty());
        let settled = waiters.check(1999, heard(&user(1)), reader(&records));
        assert_eq!(settled[0].1.outcome, WaitResult::Stale);
        assert_eq!(waiters.next_deadline(), None);
    }

    #[test]
    fn an_abort_cancels_only_what_no_other_waiter_awaits() {
        let mut waiters = Waiters::default();
        let first = waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true, user(1));
        let second = waiters.add(vec![B.into()], DEFAULT_STALE_MS, 0, true, user(1));
        assert_eq!(waiters.jobs(true), [A, B]);
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
    fn the_options_are_an_object_of_known_keys_each_within_its_rule() {
        use serde_json::json;
        let read = |v: Value, guards| WaitSettings::read(Json(&v), guards);
        assert_eq!(
            read(json!(null), true),
            Ok(WaitSettings {
                stale_ms: DEFAULT_STALE_MS,
                cancel_on_close: true
            })
        );
        assert!(!read(json!({}), false).unwrap().cancel_on_close);
        let given = read(json!({"staleTimeoutMs": 1, "cancelOnClose": false}), true).unwrap();
        assert_eq!((given.stale_ms, given.cancel_on_close), (1, false));
        assert_eq!(
            read(
                json!({"staleTimeoutMs": 86_400_000, "cancelOnClose": true}),
                false
            )
            .unwrap(),
            WaitSettings {
                stale_ms: 86_400_000,
                cancel_on_close: true
            }
        );
        for (bad, says) in [
            (json!({"staleTimeoutMs": 0}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": -1}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": 1.5}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": 86_400_001}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": "600"}), "`staleTimeoutMs`"),
            (json!({"cancelOnClose": "no"}), "`cancelOnClose`"),
            (
                json!({"stale": 5}),
                "unknown option `stale` of waitFor (known: signal",
            ),
            (json!(5), "must be an object"),
            (json!("x"), "must be an object"),
            (json!([]), "must be an object"),
            (json!([{"staleTimeoutMs": 5}]), "must be an object"),
        ] {
            let e = read(bad.clone(), true).unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_pages_end_cancels_only_what_no_waiter_keeps() {
        let mut waiters = Waiters::default();
        waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true, user(1));
        waiters.add(vec![B.into()], DEFAULT_STALE_MS, 0, false, user(1));
        assert_eq!(waiters.jobs(true), [A, B]);
        assert!(
            waiters.keeps(B),
            "B is kept by a waiter that lets it run on"
        );
        assert!(!waiters.keeps(A));
        let mut kept = Waiters::default();
        kept.add(vec![A.into()], DEFAULT_STALE_MS, 0, false, user(1));
        assert!(kept.jobs(true).is_empty());
        assert_eq!(kept.jobs(false), [A]);
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
