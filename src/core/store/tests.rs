//! The store's rules, over shared memory storage standing in for the tabs' localStorage.
#![cfg(test)]

use super::*;
use crate::core::cancel::{CancelCheck, CancelRefusal};
use crate::core::doubles::ManualClock;
use crate::core::error::StorageError;
use crate::core::model::{JobStatus, TaskStatus};
use crate::core::quiet::Json;
use crate::core::response::Outcome;
use crate::core::storage::MemoryStorage;
use crate::core::store::Awaited;
use serde::Serialize;
use serde_json::{json, Value};

/// One storage seen by several stores: the tabs of one origin.
type Shared = crate::core::doubles::SharedMemory;

trait Peek {
    fn put(&self, key: &str, value: &str);
    fn value(&self, key: &str) -> Option<String>;
    fn all_keys(&self) -> Vec<String>;
}

impl Peek for Shared {
    fn put(&self, key: &str, value: &str) {
        self.set_text(key, value);
    }
    fn value(&self, key: &str) -> Option<String> {
        self.text(key)
    }
    fn all_keys(&self) -> Vec<String> {
        KeyValue::keys(self).unwrap()
    }
}

const T0: u64 = 1_700_000_000_000;

fn setup() -> (Shared, ManualClock) {
    (Shared::default(), ManualClock::at(T0))
}

fn tab(shared: &Shared, clock: &ManualClock) -> JobStore<Shared, ManualClock> {
    tab_with(shared, clock, GuardOptions::default())
}

fn tab_with(
    shared: &Shared,
    clock: &ManualClock,
    options: GuardOptions,
) -> JobStore<Shared, ManualClock> {
    JobStore::new(shared.clone(), clock.clone(), &options)
}

fn login(user: Value, channel: Option<&str>) -> Session {
    Session::from_login(Json(&json!({"userId": user, "channelId": channel}))).unwrap()
}

fn meta(job: &str, user: Value, channel: &str, status: &str) -> JobMetadata {
    JobMetadata::read(
        json!({"channel_id": channel, "job_id": job, "user_id": user,
        "status": status, "errors": [], "result_url": null}),
    )
    .unwrap()
}

fn job_key(job: &str) -> String {
    format!("superset-job-guard:v1:job:{job}")
}

const SESSION_KEY: &str = "superset-job-guard:v1:session";

#[test]
fn records_a_job_under_documented_keys() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    assert_eq!(s.login(login(json!(1), None)).unwrap(), 0);
    let rec = s
        .record_job(meta("job-a", json!("1"), "chan-1", "pending"))
        .unwrap();
    assert_eq!(rec.created_at, T0);
    assert_eq!(rec.updated_at, T0);
    assert_eq!(rec.user_id.as_deref(), Some("1"));
    let mut keys = shared.all_keys();
    keys.sort();
    assert_eq!(keys, [job_key("job-a"), SESSION_KEY.to_owned()]);
    let stored: Value = serde_json::from_str(&shared.value(&job_key("job-a")).unwrap()).unwrap();
    assert_eq!(
        stored,
        json!({"channel_id": "chan-1", "job_id": "job-a", "user_id": "1", "status": "pending",
               "errors": [], "result_url": null, "created_at": T0, "updated_at": T0})
    );
    let marker: Value = serde_json::from_str(&shared.value(SESSION_KEY).unwrap()).unwrap();
    assert_eq!(
        marker,
        json!({"user_id": "1", "channel_id": "chan-1"}),
        "channel adopted"
    );
}

#[test]
fn what_storage_holds_now_is_what_every_read_sees() {
    // Reads keep what they parsed beside its text (parsed.rs); a change to the text, by
    // another tab or the page, is seen by the very next read, and a text changed back reads
    // as it did.
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!(1), None)).unwrap();
    s.record_job(meta("job-a", json!("1"), "chan-1", "running"))
        .unwrap();
    let before = shared.value(&job_key("job-a")).unwrap();
    assert_eq!(s.job("job-a").unwrap().status(), JobStatus::Running);
    assert_eq!(s.job("job-a").unwrap().status(), JobStatus::Running);
    shared.put(&job_key("job-a"), &before.replace("running", "done"));
    assert_eq!(s.job("job-a").unwrap().status(), JobStatus::Done);
    assert!(!s.check_cancel("job-a").is_allowed());
    shared.put(&job_key("job-a"), &before);
    assert_eq!(s.job("job-a").unwrap().status(), JobStatus::Running);
    // Another owner's record in its place: not this session's, and removed.
    shared.put(
        &job_key("job-a"),
        &before.replace("\"user_id\":\"1\"", "\"user_id\":\"2\""),
    );
    assert_eq!(s.job("job-a"), None);
    assert_eq!(shared.value(&job_key("job-a")), None);
    // The session marker too: another user signed in elsewhere.
    s.record_job(meta("job-b", json!("1"), "chan-1", "running"))
        .unwrap();
    assert!(s.job("job-b").is_some());
    shared.put(SESSION_KEY, r#"{"user_id":"2","channel_id":null}"#);
    assert_eq!(s.job("job-b"), None);
    shared.put(SESSION_KEY, "not json");
    assert_eq!(s.session(), None);
}

#[test]
fn record_needs_a_session_and_refuses_other_users_jobs() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    assert_eq!(
        s.record_job(meta("j", json!("1"), "c", "pending")),
        Err(GuardError::NoSession)
    );
    s.login(login(json!("1"), Some("c"))).unwrap();
    let err = s
        .record_job(meta("j", json!("2"), "c", "pending"))
        .unwrap_err();
    assert_eq!(err.code(), "not_job_owner");
    let err = s
        .record_job(meta("j", Value::Null, "c", "pending"))
        .unwrap_err();
    assert_eq!(err.code(), "not_job_owner", "a guest job is not user 1's");
    assert_eq!(shared.value(&job_key("j")), None, "nothing stored");
}

#[test]
fn numeric_and_string_user_ids_are_the_same_user() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!(7), None)).unwrap();
    s.record_job(meta("j", json!("7"), "c", "running")).unwrap();
    s.record_job(meta("k", json!(7), "c", "running")).unwrap();
    assert_eq!(s.jobs().len(), 2);
    assert!(s.check_cancel("j").is_allowed());
}

#[test]
fn the_seeds_bug_logout_then_login_as_another_user() {
    // User A's job metadata must never reach user B's cancel button.
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("a-job", json!("1"), "chan-a", "running"))
        .unwrap();
    assert_eq!(s.logout(), 1);
    assert!(shared.all_keys().is_empty());
    s.login(login(json!("2"), None)).unwrap();
    assert_eq!(s.job("a-job"), None);
    assert_eq!(
        s.check_cancel("a-job").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
}

#[test]
fn writes_return_what_reads_then_answer() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    let record = s
        .record_job(meta("j", json!("1"), "chan-a", "running"))
        .unwrap();
    assert_eq!(s.check_cancel("j"), CancelCheck::Allowed(record.clone()));
    assert_eq!(s.job("j"), Some(record));
    let event = meta("j", json!("1"), "chan-a", "done");
    let record = s.apply_event(event.clone()).unwrap().unwrap();
    assert_eq!(
        s.check_cancel("j").refusal(),
        Some(CancelRefusal::AlreadyFinished)
    );
    assert_eq!(s.job("j"), Some(record.clone()));
    clock.advance(5);
    let again = s.apply_event(event).unwrap().unwrap();
    assert_eq!(again, record, "terminal: unchanged");
}

#[test]
fn login_as_another_user_without_logout_purges_everything() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("a1", json!("1"), "chan-a", "running"))
        .unwrap();
    s.record_job(meta("a2", json!("1"), "chan-a", "done"))
        .unwrap();
    let signed = s.sign_in(login(json!("2"), None)).unwrap();
    assert_eq!((signed.purged, signed.changed), (2, true));
    assert_eq!(
        signed.previous,
        Some(login(json!("1"), Some("chan-a"))),
        "the session before"
    );
    assert!(s.jobs().is_empty());
    assert_eq!(shared.all_keys(), [SESSION_KEY]);
    assert_eq!(s.session(), Some(login(json!("2"), None)));
    assert_eq!(
        s.check_cancel("a1").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
}

