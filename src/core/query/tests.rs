//! The tests of `src/core/query.rs`.
#![cfg(test)]

use super::*;
use crate::core::chart::classify_chart;
use crate::core::names::assert_names;
use serde_json::json;

#[test]
fn named_as_their_typescript_declarations() {
    assert_names!(QueryResult);
    assert_names!(QueryReason);
}

const CHART: &str = "/api/v1/chart/data";

fn life() -> QueryLife {
    QueryLife::new(Some("sjg-1".to_owned()))
}

fn done_wait() -> WaitOutcome {
    WaitOutcome::done(&["j".to_owned()])
}

#[test]
fn a_synchronous_answer_is_done_at_once() {
    let mut q = life();
    assert_eq!(q.phase(), Phase::Sending);
    let Step::Settle { outcome, stop } = q.answered(ChartAnswer::Result, Some(200)) else {
        panic!("settled");
    };
    assert!(!stop);
    assert_eq!(outcome.outcome, QueryResult::Done);
    assert_eq!(outcome.http_status, Some(200));
    assert_eq!(q.phase(), Phase::Ended);
}

#[test]
fn a_job_is_waited_for_then_its_result_url_read() {
    let mut q = life();
    let job = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "pending",
                         "errors": [], "result_url": null});
    let Step::Wait(WaitInput::Job(_)) =
        q.answered(classify_chart(202, true, Some(&job)), Some(202))
    else {
        panic!("a wait");
    };
    assert_eq!(q.phase(), Phase::Waiting);
    let Step::Fetch(url) = q.waited(&done_wait(), Some("/api/v1/chart/data/qc-1"), CHART) else {
        panic!("a fetch");
    };
    assert_eq!(url, "/api/v1/chart/data/qc-1");
    assert_eq!(q.phase(), Phase::Fetching);
    let Step::Settle { outcome, .. } = q.answered(ChartAnswer::Result, Some(200)) else {
        panic!("done");
    };
    assert_eq!(outcome.outcome, QueryResult::Done);
    // A result_url elsewhere is not followed.
    let mut q = life();
    q.answered(classify_chart(202, true, Some(&job)), Some(202));
    let Step::Settle { outcome, .. } = q.waited(&done_wait(), Some("https://evil.test/x"), CHART)
    else {
        panic!("failed");
    };
    assert_eq!(outcome.outcome, QueryResult::Failed);
}

#[test]
fn tasks_are_waited_for_then_asked_again_for_the_warm_cache() {
    let mut q = life();
    let tasks = json!({"task_ids": ["0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01"], "cursor": "c"});
    let Step::Wait(WaitInput::Tasks(_)) =
        q.answered(classify_chart(202, true, Some(&tasks)), Some(202))
    else {
        panic!("a wait");
    };
    assert!(matches!(q.waited(&done_wait(), None, CHART), Step::Refetch));
    assert_eq!(q.phase(), Phase::Refetching);
    // A 202 again (the cache missed): waited for once more, then given up.
    assert!(matches!(
        q.answered(classify_chart(202, true, Some(&tasks)), Some(202)),
        Step::Wait(_)
    ));
    assert!(matches!(q.waited(&done_wait(), None, CHART), Step::Refetch));
    let Step::Settle { outcome, .. } =
        q.answered(classify_chart(202, true, Some(&tasks)), Some(202))
    else {
        panic!("given up");
    };
    assert_eq!(outcome.outcome, QueryResult::Failed);
}

#[test]
fn errors_401_and_403_settle_as_themselves() {
    for (status, result, reason) in [
        (401, QueryResult::Unauthenticated, None),
        (403, QueryResult::Refused, Some(QueryReason::Forbidden)),
        (400, QueryResult::Failed, None),
        (500, QueryResult::Failed, None),
    ] {
        let mut q = life();
        let body = json!({"message": "no"});
        let Step::Settle { outcome, .. } =
            q.answered(classify_chart(status, true, Some(&body)), Some(status))
        else {
            panic!("settled");
        };
        assert_eq!(
            (outcome.outcome, outcome.reason),
            (result, reason),
            "{status}"
        );
        assert_eq!(outcome.http_status, Some(status));
    }
}

