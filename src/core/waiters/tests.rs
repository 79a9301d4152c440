//! The tests of `src/core/waiters.rs`.
#![cfg(test)]

use super::*;
use crate::core::model::RecordKind;
use crate::core::names::assert_names;
use crate::core::quiet::Json;
use crate::core::wait_outcome::WaitResult;
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
        Session::from_login(Json(&serde_json::json!({ "userId": 1, "channelId": "c2" }))).unwrap();
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
fn a_removed_waiter_awaits_nothing_and_settles_once() {
    let mut waiters = Waiters::default();
    let first = waiters.add(vec![A.into(), B.into()], DEFAULT_STALE_MS, 0, true, user(1));
    let second = waiters.add(vec![B.into()], DEFAULT_STALE_MS, 0, true, user(1));
    assert_eq!(waiters.jobs(true), [A, B]);
    assert_eq!(waiters.remove(first).unwrap(), [A, B]);
    assert!(!waiters.awaits(A));
    assert!(waiters.awaits(B), "B is the second waiter's too");
    assert_eq!(waiters.remove(first), None, "settled once");
    assert_eq!(waiters.remove(second).unwrap(), [B]);
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