#[test]
fn login_with_no_stored_session_drops_orphans() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("a1", json!("1"), "c", "running"))
        .unwrap();
    shared.clone().remove(SESSION_KEY).unwrap();
    assert_eq!(s.login(login(json!("1"), None)).unwrap(), 1);
}

#[test]
fn same_user_login_keeps_records_and_channel() {
    // A page reload calls login again with the user from the bootstrap data.
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j", json!("1"), "chan-a", "running"))
        .unwrap();
    assert_eq!(s.login(login(json!(1), None)).unwrap(), 0);
    assert_eq!(s.session(), Some(login(json!("1"), Some("chan-a"))));
    assert!(s.check_cancel("j").is_allowed());
}

#[test]
fn same_user_with_a_new_channel_loses_old_channel_records() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("old", json!("1"), "chan-a", "running"))
        .unwrap();
    assert_eq!(s.login(login(json!("1"), Some("chan-b"))).unwrap(), 1);
    assert_eq!(
        s.check_cancel("old").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
}

#[test]
fn a_new_channel_in_metadata_is_adopted_and_old_records_dropped() {
    // Re-login or an expired cookie: the server minted a new channel for the same user.
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("old", json!("1"), "chan-a", "running"))
        .unwrap();
    s.record_job(meta("new", json!("1"), "chan-b", "pending"))
        .unwrap();
    assert_eq!(s.session(), Some(login(json!("1"), Some("chan-b"))));
    assert_eq!(shared.value(&job_key("old")), None);
    assert_eq!(
        s.check_cancel("old").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    assert!(s.check_cancel("new").is_allowed());
}

#[test]
fn guests_own_their_jobs_through_the_channel() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(Value::Null, Some("guest-aa"))).unwrap();
    s.record_job(meta("g1", Value::Null, "guest-aa", "running"))
        .unwrap();
    assert!(s.check_cancel("g1").is_allowed());
    // Another guest token (another channel), same page: the first guest's job is gone.
    s.login(login(Value::Null, Some("guest-bb"))).unwrap();
    assert_eq!(
        s.check_cancel("g1").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    // A signed-in user after the guest: nothing of the guest's remains.
    s.record_job(meta("g2", Value::Null, "guest-bb", "running"))
        .unwrap();
    s.login(login(json!("1"), None)).unwrap();
    assert!(s.jobs().is_empty());
}

#[test]
fn check_cancel_reasons() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    assert_eq!(
        s.check_cancel("j").refusal(),
        Some(CancelRefusal::NoSession)
    );
    s.login(login(json!("1"), Some("c"))).unwrap();
    assert_eq!(
        s.check_cancel("j").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    assert_eq!(
        s.check_cancel("").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    s.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    let CancelCheck::Allowed(rec) = s.check_cancel("j") else {
        panic!("allowed")
    };
    assert_eq!(rec.job_id, "j");
    s.record_job(meta("d", json!("1"), "c", "done")).unwrap();
    assert_eq!(
        s.check_cancel("d").refusal(),
        Some(CancelRefusal::AlreadyFinished)
    );
    // A record of another user under our namespace (written by another tab or by hand).
    let foreign = JobRecord::new(meta("x", json!("2"), "c", "running"), T0, T0);
    shared.put(&job_key("x"), &foreign.to_stored());
    let check = s.check_cancel("x");
    assert_eq!(check.refusal(), Some(CancelRefusal::NotJobOwner));
    let CancelCheck::Refused { message, .. } = check else {
        panic!("refused")
    };
    assert!(message.starts_with("Not job owner"));
    assert_eq!(s.job("x"), None, "not exposed either");
    assert_eq!(shared.value(&job_key("x")), None, "and removed once seen");
    assert_eq!(s.stats().removed.foreign_owner, 1);
    assert_eq!(
        s.check_cancel("x").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    assert_eq!(s.jobs().len(), 2);
}

#[test]
fn events_update_owned_records_only() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j", json!("1"), "c", "pending")).unwrap();
    clock.advance(1500);
    let ev = JobMetadata::read(json!({"channel_id": "c", "job_id": "j", "user_id": "1",
        "status": "done", "errors": [], "result_url": "/api/v1/chart/data/qc-1",
        "id": "1607477697866-0"}))
    .unwrap();
    let rec = s.apply_event(ev).unwrap().unwrap();
    assert_eq!(rec.status(), JobStatus::Done);
    assert_eq!(rec.result_url(), Some("/api/v1/chart/data/qc-1"));
    assert_eq!(rec.created_at, T0);
    assert_eq!(rec.updated_at, T0 + 1500);
    assert_eq!(s.job("j"), Some(rec.clone()));
    // Terminal records keep their final status.
    let late = meta("j", json!("1"), "c", "running");
    assert_eq!(s.apply_event(late).unwrap(), Some(rec));
    // Events of other users, other channels and unknown jobs change nothing.
    s.record_job(meta("k", json!("1"), "c", "running")).unwrap();
    for ev in [
        meta("k", json!("2"), "c", "error"),
        meta("k", json!("1"), "other", "error"),
        meta("k", Value::Null, "c", "error"),
        meta("unknown", json!("1"), "c", "error"),
    ] {
        assert_eq!(s.apply_event(ev).unwrap(), None);
    }
    assert_eq!(s.job("k").unwrap().status(), JobStatus::Running);
}

#[test]
fn error_events_keep_their_errors() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    let ev = JobMetadata::read(json!({"channel_id": "c", "job_id": "j", "user_id": "1",
        "status": "error", "errors": [{"message": "Error: relation 'foo' does not exist"}],
        "result_url": null}))
    .unwrap();
    let rec = s.apply_event(ev).unwrap().unwrap();
    assert_eq!(
        rec.errors(),
        vec![json!({"message": "Error: relation 'foo' does not exist"})]
    );
    assert_eq!(
        s.check_cancel("j").refusal(),
        Some(CancelRefusal::AlreadyFinished)
    );
}

#[test]
fn events_without_session_are_ignored() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    assert_eq!(
        s.apply_event(meta("j", json!("1"), "c", "done")).unwrap(),
        None
    );
}

#[test]
fn re_recording_keeps_created_at() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j", json!("1"), "c", "pending")).unwrap();
    clock.advance(10);
    let rec = s.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    assert_eq!(rec.created_at, T0);
    assert_eq!(rec.updated_at, T0 + 10);
    assert_eq!(rec.status(), JobStatus::Running);
    assert_eq!(s.jobs(), vec![rec]);
}

#[test]
fn a_finished_job_stays_finished_when_recorded_again() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    for status in ["done", "error", "cancelled"] {
        let id = format!("j-{status}");
        s.record_job(meta(&id, json!("1"), "c", status)).unwrap();
        clock.advance(10);
        let again = s.record_job(meta(&id, json!("1"), "c", "pending")).unwrap();
        assert_eq!(again.status().as_str(), status);
        assert_eq!(
            s.check_cancel(&id).refusal(),
            Some(CancelRefusal::AlreadyFinished)
        );
    }
}

#[test]
fn records_dated_in_the_future_are_removed_as_expired() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), Some("c"))).unwrap();
    let skew = crate::core::store::cleanup::FUTURE_SKEW_MS;
    let year = 365 * 24 * 3600 * 1000;
    for (id, created) in [
        ("within", T0 + skew),
        ("ahead", T0 + skew + 1),
        ("far", T0 + year),
    ] {
        let record = json!({"channel_id": "c", "job_id": id, "user_id": "1",
            "status": "running", "errors": [], "result_url": null,
            "created_at": created, "updated_at": created});
        shared.put(&job_key(id), &record.to_string());
    }
    let ids: Vec<String> = s.jobs().into_iter().map(|r| r.job_id.into()).collect();
    assert_eq!(ids, ["within"]);
    assert_eq!(s.stats().removed.expired, 2);
    assert_eq!(
        s.check_cancel("far").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
}