#[test]
fn a_waiter_that_ended_otherwise_says_why_in_a_querys_words() {
    for (reason, result, query_reason) in [
        (
            WaitRefusal::NoSession,
            QueryResult::Aborted,
            Some(QueryReason::Logout),
        ),
        (
            WaitRefusal::UserChanged,
            QueryResult::Aborted,
            Some(QueryReason::UserChanged),
        ),
        (
            WaitRefusal::Unauthenticated,
            QueryResult::Unauthenticated,
            None,
        ),
        (
            WaitRefusal::NotJobOwner,
            QueryResult::Refused,
            Some(QueryReason::NotJobOwner),
        ),
        (
            WaitRefusal::Expired,
            QueryResult::Refused,
            Some(QueryReason::Removed),
        ),
    ] {
        let mut q = life();
        let tasks = json!({"task_ids": ["0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01"], "cursor": "c"});
        q.answered(classify_chart(202, true, Some(&tasks)), Some(202));
        let waited = WaitOutcome::refused(&[], None, reason, "m".into());
        let Step::Settle { outcome, .. } = q.waited(&waited, None, CHART) else {
            panic!("settled");
        };
        assert_eq!(
            (outcome.outcome, outcome.reason),
            (result, query_reason),
            "{reason:?}"
        );
    }
    let mut q = life();
    let tasks = json!({"task_ids": ["0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01"], "cursor": "c"});
    q.answered(classify_chart(202, true, Some(&tasks)), Some(202));
    let stale = q.waited(&WaitOutcome::stale(&[], 5), None, CHART);
    assert!(
        matches!(stale, Step::Settle { stop: true, .. }),
        "stale: stopped on the server"
    );
    let aborted = q.aborted(QueryReason::PageEnd, Some(StopResult::Sent), Vec::new());
    assert_eq!(aborted.reason, Some(QueryReason::PageEnd));
}

#[test]
fn a_wait_refused_for_the_other_stream_is_stopped_on_the_server() {
    let mut q = life();
    let body =
        serde_json::json!({"task_ids": ["0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01"], "cursor": "x"});
    let Step::Wait(_) = q.answered(classify_chart(202, true, Some(&body)), Some(202)) else {
        panic!("waits");
    };
    let refused = WaitOutcome::refused(
        &["0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01".to_owned()],
        None,
        WaitRefusal::Unsupported,
        "other stream".to_owned(),
    );
    match q.waited(&refused, None, CHART) {
        Step::Settle { outcome, stop } => {
            assert!(stop, "its task is cancelled");
            assert_eq!(outcome.reason, Some(QueryReason::Unsupported));
            assert_eq!(outcome.job_ids.len(), 1);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stopped_querys_message_says_what_its_fields_say() {
    let mut o = life().aborted(
        QueryReason::Logout,
        Some(StopResult::Cancelling),
        vec!["j".into()],
    );
    o.explain_stop();
    assert!(
        o.message.contains("session ended") && o.message.contains("cancel was sent"),
        "{}",
        o.message
    );
    // Not `cancel(id)`: that is refused once the session has ended.
    assert!(
        o.message.contains("stopped") && !o.message.contains("guard.cancel"),
        "{}",
        o.message
    );
    let mut o = life().aborted(QueryReason::Signal, Some(StopResult::NotSent), Vec::new());
    o.explain_stop();
    assert!(o.message.contains("nothing was sent"), "{}", o.message);
    let mut o = life().aborted(
        QueryReason::UserChanged,
        Some(StopResult::NotSent),
        Vec::new(),
    );
    o.explain_stop();
    assert!(o.message.contains("as the new user"), "{}", o.message);
    let mut o = QueryOutcome::new(QueryResult::Stale, None, "x");
    o.stop = Some(StopResult::Cancelling);
    o.cancelling = vec!["j".into()];
    o.explain_stop();
    assert!(o.message.contains("cancel was sent"), "{}", o.message);
    assert!(o.message.contains("guard.cancel(id)"), "{}", o.message);
    let mut done = QueryOutcome::new(QueryResult::Done, None, "The query is done");
    done.explain_stop();
    assert_eq!(done.message, "The query is done");
}
