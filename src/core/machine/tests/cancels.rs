//! `cancel()` in the machine.

use super::*;
use crate::core::response::Outcome;

#[test]
fn a_happy_cancel_posts_once_with_keepalive_and_marks_the_record() {
    let mut p = Page::new();
    let g = p.signed_in(json!({}));
    p.record(g, JOB);
    let promise = p.cancel(g, JOB, None);
    let posts = p.to(Method::Post, CANCEL);
    assert_eq!(posts.len(), 1);
    assert!(posts[0].keepalive);
    p.answer(
        posts[0].req,
        200,
        Some(json!({"result": {"status": "cancelled"}})),
    );
    let outcome = p.cancel_outcome(promise);
    assert_eq!((outcome.outcome, outcome.attempts), (Outcome::Cancelled, 1));
    assert_eq!(
        p.m.job(g, JOB).unwrap().unwrap().status().as_str(),
        "cancelled"
    );
    assert!(
        p.quiet(),
        "nothing left running: {:?} {:?}",
        p.open,
        p.timers
    );
}

#[test]
fn a_403_is_not_job_owner_sent_once_and_never_retried() {
    let mut p = Page::new();
    let g = p.signed_in(json!({}));
    p.record(g, JOB);
    let promise = p.cancel(g, JOB, None);
    let req = p.open_to(CANCEL).unwrap();
    p.answer(req, 403, Some(json!({"message": "Forbidden"})));
    assert_eq!(p.cancel_outcome(promise).outcome, Outcome::NotJobOwner);
    p.advance(60_000);
    assert_eq!(p.to(Method::Post, CANCEL).len(), 1);
    assert!(p.m.job(g, JOB).unwrap().is_none(), "the record goes");
}

#[test]
fn transient_failures_are_retried_after_the_backoff_and_a_second_cancel_joins() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"retry": {"attempts": 3, "baseDelayMs": 100, "maxDelayMs": 100}}));
    p.record(g, JOB);
    let first = p.cancel(g, JOB, None);
    let second = p.promise();
    assert_eq!(p.m.cancel(g, JOB, None, second), CancelStart::Joined(first));
    p.pump();
    let req = p.open_to(CANCEL).unwrap();
    p.answer(req, 503, None);
    assert_eq!(p.to(Method::Post, CANCEL).len(), 1, "waits before the next");
    p.advance(100);
    let req = p.open_to(CANCEL).unwrap();
    p.answer(req, 200, Some(json!({})));
    let outcome = p.cancel_outcome(first);
    assert_eq!((outcome.outcome, outcome.attempts), (Outcome::Cancelled, 2));
    assert!(
        p.outcome(second).is_none(),
        "the joiner gets the first's promise"
    );
}

#[test]
fn an_aborted_signal_ends_the_cancel_and_its_request() {
    let mut p = Page::new();
    let g = p.signed_in(json!({}));
    p.record(g, JOB);
    let signal = p.signal();
    let promise = p.cancel(g, JOB, Some(signal));
    let req = p.open_to(CANCEL).unwrap();
    p.handle(Event::Aborted(signal));
    assert_eq!(p.cancel_outcome(promise).outcome, Outcome::Aborted);
    assert!(p.ended.contains(&(req, false)), "aborted, not drained");
    assert!(p.quiet());
}

#[test]
fn a_missing_cancel_endpoint_is_learned_by_one_request_for_the_page() {
    // Superset 6.1.0: an HTML 404 from a route that does not exist.
    let mut p = Page::new();
    let a = p.signed_in(json!({}));
    let b = p.signed_in(json!({}));
    let jobs = [
        JOB,
        "10a0bd9a-03c8-4737-9345-f4234ba86513",
        "10a0bd9a-03c8-4737-9345-f4234ba86514",
    ];
    for job in jobs {
        p.record(a, job);
    }
    let promises: Vec<_> = jobs.iter().map(|job| p.cancel(a, job, None)).collect();
    assert_eq!(p.sent.len(), 1, "the first asks alone: {:?}", p.sent);
    p.answer_html(p.sent[0].req, 404);
    for promise in &promises {
        assert_eq!(p.cancel_outcome(*promise).outcome, Outcome::Unsupported);
    }
    assert_eq!(p.sent.len(), 1, "the others were not sent");
    // Another guard of the page, later: nothing sent either.
    p.record(b, "10a0bd9a-03c8-4737-9345-f4234ba86515");
    let later = p.cancel(b, "10a0bd9a-03c8-4737-9345-f4234ba86515", None);
    assert_eq!(p.cancel_outcome(later).outcome, Outcome::Unsupported);
    assert_eq!(p.sent.len(), 1);
    assert!(
        p.m.job(b, "10a0bd9a-03c8-4737-9345-f4234ba86515")
            .unwrap()
            .is_some(),
        "kept"
    );
}