#[test]
fn jobs_are_oldest_first_and_expire_after_the_ttl() {
    let (shared, clock) = setup();
    let options = GuardOptions {
        ttl_ms: 60_000,
        ..GuardOptions::default()
    };
    let mut s = tab_with(&shared, &clock, options);
    s.login(login(json!("1"), None)).unwrap();
    for job in ["c", "a", "b"] {
        s.record_job(meta(job, json!("1"), "chan", "running"))
            .unwrap();
        clock.advance(20_000);
    }
    let order: Vec<String> = s.jobs().into_iter().map(|r| r.job_id.into()).collect();
    assert_eq!(order, ["c", "a", "b"]);
    // Now T0 + 60s: "c" is exactly 60 s old, not older.
    assert!(s.job("c").is_some());
    clock.advance(1);
    assert_eq!(s.job("c"), None);
    assert_eq!(shared.value(&job_key("c")), None, "expired record removed");
    assert_eq!(
        s.check_cancel("c").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    clock.advance(60_000);
    assert!(s.jobs().is_empty());
    assert_eq!(shared.all_keys(), [SESSION_KEY]);
}

#[test]
fn max_jobs_evicts_terminal_records_first_then_the_oldest() {
    let (shared, clock) = setup();
    let options = GuardOptions {
        max_jobs: 3,
        ..GuardOptions::default()
    };
    let mut s = tab_with(&shared, &clock, options);
    s.login(login(json!("1"), None)).unwrap();
    let mut record = |job: &str, status: &str| {
        clock.advance(1);
        s.record_job(meta(job, json!("1"), "c", status)).unwrap();
    };
    record("r1", "running");
    record("d1", "done");
    record("r2", "running");
    record("r3", "running");
    let ids = |s: &mut JobStore<Shared, ManualClock>| -> Vec<String> {
        s.jobs().into_iter().map(|r| r.job_id.into()).collect()
    };
    assert_eq!(ids(&mut s), ["r1", "r2", "r3"], "terminal d1 went first");
    clock.advance(1);
    s.record_job(meta("r4", json!("1"), "c", "running"))
        .unwrap();
    assert_eq!(ids(&mut s), ["r2", "r3", "r4"], "then the oldest");
    clock.advance(1);
    s.record_job(meta("d2", json!("1"), "c", "done")).unwrap();
    assert_eq!(ids(&mut s), ["r3", "r4", "d2"], "the new record is kept");
}

#[test]
fn logout_clears_the_namespace_and_supersets_last_event_id_only() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j1", json!("1"), "c", "running"))
        .unwrap();
    s.record_job(meta("j2", json!("1"), "c", "done")).unwrap();
    shared.put("superset-job-guard:v2:job:future", "{}");
    shared.put("superset-job-guard:v1:job:broken", "{not json");
    shared.put(SUPERSET_LAST_EVENT_KEY, "1607471525180-0");
    shared.put("superset-job-guard-other:v1:session", "{}");
    shared.put("unrelated", "keep");
    assert_eq!(s.logout(), 3, "j1, j2 and the broken v1 record");
    let mut keys = shared.all_keys();
    keys.sort();
    assert_eq!(keys, ["superset-job-guard-other:v1:session", "unrelated"]);
    assert_eq!(s.session(), None);
    assert_eq!(s.logout(), 0, "a second logout is harmless");
    assert_eq!(s.sign_out(), (0, false), "and removes nothing");
    assert_eq!(
        s.check_cancel("j1").refusal(),
        Some(CancelRefusal::NoSession)
    );
}

#[test]
fn two_tabs_share_the_session_and_see_logout_at_once() {
    let (shared, clock) = setup();
    let mut one = tab(&shared, &clock);
    let mut two = tab(&shared, &clock);
    one.login(login(json!("1"), None)).unwrap();
    assert_eq!(two.session(), one.session(), "picked up without login");
    one.record_job(meta("from-one", json!("1"), "c", "running"))
        .unwrap();
    two.record_job(meta("from-two", json!("1"), "c", "running"))
        .unwrap();
    assert_eq!(one.jobs().len(), 2);
    assert!(two.check_cancel("from-one").is_allowed());
    one.logout();
    assert_eq!(
        two.check_cancel("from-one").refusal(),
        Some(CancelRefusal::NoSession)
    );
    assert!(two.jobs().is_empty());
    assert_eq!(
        two.record_job(meta("late", json!("1"), "c", "running")),
        Err(GuardError::NoSession)
    );
}

#[test]
fn a_user_switch_in_another_tab_is_honoured_at_once() {
    let (shared, clock) = setup();
    let mut one = tab(&shared, &clock);
    let mut two = tab(&shared, &clock);
    one.login(login(json!("1"), None)).unwrap();
    one.record_job(meta("a", json!("1"), "c", "running"))
        .unwrap();
    two.login(login(json!("2"), None)).unwrap();
    assert_eq!(
        one.check_cancel("a").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    assert_eq!(one.session(), Some(login(json!("2"), None)));
    let err = one
        .record_job(meta("a2", json!("1"), "c", "running"))
        .unwrap_err();
    assert_eq!(err.code(), "not_job_owner");
}

#[test]
fn malformed_stored_values_read_as_absent_and_are_removed() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    shared.put(SESSION_KEY, "{garbage");
    assert_eq!(s.session(), None);
    assert_eq!(shared.value(SESSION_KEY), None);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("good", json!("1"), "c", "running"))
        .unwrap();
    shared.put(&job_key("bad"), "{\"job_id\":");
    let mismatched = JobRecord::new(meta("other", json!("1"), "c", "running"), T0, T0);
    shared.put(&job_key("swapped"), &mismatched.to_stored());
    let ids: Vec<String> = s.jobs().into_iter().map(|r| r.job_id.into()).collect();
    assert_eq!(ids, ["good"]);
    assert_eq!(shared.value(&job_key("bad")), None);
    assert_eq!(shared.value(&job_key("swapped")), None);
    assert!(s.check_cancel("good").is_allowed());
}

#[test]
fn other_schema_versions_are_left_to_their_owners_until_logout() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    shared.put("superset-job-guard:v2:job:x", "{\"new\":\"format\"}");
    assert!(s.jobs().is_empty());
    assert_eq!(s.login(login(json!("2"), None)).unwrap(), 0);
    assert!(shared.value("superset-job-guard:v2:job:x").is_some());
    s.logout();
    assert!(shared.value("superset-job-guard:v2:job:x").is_none());
}

#[test]
fn namespaces_do_not_see_each_other() {
    let (shared, clock) = setup();
    let mut a = tab_with(
        &shared,
        &clock,
        GuardOptions {
            namespace: "app-a".into(),
            ..GuardOptions::default()
        },
    );
    let mut b = tab_with(
        &shared,
        &clock,
        GuardOptions {
            namespace: "app-b".into(),
            ..GuardOptions::default()
        },
    );
    a.login(login(json!("1"), None)).unwrap();
    a.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    assert_eq!(b.session(), None);
    b.login(login(json!("1"), None)).unwrap();
    assert_eq!(
        b.check_cancel("j").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    b.logout();
    assert!(a.check_cancel("j").is_allowed());
}

#[test]
fn settling_a_cancel_updates_or_removes_the_record() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    for job in ["ok", "forbidden", "gone", "busy", "done"] {
        s.record_job(meta(job, json!("1"), "c", "running")).unwrap();
    }
    s.apply_event(meta("done", json!("1"), "c", "done"))
        .unwrap();
    clock.advance(5);
    s.settle_cancel("ok", Outcome::Cancelled, None, None);
    s.settle_cancel("forbidden", Outcome::NotJobOwner, None, None);
    s.settle_cancel("gone", Outcome::NotFound, None, None);
    s.settle_cancel("busy", Outcome::Failed, None, None);
    s.settle_cancel("done", Outcome::Cancelled, None, None);
    s.settle_cancel("never-recorded", Outcome::Cancelled, None, None);
    let ok = s.job("ok").unwrap();
    assert_eq!(
        (ok.status(), ok.updated_at),
        (JobStatus::Cancelled.into(), T0 + 5)
    );
    assert_eq!(s.job("forbidden"), None);
    assert_eq!(shared.value(&job_key("forbidden")), None);
    assert_eq!(s.job("gone"), None);
    assert_eq!(s.job("busy").unwrap().status(), JobStatus::Running);
    assert_eq!(
        s.job("done").unwrap().status(),
        JobStatus::Done,
        "terminal stays"
    );
    assert_eq!(s.job("never-recorded"), None);
    assert_eq!(
        s.check_cancel("ok").refusal(),
        Some(CancelRefusal::AlreadyFinished)
    );
}

