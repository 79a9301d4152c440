//! `query()` in the machine: every answer.

use super::*;
use crate::core::query::{QueryReason, QueryResult};

/// A guard signed in, its first query's stop-endpoint question answered `allow`.
pub(super) fn with_probe(p: &mut Page, options: Value, allow: &str) -> (GuardId, PromiseId) {
    let g = p.signed_in(options);
    let promise = p.query(g, None);
    let probe = p.to(Method::Options, STOP);
    assert_eq!(probe.len(), 1, "the question first: {:?}", p.sent);
    let answer = Answer {
        status: 200,
        allow: Some(allow.to_owned()),
        ..Answer::default()
    };
    p.handle(Event::Answered(probe[0].req, answer));
    (g, promise)
}

/// Ends the first query [`with_probe`] started with an answer that says nothing of the
/// server (a 500).
pub(super) fn fail_first(p: &mut Page, first: PromiseId) {
    let req = p.open_to(CHART).unwrap();
    p.answer(req, 500, Some(json!({"message": "boom"})));
    assert_eq!(p.query_outcome(first).0.outcome, QueryResult::Failed);
}

fn body_of(r: &Request) -> Value {
    serde_json::from_str(r.body.as_deref().unwrap()).unwrap()
}

#[test]
fn a_synchronous_answer_is_done_with_its_result_kept_by_the_executor() {
    let mut p = Page::new();
    let (_, promise) = with_probe(&mut p, json!({}), "POST, OPTIONS");
    let post = p.to(Method::Post, CHART);
    assert_eq!(post.len(), 1);
    let client_id = body_of(&post[0])["client_id"].as_str().unwrap().to_owned();
    assert!(client_id.starts_with("sjg-"), "{client_id}");
    p.answer(post[0].req, 200, Some(json!({"result": [{"data": []}]})));
    let (outcome, result) = p.query_outcome(promise);
    assert_eq!(outcome.outcome, QueryResult::Done);
    assert_eq!(outcome.client_id.as_deref(), Some(client_id.as_str()));
    assert_eq!(
        result,
        Some(post[0].req),
        "the result is the request's kept body"
    );
    assert!(p.reads.is_empty() && p.quiet());
}

#[test]
fn a_job_is_waited_for_and_only_a_chart_data_result_is_read() {
    for (result_url, read) in [
        ("/api/v1/chart/data/qc-1", true),
        ("/logout/", false),
        ("/api/v1/me/", false),
    ] {
        let mut p = Page::new();
        let (g, promise) = with_probe(&mut p, json!({}), "GET, HEAD, OPTIONS");
        let post = p.to(Method::Post, CHART);
        assert!(
            body_of(&post[0]).get("client_id").is_none(),
            "6.1.0 takes none"
        );
        p.answer(post[0].req, 202, Some(job_meta(JOB)));
        assert!(p.m.job(g, JOB).unwrap().is_some(), "recorded");
        let event = json!({"channel_id": "c1", "job_id": JOB, "user_id": "1", "status": "done",
                           "errors": [], "result_url": result_url});
        let event = JobMetadata::read_event(Json(&event)).unwrap();
        p.m.apply_event(g, event).unwrap();
        p.pump();
        let gets = p.to(Method::Get, result_url);
        if read {
            assert_eq!(gets.len(), 1);
            p.answer(gets[0].req, 200, Some(json!({"result": []})));
            assert_eq!(p.query_outcome(promise).0.outcome, QueryResult::Done);
        } else {
            assert!(gets.is_empty(), "{result_url} is not requested");
            let (outcome, _) = p.query_outcome(promise);
            assert_eq!(outcome.outcome, QueryResult::Failed, "{result_url}");
        }
        assert!(p.quiet(), "{result_url}: {:?} {:?}", p.open, p.timers);
    }
}

#[test]
fn tasks_are_waited_for_and_the_warm_cache_asked_for_again() {
    let mut p = Page::new();
    let (g, promise) = with_probe(
        &mut p,
        json!({"contract": "task", "tabId": "tab-1"}),
        "POST",
    );
    let post = p.to(Method::Post, CHART);
    assert_eq!(body_of(&post[0])["tab_id"], "tab-1");
    p.answer(post[0].req, 202, Some(tasks_body()));
    let change =
        crate::core::task::StatusChange::read(Json(&json!({"task_id": TASK, "status": "success"})))
            .unwrap();
    p.m.apply_task_statuses(g, vec![change]).unwrap();
    p.pump();
    let again = p.to(Method::Post, CHART);
    assert_eq!(again.len(), 2);
    assert_eq!(body_of(&again[1]), body_of(&again[0]), "the same request");
    p.answer(again[1].req, 200, Some(json!({"result": []})));
    assert_eq!(p.query_outcome(promise).0.outcome, QueryResult::Done);
}

#[test]
fn a_401_to_chart_data_refuses_the_next_query_without_a_request() {
    let mut p = Page::new();
    let (g, promise) = with_probe(&mut p, json!({}), "POST");
    let post = p.to(Method::Post, CHART);
    p.answer(post[0].req, 401, Some(json!({"message": "Unauthorized"})));
    assert_eq!(
        p.query_outcome(promise).0.outcome,
        QueryResult::Unauthenticated
    );
    let next = p.query(g, None);
    let (outcome, _) = p.query_outcome(next);
    assert_eq!(outcome.outcome, QueryResult::Unauthenticated);
    assert_eq!(p.to(Method::Post, CHART).len(), 1, "nothing sent");
}

#[test]
fn without_a_session_nothing_is_sent() {
    let mut p = Page::new();
    let g = p.guard(json!({}));
    let promise = p.query(g, None);
    let (outcome, _) = p.query_outcome(promise);
    assert_eq!(
        (outcome.outcome, outcome.reason),
        (QueryResult::Refused, Some(QueryReason::NoSession))
    );
    assert!(p.sent.is_empty());
}
