//! `waitFor()` in the machine: settling, aborts, follow's hold, the page's end.

use super::*;
use crate::core::wait_outcome::{WaitRefusal, WaitResult};

fn event(job: &str, status: &str) -> Option<JobMetadata> {
    let event = json!({"channel_id": "c1", "job_id": job, "user_id": "1", "status": status,
                       "errors": [], "result_url": null});
    JobMetadata::read_event(Json(&event)).unwrap()
}

#[test]
fn a_wait_settles_done_and_holds_follow_while_it_waits() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"storage": "memory"}));
    let promise = p.wait(g, job_meta(JOB), None);
    // Held: the loop polls one interval on (a job just accepted; memory storage: no lock to
    // share).
    assert!(p.to(Method::Get, "/api/v1/async_event/").is_empty());
    p.advance(500);
    let polls = p.to(Method::Get, "/api/v1/async_event/");
    assert_eq!(polls.len(), 1, "{:?}", p.sent);
    p.answer(polls[0].req, 200, Some(json!({"result": []})));
    p.m.apply_event(g, event(JOB, "done")).unwrap();
    p.pump();
    assert_eq!(p.wait_outcome(promise).outcome, WaitResult::Done);
    // Nothing waits: the loop stops.
    p.advance(60_000);
    assert_eq!(p.to(Method::Get, "/api/v1/async_event/").len(), 1);
    assert!(p.quiet(), "{:?} {:?}", p.open, p.timers);
}

#[test]
fn an_abort_cancels_only_what_no_other_waiter_awaits() {
    let mut p = Page::new();
    let a = p.signed_in(json!({"storage": "memory"}));
    let b = p.signed_in(json!({"storage": "memory"}));
    let (one, two) = (JOB, "10a0bd9a-03c8-4737-9345-f4234ba86513");
    p.record(a, one);
    p.record(a, two);
    let signal = p.signal();
    let first = p.wait(a, json!([one, two]), Some(signal));
    // Another waiter awaits `two`: it runs on.
    let _second = p.wait(a, json!(two), None);
    p.handle(Event::Aborted(signal));
    let outcome = p.wait_outcome(first);
    assert_eq!(outcome.outcome, WaitResult::Aborted);
    assert_eq!(outcome.cancelling, [one]);
    let cancels: Vec<String> = p
        .sent
        .iter()
        .filter(|r| r.url.ends_with("/cancel"))
        .map(|r| r.url.clone())
        .collect();
    assert_eq!(cancels, [format!("/api/v1/async_event/{one}/cancel")]);
    let _ = b;
}

#[test]
fn a_401_settles_every_wait_unauthenticated() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"storage": "memory"}));
    let promise = p.wait(g, job_meta(JOB), None);
    p.advance(500);
    let poll = p.open_to("/api/v1/async_event/").unwrap();
    p.answer(poll, 401, None);
    let outcome = p.wait_outcome(promise);
    assert_eq!(
        (outcome.outcome, outcome.reason),
        (WaitResult::Refused, Some(WaitRefusal::Unauthenticated))
    );
}

#[test]
fn the_pages_end_cancels_each_awaited_job_once_with_keepalive() {
    let mut p = Page::new();
    let a = p.signed_in(json!({}));
    let b = p.signed_in(json!({}));
    p.wait(a, job_meta(JOB), None);
    p.wait(b, json!(JOB), None);
    p.handle(Event::PageHide { persisted: true });
    assert!(
        p.to(Method::Post, CANCEL).is_empty(),
        "into the bfcache: nothing"
    );
    p.handle(Event::PageHide { persisted: false });
    let cancels = p.to(Method::Post, CANCEL);
    assert_eq!(cancels.len(), 1);
    assert!(cancels[0].keepalive);
}

#[test]
fn tables_stay_empty_over_many_records_and_cancels() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"storage": "memory", "maxJobs": 10}));
    for n in 0..2000u32 {
        let job = format!("10a0bd9a-03c8-4737-9345-{:012}", n);
        p.record(g, &job);
        let promise = p.cancel(g, &job, None);
        let req = p
            .open_to(&format!("/api/v1/async_event/{job}/cancel"))
            .unwrap();
        p.answer(req, 200, Some(json!({})));
        assert!(p.outcome(promise).is_some());
        p.settled.clear();
        p.sent.clear();
        p.ended.clear();
        p.notified.clear();
    }
    assert!(p.quiet());
    assert_eq!(p.m.guards.len(), 1);
    assert!(p
        .m
        .guards
        .iter()
        .all(|g| g.cancels.is_empty() && g.queries.is_empty()));
    assert!(p.m.groups.is_empty());
}

#[test]
fn a_failed_task_settles_failed_with_its_reason_read_back() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"storage": "memory", "contract": "task"}));
    let promise = p.wait(g, tasks_body(), None);
    p.advance(500);
    let poll = p.open_to("/api/v1/task/status_changes").unwrap();
    p.answer(
        poll,
        200,
        Some(json!({"statuses": {TASK: {"status": "pending"}}, "cursor": "2026-12-07T10:00:01"})),
    );
    // A fresh cursor: each running task's status is read back.
    let status = p
        .open_to(&format!("/api/v1/task/{TASK}/status"))
        .expect("its status read back");
    p.answer(status, 200, Some(json!({"status": "failure"})));
    assert!(
        p.outcome(promise).is_none(),
        "settles once its reason is read back"
    );
    let reason = p
        .open_to(&format!("/api/v1/task/{TASK}"))
        .expect("its reason read back");
    p.answer(
        reason,
        200,
        Some(json!({"result": {"semantic_result_error": "relation does not exist"}})),
    );
    let outcome = p.wait_outcome(promise);
    assert_eq!(outcome.outcome, WaitResult::Failed);
    assert!(
        outcome.errors[0].to_string().contains("does not exist"),
        "{outcome:?}"
    );
}