/// Storage whose writes and removals fail.
struct ReadOnly(MemoryStorage);

impl KeyValue for ReadOnly {
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        self.0.get_text(key)
    }
    fn set<T: Serialize + ?Sized>(&mut self, _: &str, _: &T) -> Result<(), StorageError> {
        Err(StorageError::new(
            crate::core::error::StorageErrorKind::Other,
            "SecurityError: writes refused",
        ))
    }
    fn remove(&mut self, _: &str) -> Result<(), StorageError> {
        Err(StorageError::new(
            crate::core::error::StorageErrorKind::Other,
            "no",
        ))
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        self.0.keys()
    }
}

#[test]
fn refused_writes_and_removals_never_fail_an_operation() {
    let mut inner = MemoryStorage::new();
    inner.set_text(SESSION_KEY, r#"{"user_id":"1","channel_id":"c"}"#);
    let mut s = JobStore::new(
        ReadOnly(inner),
        ManualClock::at(T0),
        &GuardOptions::default(),
    );
    assert_eq!(
        s.storage_status().kind,
        crate::core::fallback::StorageMode::Local
    );
    let rec = s.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    assert_eq!(s.job("j"), Some(rec), "kept in memory, not lost");
    let status = s.storage_status();
    assert_eq!(status.kind, crate::core::fallback::StorageMode::Degraded);
    assert!(status.reason.unwrap().contains("writes refused"));
    assert_eq!(s.stats().kept_in_memory, 1);
    // Logout cannot remove the stored marker, but this tab honours it.
    assert_eq!(s.logout(), 1);
    assert_eq!(s.session(), None);
    assert!(s.jobs().is_empty());
    assert_eq!(s.login(login(json!("2"), None)).unwrap(), 0);
    assert_eq!(s.session().unwrap().user_id.as_deref(), Some("2"));
}
/// Storage with a byte budget, like a browser's quota.
struct Capped {
    inner: MemoryStorage,
    capacity: usize,
    /// Writes refused so far.
    refused: usize,
}

impl Capped {
    fn used(&self) -> usize {
        self.inner
            .keys()
            .unwrap()
            .iter()
            .map(|k| k.len() + self.inner.text(k).unwrap().len())
            .sum()
    }
}

impl KeyValue for Capped {
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        self.inner.get_text(key)
    }
    fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError> {
        let old = self.inner.text(key).map_or(0, |v| key.len() + v.len());
        let value = crate::core::storage::to_json(value)?;
        if self.used() - old + key.len() + value.len() > self.capacity {
            self.refused += 1;
            return Err(StorageError::new(
                crate::core::error::StorageErrorKind::QuotaExceeded,
                "QuotaExceededError: the quota has been exceeded",
            ));
        }
        self.inner.set_text(key, &value);
        Ok(())
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        self.inner.remove(key)
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        self.inner.keys()
    }
}

#[test]
fn a_full_storage_evicts_terminal_records_oldest_first_then_retries_once() {
    let clock = ManualClock::at(T0);
    // Room for the session marker and about three records.
    let capped = Capped {
        inner: MemoryStorage::new(),
        capacity: 700,
        refused: 0,
    };
    let mut s = JobStore::new(capped, clock.clone(), &GuardOptions::default());
    s.login(login(json!("1"), None)).unwrap();
    for (job, status) in [
        ("old-done", "done"),
        ("running", "running"),
        ("new-done", "error"),
    ] {
        clock.advance(1);
        s.record_job(meta(job, json!("1"), "c", status)).unwrap();
    }
    assert_eq!(
        s.storage_status().kind,
        crate::core::fallback::StorageMode::Local
    );
    clock.advance(1);
    s.record_job(meta("fresh", json!("1"), "c", "pending"))
        .unwrap();
    let stored: Vec<String> = s.storage().inner.keys().unwrap();
    assert!(
        !stored.contains(&job_key("old-done")),
        "oldest terminal evicted"
    );
    assert!(
        stored.contains(&job_key("new-done")),
        "only as much as needed"
    );
    assert!(
        stored.contains(&job_key("running")),
        "running jobs are never evicted for space"
    );
    assert!(stored.contains(&job_key("fresh")));
    assert_eq!(s.stats().removed.evicted_for_space, 1);
    assert_eq!(s.stats().kept_in_memory, 0);
    assert_eq!(
        s.storage_status().kind,
        crate::core::fallback::StorageMode::Local
    );
}

#[test]
fn a_full_storage_with_nothing_to_evict_keeps_the_record_in_memory() {
    let clock = ManualClock::at(T0);
    let capped = Capped {
        inner: MemoryStorage::new(),
        capacity: 450,
        refused: 0,
    };
    let mut s = JobStore::new(capped, clock.clone(), &GuardOptions::default());
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("a", json!("1"), "c", "running")).unwrap();
    s.record_job(meta("b", json!("1"), "c", "running")).unwrap();
    let c = s.record_job(meta("c", json!("1"), "c", "running")).unwrap();
    assert_eq!(s.job("c"), Some(c), "recordJob never loses the job");
    assert_eq!(
        s.storage().refused,
        1,
        "no second write when nothing was evicted"
    );
    assert!(!s.storage().inner.keys().unwrap().contains(&job_key("c")));
    let status = s.storage_status();
    assert_eq!(status.kind, crate::core::fallback::StorageMode::Degraded);
    assert!(status.reason.unwrap().contains("QuotaExceededError"));
    assert_eq!(s.stats().kept_in_memory, 1);
    assert!(s.check_cancel("c").is_allowed());
    assert_eq!(s.jobs().len(), 3);
    // Another tab's sign-out or user switch (its storage event names the session key) makes
    // what this tab kept in memory stale: it is dropped.
    assert!(s.is_session_key("superset-job-guard:v1:session"));
    assert_eq!(s.session_key(), "superset-job-guard:v1:session");
    assert_eq!(s.job_prefix(), "superset-job-guard:v1:job:");
    assert!(!s.is_session_key(&job_key("c")));
    assert!(!s.is_session_key("other:v1:session"));
    s.forget_memory();
    assert_eq!(s.job("c"), None);
    assert_eq!(s.jobs().len(), 2);
    let c = s.record_job(meta("c", json!("1"), "c", "running")).unwrap();
    assert_eq!(s.job("c"), Some(c));
    // Logout clears memory too.
    assert_eq!(s.logout(), 3);
    assert_eq!(
        s.storage_status().kind,
        crate::core::fallback::StorageMode::Local
    );
}

#[test]
fn every_kind_of_corrupt_entry_is_removed_counted_and_harmless() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("good", json!("1"), "c", "running"))
        .unwrap();
    let good = shared.value(&job_key("good")).unwrap();
    let foreign = JobRecord::new(meta("foreign", json!("2"), "c", "running"), T0, T0);
    let entries = [
        ("unparseable", "{nope".to_owned()),
        (
            "wrong-types",
            r#"{"channel_id":1,"job_id":"wrong-types"}"#.to_owned(),
        ),
        (
            "missing",
            r#"{"job_id":"missing","status":"done"}"#.to_owned(),
        ),
        ("swapped", good.clone()),
        (
            "huge",
            good.replace(
                "\"errors\":[]",
                &format!("\"errors\":[\"{}\"]", "x".repeat(20_000)),
            ),
        ),
        ("__proto__", good.replace("\"good\"", "\"__proto__\"")),
        ("constructor", good.replace("\"good\"", "\"constructor\"")),
        ("foreign", foreign.to_stored()),
    ];
    for (id, text) in &entries {
        shared.put(&job_key(id), text);
    }
    let ids: Vec<String> = s.jobs().into_iter().map(|r| r.job_id.into()).collect();
    assert_eq!(ids, ["good"], "the valid record is kept");
    let mut left = shared.all_keys();
    left.sort();
    assert_eq!(left, [job_key("good"), SESSION_KEY.to_owned()]);
    let removed = s.stats().removed;
    assert_eq!(removed.unreadable, 3);
    assert_eq!(removed.key_mismatch, 1);
    assert_eq!(removed.oversized, 1);
    assert_eq!(removed.reserved_id, 2);
    assert_eq!(removed.foreign_owner, 1);
    shared.put(
        SESSION_KEY,
        r#"{"user_id":{"forged":true},"channel_id":"c"}"#,
    );
    assert_eq!(s.session(), None);
    assert_eq!(s.stats().removed.invalid_session, 1);
    assert_eq!(
        s.check_cancel("good").refusal(),
        Some(CancelRefusal::NoSession)
    );
}