#[test]
fn after_a_401_nothing_is_sent_until_the_next_login() {
    let mut p = Page::new();
    let g = p.signed_in(json!({}));
    p.record(g, JOB);
    let first = p.cancel(g, JOB, None);
    p.answer(p.open_to(CANCEL).unwrap(), 401, None);
    assert_eq!(p.cancel_outcome(first).outcome, Outcome::Unauthenticated);
    assert!(p
        .notified
        .contains(&(g, Change::Unauthorized, Source::Local)));
    let again = p.cancel(g, JOB, None);
    assert_eq!(p.cancel_outcome(again).outcome, Outcome::Unauthenticated);
    let query = p.query(g, None);
    assert_eq!(
        p.query_outcome(query).0.outcome,
        crate::core::query::QueryResult::Unauthenticated
    );
    assert_eq!(p.sent.len(), 1, "one request: {:?}", p.sent);
    p.m.login(g, session(1)).unwrap();
    p.pump();
    p.cancel(g, JOB, None);
    assert_eq!(
        p.to(Method::Post, CANCEL).len(),
        2,
        "sent again after the login"
    );
}

#[test]
fn a_cancel_with_no_answer_ends_within_its_timeout() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"timeoutMs": 1000, "retry": {"attempts": 1}}));
    p.record(g, JOB);
    let promise = p.cancel(g, JOB, None);
    p.advance(1000);
    let outcome = p.cancel_outcome(promise);
    assert_eq!(outcome.outcome, Outcome::Failed);
    assert!(outcome.retryable);
    assert!(p.quiet());
}

#[test]
fn a_first_cancel_that_hangs_holds_the_others_no_longer_than_a_second() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"timeoutMs": 60000}));
    let (a, b) = (JOB, "10a0bd9a-03c8-4737-9345-f4234ba86513");
    p.record(g, a);
    p.record(g, b);
    p.cancel(g, a, None);
    let second = p.cancel(g, b, None);
    assert_eq!(p.sent.len(), 1, "the second waits for the first's answer");
    p.advance(1_000);
    let post = p
        .open_to(&format!("/api/v1/async_event/{b}/cancel"))
        .expect("then it goes");
    p.answer(post, 200, Some(json!({})));
    assert_eq!(p.cancel_outcome(second).outcome, Outcome::Cancelled);
}

#[test]
fn a_cancel_endpoint_found_absent_is_not_asked_again_by_a_logout_or_the_pages_end() {
    let mut p = Page::new();
    let g = p.signed_in(json!({}));
    for job in [JOB, "job-2", "job-3"] {
        p.record(g, job);
    }
    let first = p.cancel(g, JOB, None);
    let req = p.open_to(CANCEL).unwrap();
    p.answer_html(req, 404);
    assert_eq!(p.cancel_outcome(first).outcome, Outcome::Unsupported);
    // A waiter's jobs, cancelled at the page's end as nobody else awaits them: nothing goes.
    p.wait(g, json!(["job-2", "job-3"]), None);
    p.handle(Event::PageHide { persisted: false });
    let cancels: Vec<Request> = p
        .sent
        .iter()
        .filter(|r| r.url.contains("/cancel"))
        .cloned()
        .collect();
    assert_eq!(
        cancels.len(),
        1,
        "only the one that learned it: {cancels:?}"
    );
}

#[test]
fn a_cancel_waiting_to_retry_when_a_401_comes_sends_nothing_more() {
    let mut p = Page::new();
    let g = p.signed_in(json!({"retry": {"attempts": 3, "baseDelayMs": 100, "maxDelayMs": 100}}));
    p.record(g, JOB);
    let first = p.cancel(g, JOB, None);
    p.answer(p.open_to(CANCEL).unwrap(), 503, None);
    // Another request of the session (a query's stop-endpoint question) meets a 401 while the
    // cancel waits to retry.
    p.query(g, None);
    let probe = p.to(Method::Options, STOP)[0].req;
    p.answer(probe, 401, None);
    let sent = p.sent.len();
    p.advance(100);
    assert_eq!(
        p.sent.len(),
        sent,
        "the retry never leaves: {:?}",
        &p.sent[sent..]
    );
    assert_eq!(p.cancel_outcome(first).outcome, Outcome::Unauthenticated);
}
