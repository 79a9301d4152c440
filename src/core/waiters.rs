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

use serde::Serialize;
use serde_json::Value;

use super::ids::quote;
use super::model::JobRecord;
use super::names::names;
use super::session::Session;
use super::statuses::{JobStatus, Status, TaskStatus};
use super::store::Gone;

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

/// What a waiter can hear: the session now, and whether the server answered `401` or `403` to
/// its poll since the last `login`, or `404` (no stream at all).
#[derive(Clone, Copy, Debug, Default)]
pub struct Hearing<'a> {
    pub session: Option<&'a Session>,
    pub unauthenticated: bool,
    pub forbidden: bool,
    pub absent: bool,
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
    if hearing.forbidden {
        return Err((
            WaitRefusal::Forbidden,
            "The server answered 403 to the poll (a role without the Task permission): nothing \
             is heard until the next login"
                .to_owned(),
        ));
    }
    if hearing.absent {
        return Err((
            WaitRefusal::Unsupported,
            "The server has no stream to follow (its task framework is off: its task routes \
             answer 404)"
                .to_owned(),
        ));
    }
    Ok(session)
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

    /// Whether a waiter other than those of `ids` awaits `job`.
    pub fn awaits_except(&self, job: &str, ids: &[u32]) -> bool {
        self.waiters
            .iter()
            .any(|w| !ids.contains(&w.id) && w.jobs.iter().any(|j| j == job))
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
        return Some(WaitOutcome::done(&waiter.jobs));
    }
    if moved {
        waiter.progress_at = now_ms;
    }
    (now_ms.saturating_sub(waiter.progress_at) >= waiter.stale_ms)
        .then(|| WaitOutcome::stale(&waiter.jobs, waiter.stale_ms))
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
    use crate::core::quiet::Json;
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
            ..Hearing::default()
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
            (Hearing::default(), WaitRefusal::NoSession),
            (heard(&bob), WaitRefusal::UserChanged),
            (
                Hearing {
                    session: Some(&alice),
                    unauthenticated: true,
                    ..Hearing::default()
                },
                WaitRefusal::Unauthenticated,
            ),
            (
                Hearing {
                    session: Some(&alice),
                    forbidden: true,
                    ..Hearing::default()
                },
                WaitRefusal::Forbidden,
            ),
            (
                Hearing {
                    session: Some(&alice),
                    absent: true,
                    ..Hearing::default()
                },
                WaitRefusal::Unsupported,
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
}