#[test]
fn oversized_metadata_is_refused_and_oversized_events_keep_their_status() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    let huge = vec![json!({"message": "x".repeat(1000)}); 40];
    let big = JobMetadata::read(json!({"channel_id": "c", "job_id": "big", "user_id": "1",
        "status": "error", "errors": huge}))
    .unwrap();
    assert_eq!(s.record_job(big.clone()).unwrap_err().code(), "invalid_job");
    assert_eq!(s.session().unwrap().channel_id, None, "nothing changed");
    s.record_job(meta("big", json!("1"), "c", "running"))
        .unwrap();
    let rec = s.apply_event(big).unwrap().unwrap();
    assert_eq!(rec.status(), JobStatus::Error);
    assert!(!rec.errors().is_empty() && rec.errors().len() < 40);
    assert_eq!(s.job("big").unwrap().status(), JobStatus::Error);
}

// ---- the task framework's tasks, and guests ----

const TA: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";
const TB: &str = "2b1e0c5d-6f7a-4b8c-9d0e-1f2a3b4c5d6e";

fn tasks(body: Value) -> crate::core::task::Submission {
    crate::core::task::Submission::read(Json(&body)).unwrap()
}

fn status(task: &str, status: &str) -> crate::core::task::StatusChange {
    crate::core::task::StatusChange::read(json!({"task_id": task, "status": status})).unwrap()
}

#[test]
fn records_tasks_for_the_session_and_applies_their_statuses() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    assert_eq!(
        s.record_tasks(tasks(json!({"task_ids": [TA]}))),
        Err(GuardError::NoSession)
    );
    s.login(login(json!(1), None)).unwrap();
    let recs = s
        .record_tasks(tasks(
            json!({"task_ids": [TA, TB], "cursor": "c", "tab_id": "t1"}),
        ))
        .unwrap();
    assert_eq!(recs.len(), 2);
    let stored: Value = serde_json::from_str(&shared.value(&job_key(TA)).unwrap()).unwrap();
    assert_eq!(
        stored,
        json!({"channel_id": null, "job_id": TA, "user_id": "1", "status": "pending",
               "errors": [], "result_url": null, "created_at": T0, "updated_at": T0,
               "tab_ids": ["t1"]})
    );
    assert!(s.check_cancel(TA).is_allowed());
    assert_eq!(s.cancel_tab(TA).as_deref(), Some("t1"));
    // Status changes: only the session's tasks, only real changes, terminal stays terminal.
    let changed = s.apply_task_statuses(vec![
        status(TA, "in_progress"),
        status(TB, "pending"),
        status("3c1e0c5d-6f7a-4b8c-9d0e-1f2a3b4c5d6e", "success"),
    ]);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].status(), TaskStatus::InProgress);
    assert_eq!(s.apply_task_statuses(vec![status(TA, "success")]).len(), 1);
    assert!(s
        .apply_task_statuses(vec![status(TA, "in_progress")])
        .is_empty());
    assert_eq!(s.job(TA).unwrap().status(), TaskStatus::Success);
    assert_eq!(
        s.check_cancel(TA).refusal(),
        Some(CancelRefusal::AlreadyFinished)
    );
    // Recording a finished task again keeps it finished.
    let again = s.record_tasks(tasks(json!({"task_ids": [TA]}))).unwrap();
    assert_eq!(again[0].status(), TaskStatus::Success);
    // A user switch purges tasks like jobs; another user's task is not_job_owner.
    s.login(login(json!(2), None)).unwrap();
    assert!(s.jobs().is_empty());
    assert_eq!(
        s.check_cancel(TB).refusal(),
        Some(CancelRefusal::UnknownJob)
    );
}

#[test]
fn tabs_watch_one_task_with_their_own_tab_ids() {
    let (shared, clock) = setup();
    let mut a = tab(&shared, &clock);
    let mut b = tab(&shared, &clock);
    a.login(login(json!(1), None)).unwrap();
    a.record_tasks(tasks(json!({"task_ids": [TA], "tab_id": "ta"})))
        .unwrap();
    let rec = b
        .record_tasks(tasks(json!({"task_ids": [TA], "tab_id": "tb"})))
        .unwrap();
    assert_eq!(rec[0].tab_ids(), ["ta", "tb"]);
    assert_eq!(a.cancel_tab(TA).as_deref(), Some("ta"));
    assert_eq!(b.cancel_tab(TA).as_deref(), Some("tb"));
    // What a tab alone knows goes when another tab's sign-out makes it stale.
    let (other, other_clock) = setup();
    let mut a_forgot = tab(&other, &other_clock);
    a_forgot.login(login(json!(1), None)).unwrap();
    a_forgot
        .record_tasks(tasks(json!({"task_ids": [TB], "tab_id": "tf"})))
        .unwrap();
    assert_eq!(a_forgot.cancel_tab(TB).as_deref(), Some("tf"));
    a_forgot.forget_memory();
    assert_eq!(a_forgot.cancel_tab(TB), None);
    // A tab that did not record it carries no tab id; a reloaded tab b, given its `tabId`,
    // carries its own.
    let mut c = tab(&shared, &clock);
    assert_eq!(c.cancel_tab(TA), None);
    let options = GuardOptions {
        tab_id: Some("tb".into()),
        ..GuardOptions::default()
    };
    let mut b_reloaded = tab_with(&shared, &clock, options);
    assert_eq!(b_reloaded.cancel_tab(TA).as_deref(), Some("tb"));
    // Tab a detaches: it no longer sees the task; b still does and may cancel it.
    a.settle_cancel(TA, Outcome::Left, Some("detached"), None);
    assert!(a.job(TA).is_none());
    assert!(a.jobs().is_empty());
    assert_eq!(
        a.check_cancel(TA).refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    assert_eq!(b.job(TA).unwrap().tab_ids(), ["tb"]);
    assert!(b.check_cancel(TA).is_allowed());
    // b detaches too: the last tab, so the record goes.
    b.settle_cancel(TA, Outcome::Left, Some("detached"), None);
    assert_eq!(shared.value(&job_key(TA)), None);
    // Recording it again in a makes it a's again.
    a.record_tasks(tasks(json!({"task_ids": [TA], "tab_id": "ta"})))
        .unwrap();
    assert!(a.check_cancel(TA).is_allowed());
    // Unsubscribed: the user left the task; the record goes for every tab.
    a.settle_cancel(TA, Outcome::Left, Some("unsubscribed"), None);
    assert_eq!(shared.value(&job_key(TA)), None);
}

#[test]
fn task_cancel_answers_settle_the_record() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!(1), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA, TB]})))
        .unwrap();
    clock.advance(5);
    s.settle_cancel(TA, Outcome::Cancelled, Some("aborted"), None);
    assert_eq!(s.job(TA).unwrap().status(), TaskStatus::Aborted);
    s.settle_cancel(TB, Outcome::Unsupported, None, None);
    assert_eq!(s.job(TB).unwrap().status(), TaskStatus::Pending, "kept");
    s.settle_cancel(TB, Outcome::AlreadyFinished, None, None);
    assert!(s.job(TB).is_none());
    // An async_event job answered `unsupported` (6.1.0) stays, and its events still apply.
    s.record_job(meta("j", json!("1"), "c", "pending")).unwrap();
    s.settle_cancel("j", Outcome::Unsupported, None, None);
    assert!(s
        .apply_event(meta("j", json!("1"), "c", "done"))
        .unwrap()
        .is_some());
    assert_eq!(s.job("j").unwrap().status(), JobStatus::Done);
}

