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

use super::ids::quote;
use super::model::JobRecord;
use super::session::Session;
use super::statuses::{JobStatus, Status, TaskStatus};
use super::store::Gone;
use super::wait_outcome::failed;
use super::wait_outcome::{Refused, WaitOutcome, WaitRefusal};

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
    /// [`admit`](super::wait_input::admit)); its id. `cancel_on_close`: whether the page's end cancels them.
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

    /// Removes waiter `id` (aborted, or settled otherwise): its jobs, in its order. `None` if
    /// it had already settled. What its abort cancels is
    /// [`awaited::unawaited`](super::awaited::unawaited)'s.
    pub fn remove(&mut self, id: u32) -> Option<Vec<String>> {
        let at = self.waiters.iter().position(|w| w.id == id)?;
        Some(self.waiters.remove(at).jobs)
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

#[cfg(test)]
mod tests;