#[test]
fn guests_with_another_guest_key_inherit_nothing() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    let guest =
        |key: &str| Session::from_login(Json(&json!({"userId": null, "guestKey": key}))).unwrap();
    s.login(guest("g1")).unwrap();
    // 6.1.0: every guest is user null on one shared channel.
    s.record_job(meta("j1", Value::Null, "chan", "pending"))
        .unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA]}))).unwrap();
    let stored: Value = serde_json::from_str(&shared.value(&job_key("j1")).unwrap()).unwrap();
    assert_eq!(stored["guest_key"], "g1");
    assert_eq!(s.jobs().len(), 2);
    // The same guest again keeps them; another guest token purges them.
    assert_eq!(s.login(guest("g1")).unwrap(), 0);
    assert_eq!(s.login(guest("g2")).unwrap(), 2);
    assert!(s.jobs().is_empty());
    assert_eq!(
        s.check_cancel("j1").refusal(),
        Some(CancelRefusal::UnknownJob)
    );
    // A record of guest g1 written by an old tab is not g2's.
    shared.put(
        &job_key("j2"),
        r#"{"channel_id":"chan","job_id":"j2","user_id":null,"status":"pending","errors":[],"result_url":null,"created_at":1700000000000,"updated_at":1700000000000,"guest_key":"g1"}"#,
    );
    assert_eq!(
        s.check_cancel("j2").refusal(),
        Some(CancelRefusal::NotJobOwner)
    );
}

#[test]
fn job_events_and_job_metadata_never_turn_a_task_into_a_job() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!(1), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA]}))).unwrap();
    // An async event naming the task's uuid changes nothing (and does not corrupt it).
    assert_eq!(
        s.apply_event(meta(TA, json!("1"), "c", "done")).unwrap(),
        None
    );
    assert_eq!(s.job(TA).unwrap().status(), TaskStatus::Pending);
    assert!(s.job(TA).unwrap().is_task());
    // Job metadata with that id replaces the task's record with a job's, never returns it.
    s.apply_task_statuses(vec![status(TA, "success")]);
    let job = s.record_job(meta(TA, json!("1"), "c", "running")).unwrap();
    assert!(!job.is_task());
    assert_eq!(job.status(), JobStatus::Running);
}

#[test]
fn updates_with_a_status_this_guard_does_not_know_are_skipped_and_counted() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!(1), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA, TB]})))
        .unwrap();
    let changes = crate::core::task::StatusChange::read_all(json!({
        "statuses": {TA: {"status": "paused"}, TB: {"status": "in_progress"}}
    }))
    .unwrap();
    let changed = s.apply_task_statuses(changes);
    assert_eq!(changed.len(), 1, "the known entry applies");
    assert_eq!(s.job(TB).unwrap().status(), TaskStatus::InProgress);
    assert_eq!(s.job(TA).unwrap().status(), TaskStatus::Pending);
    assert_eq!(s.stats().unknown_statuses, 1);
    assert!(s.apply_task_statuses(vec![status(TA, "queued")]).is_empty());
    assert_eq!(s.stats().unknown_statuses, 2);
    // An event: read as nothing to apply, the rest of it still checked.
    let event = |status: &str| {
        JobMetadata::read_event(json!({"channel_id": "c", "job_id": "j", "user_id": "1",
            "status": status, "errors": [], "result_url": null}))
    };
    assert_eq!(event("paused").unwrap(), None);
    assert_eq!(event("in_progress").unwrap(), None);
    assert_eq!(event("done").unwrap().unwrap().status, JobStatus::Done);
    assert_eq!(
        JobMetadata::read_event(json!({"job_id": "j", "status": "paused"}))
            .unwrap_err()
            .code(),
        "invalid_job"
    );
    assert!(
        JobMetadata::read_event(json!({"channel_id": "c", "job_id": "j", "user_id": "1",
            "status": 5}))
        .is_err()
    );
    // Job metadata (a create call's answer) with an unknown status is still refused.
    assert!(
        JobMetadata::read(json!({"channel_id": "c", "job_id": "j", "user_id": "1",
            "status": "paused"}))
        .is_err()
    );
}

#[test]
fn a_tasks_uuid_finds_its_record_in_any_case() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!(1), None)).unwrap();
    let upper = TA.to_uppercase();
    s.record_tasks(tasks(json!({"task_ids": [upper], "tab_id": "t1"})))
        .unwrap();
    assert_eq!(s.job(&upper).unwrap().job_id, TA);
    assert!(s.check_cancel(&upper).is_allowed());
    assert_eq!(s.cancel_tab(&upper).as_deref(), Some("t1"));
    assert_eq!(s.record_id(&upper), TA);
    // An async_event job whose id is an upper-case uuid keeps its own spelling.
    let job = "AAAAAAAA-03C8-4737-9345-F4234BA86512";
    s.record_job(meta(job, json!("1"), "c", "running")).unwrap();
    assert_eq!(s.record_id(job), job);
    assert_eq!(s.job(job).unwrap().job_id, job);
    assert_eq!(s.job(&job.to_lowercase()), None);
    assert_eq!(s.record_id("job-1"), "job-1");
}

#[test]
fn a_tasks_status_read_back_after_a_422_is_its_records_status() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!(1), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA, TB]})))
        .unwrap();
    clock.advance(7);
    // Still running without an abort handler: kept, with the status the server gave.
    s.settle_cancel(TA, Outcome::Refused, None, Some(TaskStatus::InProgress));
    let ta = s.job(TA).unwrap();
    assert_eq!(
        (ta.status(), ta.updated_at),
        (TaskStatus::InProgress.into(), T0 + 7)
    );
    assert!(s.check_cancel(TA).is_allowed());
    // Finished: kept, finished.
    s.settle_cancel(
        TB,
        Outcome::AlreadyFinished,
        None,
        Some(TaskStatus::Success),
    );
    assert_eq!(s.job(TB).unwrap().status(), TaskStatus::Success);
    assert_eq!(
        s.check_cancel(TB).refusal(),
        Some(CancelRefusal::AlreadyFinished)
    );
    // A terminal record never moves; no status read back changes nothing.
    s.settle_cancel(TB, Outcome::Refused, None, Some(TaskStatus::InProgress));
    assert_eq!(s.job(TB).unwrap().status(), TaskStatus::Success);
    s.settle_cancel(TA, Outcome::Refused, None, None);
    assert_eq!(s.job(TA).unwrap().status(), TaskStatus::InProgress);
}

#[test]
fn a_sign_in_says_whether_the_session_changed() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    assert!(s.sign_in(login(json!(1), None)).unwrap().changed);
    let again = s.sign_in(login(json!(1), None)).unwrap();
    assert_eq!((again.purged, again.changed), (0, false));
    // Only the channel: the same user, a changed session.
    let channel = s.sign_in(login(json!(1), Some("c2"))).unwrap();
    assert_eq!((channel.purged, channel.changed), (0, true));
    assert_eq!(channel.previous, Some(login(json!(1), None)));
}

#[test]
fn a_logout_says_whether_it_removed_anything() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    assert_eq!(s.sign_out(), (0, false), "nothing to remove");
    s.login(login(json!(1), None)).unwrap();
    assert_eq!(s.sign_out(), (0, true), "the session marker");
    assert_eq!(s.sign_out(), (0, false));
    s.login(login(json!(1), None)).unwrap();
    s.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    assert_eq!(s.sign_out(), (1, true));
}

#[test]
fn another_tabs_keys_are_told_apart() {
    let (shared, clock) = setup();
    let s = tab(&shared, &clock);
    assert!(s.is_session_key(SESSION_KEY));
    assert!(!s.is_session_key(&job_key("j")));
    assert!(!s.is_session_key("other:v1:session"));
    assert!(s.owns_key(&job_key("j")));
    assert!(!s.owns_key("other:v1:session"));
}

#[test]
fn forgetting_memory_drops_what_this_tab_alone_kept() {
    let (shared, clock) = setup();
    let mut a = tab(&shared, &clock);
    let mut b = tab(&shared, &clock);
    a.login(login(json!(1), None)).unwrap();
    a.record_tasks(tasks(json!({"task_ids": [TA], "tab_id": "ta"})))
        .unwrap();
    b.record_tasks(tasks(json!({"task_ids": [TA], "tab_id": "tb"})))
        .unwrap();
    a.settle_cancel(TA, Outcome::Left, Some("detached"), None);
    assert!(a.job(TA).is_none(), "a left the task");
    assert_eq!(b.cancel_tab(TA).as_deref(), Some("tb"));
    // Another tab signed out or switched user: a's own memory of tasks goes.
    a.forget_memory();
    b.forget_memory();
    assert!(a.job(TA).is_some(), "what a left is forgotten too");
    assert_eq!(b.cancel_tab(TA), None, "b's own tab id is forgotten");
}

#[test]
fn running_names_the_sessions_records_of_the_contract_left_to_follow() {
    use crate::core::response::Contract::{AsyncEvent, Task};
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    let mut other = tab(&shared, &clock);
    assert!(s.running(AsyncEvent).is_empty() && s.running(Task).is_empty());
    s.login(login(json!(1), Some("chan-1"))).unwrap();
    assert!(s.running(AsyncEvent).is_empty() && s.running(Task).is_empty());
    s.record_job(meta("job-a", json!("1"), "chan-1", "pending"))
        .unwrap();
    // Another tab of the origin sees it at once.
    assert!(!other.running(AsyncEvent).is_empty());
    assert!(other.running(Task).is_empty());
    s.record_tasks(tasks(json!({"task_ids": [TA]}))).unwrap();
    assert_eq!(s.running(Task), [TA]);
    assert_eq!(s.running(AsyncEvent), ["job-a"]);
    // Ended records leave nothing to follow.
    s.apply_event(meta("job-a", json!("1"), "chan-1", "done"))
        .unwrap();
    assert!(s.running(AsyncEvent).is_empty());
    assert!(!s.running(Task).is_empty());
    s.apply_task_statuses(vec![status(TA, "aborting")]);
    assert!(!s.running(Task).is_empty());
    s.apply_task_statuses(vec![status(TA, "timed_out")]);
    assert!(other.running(Task).is_empty());
    // Another user's running record is not the session's to follow.
    s.record_job(meta("job-b", json!("1"), "chan-1", "running"))
        .unwrap();
    assert!(!other.running(AsyncEvent).is_empty());
    other.login(login(json!(2), Some("chan-2"))).unwrap();
    assert!(s.running(AsyncEvent).is_empty());
    other
        .record_job(meta("job-c", json!("2"), "chan-2", "pending"))
        .unwrap();
    assert!(!s.running(AsyncEvent).is_empty());
    // A logout in any tab ends it.
    other.logout();
    assert!(s.running(AsyncEvent).is_empty());
}

#[test]
fn a_failed_tasks_reason_read_back_is_kept_with_its_record() {
    let (shared, clock) = setup();
    let mut a = tab(&shared, &clock);
    a.login(login(json!(1), None)).unwrap();
    a.record_tasks(tasks(json!({"task_ids": [TA, TB]})))
        .unwrap();
    // Only a task that failed takes a reason.
    assert!(a.keep_task_error(TA, "no").is_none());
    a.apply_task_statuses(vec![status(TA, "failure"), status(TB, "success")]);
    assert!(a.keep_task_error(TB, "no").is_none());
    let kept = a
        .keep_task_error(TA, "Column \"x\" does not exist")
        .unwrap();
    assert_eq!(
        kept.errors(),
        [json!({"message": "Column \"x\" does not exist"})]
    );
    assert!(
        a.keep_task_error(TA, "Column \"x\" does not exist")
            .is_none(),
        "unchanged"
    );
    // Stored: another tab reads it back.
    let mut b = tab(&shared, &clock);
    assert_eq!(b.job(TA).unwrap().errors(), kept.errors());
    assert!(b.job(TB).unwrap().errors().is_empty());
    // Another user's task is not this session's to annotate.
    b.login(login(json!(2), None)).unwrap();
    assert!(b.keep_task_error(TA, "x").is_none());
}

/// Records every removal and write the storage is asked for, in order (what another tab's
/// `storage` events would carry).
#[derive(Clone, Default)]
struct Logged {
    inner: Shared,
    log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
}

impl KeyValue for Logged {
    fn get_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        self.inner.get_text(key)
    }
    fn set<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), StorageError> {
        self.log.borrow_mut().push(format!("set {key}"));
        self.inner.set(key, value)
    }
    fn remove(&mut self, key: &str) -> Result<(), StorageError> {
        self.log.borrow_mut().push(format!("remove {key}"));
        self.inner.remove(key)
    }
    fn keys(&self) -> Result<Vec<String>, StorageError> {
        self.inner.keys()
    }
}

#[test]
fn the_session_changes_before_any_record_goes_on_logout_and_on_a_switch() {
    let clock = ManualClock::at(T0);
    let storage = Logged::default();
    let log = storage.log.clone();
    let mut s = JobStore::new(storage, clock.clone(), &GuardOptions::default());
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j1", json!("1"), "c", "running"))
        .unwrap();
    s.record_job(meta("j2", json!("1"), "c", "running"))
        .unwrap();
    let first_change = |log: &[String]| {
        log.iter().position(|l| l.ends_with(SESSION_KEY)).unwrap()
            < log.iter().position(|l| l.contains(":v1:job:")).unwrap()
    };
    log.borrow_mut().clear();
    s.sign_in(login(json!("2"), None)).unwrap();
    assert!(first_change(&log.borrow()), "{:?}", log.borrow());
    s.record_job(meta("k1", json!("2"), "c", "running"))
        .unwrap();
    log.borrow_mut().clear();
    s.logout();
    assert!(first_change(&log.borrow()), "{:?}", log.borrow());
}

#[test]
fn a_job_purged_when_its_session_ended_is_refused_to_another_users_session_until_its_ttl_ends() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    let mut other = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA]}))).unwrap();
    let record_text = shared.value(&job_key(TA)).unwrap();
    clock.advance(1_000);
    // Another tab signs user 2 in: the session changes first, then user 1's task goes, which
    // this tab hears as the record's removal.
    assert_eq!(other.sign_in(login(json!("2"), None)).unwrap().purged, 1);
    s.heard_removal(&record_text);
    // User 1's late 202 reaches this tab, now user 2's: refused, nothing stored.
    let late = s.record_tasks(tasks(json!({"task_ids": [TA.to_uppercase()]})));
    assert_eq!(late.unwrap_err().code(), "not_job_owner");
    assert_eq!(s.job(TA), None);
    // ... in the tab that purged it too.
    assert!(other
        .record_tasks(tasks(json!({"task_ids": [TA]})))
        .is_err());
    // Another task of the new session is recorded as ever.
    assert_eq!(
        s.record_tasks(tasks(json!({"task_ids": [TB]})))
            .unwrap()
            .len(),
        1
    );
    // The same user signing in again may record it: Superset gives an identical query the same
    // task, and it is theirs on the server.
    s.logout();
    s.login(login(json!("1"), None)).unwrap();
    assert!(s.record_tasks(tasks(json!({"task_ids": [TA]}))).is_ok());
    s.logout();
    s.login(login(json!("3"), None)).unwrap();
    assert!(s.record_tasks(tasks(json!({"task_ids": [TA]}))).is_err());
    // Remembered until the record would have expired (created again at T0 + 1 s, one hour),
    // no longer.
    clock.set(T0 + 1_000 + GuardOptions::default().ttl_ms);
    assert!(s.record_tasks(tasks(json!({"task_ids": [TA]}))).is_err());
    clock.set(T0 + 1_000 + GuardOptions::default().ttl_ms + 1);
    assert!(s.record_tasks(tasks(json!({"task_ids": [TA]}))).is_ok());
    // Nothing of it is written: a logout leaves no key.
    s.logout();
    assert!(shared.all_keys().is_empty(), "{:?}", shared.all_keys());
}

#[test]
fn a_removal_within_the_session_is_no_purge_and_unreadable_text_is_ignored() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA]}))).unwrap();
    let text = shared.value(&job_key(TA)).unwrap();
    // Another tab's cancel removed it, the session unchanged: not a purge.
    s.heard_removal(&text);
    s.heard_removal("{not json");
    s.logout();
    s.login(login(json!("2"), None)).unwrap();
    assert!(
        s.record_tasks(tasks(json!({"task_ids": [TA]}))).is_err(),
        "this tab's own logout purged it"
    );
    let mut fresh = tab(&shared, &clock);
    fresh.heard_removal(&text.replace(TA, TB));
    assert!(
        fresh
            .record_tasks(tasks(json!({"task_ids": [TB]})))
            .is_err(),
        "heard under user 2: user 1's"
    );
}

#[test]
fn another_users_record_this_tab_removes_before_the_purge_reaches_it_is_remembered_too() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TA]}))).unwrap();
    // Another tab writes user 2's session; this tab reads its records before that tab's
    // removal comes (a poll, a render), and removes user 1's record itself: no storage event
    // will tell it of the purge.
    shared.put(SESSION_KEY, &login(json!("2"), None).to_stored());
    assert!(s.jobs().is_empty());
    assert_eq!(shared.value(&job_key(TA)), None);
    let late = s.record_tasks(tasks(json!({"task_ids": [TA]})));
    assert_eq!(late.unwrap_err().code(), "not_job_owner");

    // And a 202 naming a task of another user whose record is still here (that tab's purge
    // has not reached this one): refused, and remembered.
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_tasks(tasks(json!({"task_ids": [TB]}))).unwrap();
    shared.put(SESSION_KEY, &login(json!("2"), None).to_stored());
    let late = s.record_tasks(tasks(json!({"task_ids": [TB]})));
    assert_eq!(late.unwrap_err().code(), "not_job_owner");
    shared.put(SESSION_KEY, &login(json!("3"), None).to_stored());
    assert!(s.record_tasks(tasks(json!({"task_ids": [TB]}))).is_err());
}

#[test]
fn an_async_job_purged_at_logout_is_refused_after_a_sign_in_as_another_guest() {
    // A guest session has no user: metadata with `user_id: null` would match any guest.
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    let guest =
        |key: &str| Session::from_login(Json(&json!({"userId": null, "guestKey": key}))).unwrap();
    s.login(guest("g-1")).unwrap();
    s.record_job(meta("j", json!(null), "c", "running"))
        .unwrap();
    s.logout();
    s.login(guest("g-2")).unwrap();
    let late = s.record_job(meta("j", json!(null), "c", "running"));
    assert_eq!(late.unwrap_err().code(), "not_job_owner");
}

#[test]
fn the_purged_memory_is_bounded() {
    let (shared, clock) = setup();
    let mut s = tab_with(
        &shared,
        &clock,
        GuardOptions {
            max_jobs: 10_000,
            ..GuardOptions::default()
        },
    );
    s.login(login(json!("1"), None)).unwrap();
    for i in 0..MAX_PURGED + 10 {
        clock.advance(1);
        s.record_job(meta(&format!("j{i}"), json!("1"), "c", "running"))
            .unwrap();
    }
    s.logout();
    s.login(login(json!("2"), None)).unwrap();
    // The oldest (soonest to expire) went first: j0 may be recorded again, the last may not.
    assert!(s.record_job(meta("j0", json!("2"), "c", "running")).is_ok());
    let last = format!("j{}", MAX_PURGED + 9);
    assert!(s
        .record_job(meta(&last, json!("2"), "c", "running"))
        .is_err());
}

#[test]
fn a_waiter_reads_why_a_record_is_not_there() {
    let (shared, clock) = setup();
    let mut s = tab(&shared, &clock);
    s.login(login(json!("1"), None)).unwrap();
    s.record_job(meta("j", json!("1"), "c", "running")).unwrap();
    let ttl = GuardOptions::default().ttl_ms;
    let (record, expires_at) = s.awaited("j").unwrap();
    assert_eq!((&*record.job_id, expires_at), ("j", T0 + ttl + 1));
    clock.set(T0 + ttl);
    assert!(s.awaited("j").is_ok(), "not yet");
    clock.set(T0 + ttl + 1);
    assert_eq!(s.awaited("j").unwrap_err(), Gone::Expired);
    assert_eq!(s.awaited("j").unwrap_err(), Gone::Removed, "then gone");
    assert_eq!(s.awaited("never").unwrap_err(), Gone::Removed);
}

#[test]
fn a_logout_reads_what_other_tabs_queries_have_in_flight_and_takes_their_entries_first() {
    let (shared, clock) = setup();
    let mut a = tab(&shared, &clock);
    let mut b = tab(&shared, &clock);
    a.login(login(json!("1"), None)).unwrap();
    let stop = ("/api/v1/chart/data/stop".to_owned(), "sjg-1".to_owned());
    // Tab A: a plain wait on j1, a query waiting on j2 and j1, a query's request in flight.
    a.keep_entry(
        "page-a-1",
        &Awaited {
            jobs: vec!["j1".to_owned(), "j2".to_owned()],
            queries: vec!["j2".to_owned()],
            stops: vec![stop.clone()],
        },
    );
    // Tab C: a query waits on j1 too (A's plain wait keeps it out of the queries'), and on j3.
    a.keep_entry(
        "page-c-1",
        &Awaited {
            jobs: vec!["j1".to_owned(), "j3".to_owned()],
            queries: vec!["j1".to_owned(), "j3".to_owned()],
            stops: vec![stop.clone()],
        },
    );
    let seen = b.elsewhere("page-b");
    assert_eq!(seen.jobs, ["j1", "j2", "j3"]);
    assert_eq!(seen.queries, ["j2", "j3"], "j1 runs on for A's plain wait");
    assert_eq!(seen.stops, [stop], "each once");
    assert!(b.has_entry("page-a-1") && !b.has_entry("page-z-1"));
    // The logout takes the entries before the session marker goes: a tab that hears it finds
    // its entry gone.
    let before = shared.removals().len();
    b.logout();
    let removed = shared.removals().split_off(before);
    let session_at = removed.iter().position(|k| k == SESSION_KEY).unwrap();
    let entries: Vec<usize> = removed
        .iter()
        .enumerate()
        .filter(|(_, k)| k.contains(":waits:"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|&i| i < session_at), "{removed:?}");
    assert!(!a.has_entry("page-a-1"));
}

#[test]
fn tabs_wait_entries_are_read_by_others_until_their_ttl_and_change_no_record() {
    let (shared, clock) = setup();
    let mut a = tab(&shared, &clock);
    let mut b = tab(&shared, &clock);
    a.login(login(json!("1"), None)).unwrap();
    a.keep_waits("page-a-1", &["j1".to_owned(), "j2".to_owned()]);
    b.keep_waits("page-b-1", &["j3".to_owned()]);
    b.keep_waits("bad token!", &["j9".to_owned()]);
    a.keep_waits("page-a-2", &["j4".to_owned()]);
    assert_eq!(b.awaited_elsewhere("page-b"), ["j1", "j2", "j4"]);
    assert_eq!(
        a.awaited_elsewhere("page-a"),
        ["j3"],
        "the page's own guards are not elsewhere"
    );
    a.keep_waits("page-a-2", &[]);
    let key = "superset-job-guard:v1:waits:page-a-1";
    assert!(a.is_wait_key(key));
    assert!(!a.is_wait_key(SESSION_KEY) && !a.is_wait_key(&job_key("j1")));
    assert!(a.jobs().is_empty(), "an entry is no record");
    // Past its TTL an entry is not believed, and the reader removes it.
    clock.advance(WAIT_ENTRY_TTL_MS);
    assert!(b.awaited_elsewhere("page-b").is_empty());
    assert_eq!(shared.value(key), None);
    // Nothing awaited removes the entry; a refreshed one is believed again.
    b.keep_waits("page-b-1", &[]);
    assert_eq!(shared.value("superset-job-guard:v1:waits:page-b-1"), None);
    a.keep_waits("page-a-1", &["j1".to_owned()]);
    assert_eq!(b.awaited_elsewhere("page-b"), ["j1"]);
    shared.put("superset-job-guard:v1:waits:junk", "[1");
    assert_eq!(b.awaited_elsewhere("page-b"), ["j1"]);
    assert_eq!(shared.value("superset-job-guard:v1:waits:junk"), None);
    // A logout removes every entry with the namespace: the session's waits end with it.
    b.logout();
    assert!(shared.all_keys().is_empty());
    // A guard whose storage is its own memory keeps none and reads none.
    let mut private = JobStore::private(
        Shared::default(),
        None,
        clock.clone(),
        &GuardOptions::default(),
    );
    private.keep_waits("page-p-1", &["j1".to_owned()]);
    assert!(private.awaited_elsewhere("page-q").is_empty());
}
