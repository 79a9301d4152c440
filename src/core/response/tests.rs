//! The tests of `src/core/response.rs`.
#![cfg(test)]

use super::*;
use crate::core::names::assert_names;

#[test]
fn named_as_their_typescript_declarations() {
    assert_names!(Outcome);
}
use crate::core::quiet::Json;
use crate::core::quiet::MAX_BODY_CHARS;

#[test]
fn the_contract_table() {
    let table = [
        (200, Outcome::Cancelled, false),
        (204, Outcome::Cancelled, false),
        (401, Outcome::Unauthenticated, false),
        (403, Outcome::NotJobOwner, false),
        (404, Outcome::NotFound, false),
        (408, Outcome::Failed, true),
        (429, Outcome::Failed, true),
        (500, Outcome::Failed, true),
        (502, Outcome::Failed, true),
        (503, Outcome::Failed, true),
        (504, Outcome::Failed, true),
        (400, Outcome::Failed, false),
        (405, Outcome::Failed, false),
        (409, Outcome::Failed, false),
        (501, Outcome::Failed, false),
        (302, Outcome::Failed, false),
        (0, Outcome::Failed, false),
    ];
    for (status, outcome, retryable) in table {
        let c = classify(status, Contract::AsyncEvent, &Reply::Unread);
        assert_eq!((c.outcome, c.retryable), (outcome, retryable), "{status}");
        assert!(!c.message.is_empty());
    }
}

#[test]
fn not_job_owner_is_never_retryable_and_says_so() {
    let c = classify(403, Contract::AsyncEvent, &Reply::Unread);
    assert!(!c.retryable);
    assert!(c.message.starts_with("Not job owner"));
}

#[test]
fn messages_name_the_status_when_it_failed() {
    assert!(classify(503, Contract::AsyncEvent, &Reply::Unread)
        .message
        .contains("503"));
    assert!(classify(418, Contract::AsyncEvent, &Reply::Unread)
        .message
        .contains("418"));
    assert!(network_failure().retryable);
}

fn json(action: Option<&str>) -> Reply {
    Reply::Json {
        action: action.map(str::to_owned),
    }
}

#[test]
fn the_task_contract_table() {
    let t = Contract::Task;
    let table = [
        (200, json(Some("aborted")), Outcome::Cancelled, false),
        (200, json(Some("unsubscribed")), Outcome::Left, false),
        (200, json(Some("detached")), Outcome::Left, false),
        (200, Reply::Unread, Outcome::Cancelled, false),
        (401, Reply::Unread, Outcome::Unauthenticated, false),
        (403, json(None), Outcome::Refused, false),
        (404, json(None), Outcome::NotJobOwner, false),
        (404, Reply::Unread, Outcome::NotJobOwner, false),
        (404, Reply::NotJson, Outcome::Unsupported, false),
        // Superset's two 422s (`superset/commands/tasks/cancel.py`, `superset/daos/tasks.py`):
        // the text decides nothing; the task's status, read back, does.
        (
            422,
            Reply::from_text(r#"{"message": "Task could not be aborted."}"#),
            Outcome::Refused,
            false,
        ),
        (
            422,
            Reply::from_text(
                r#"{"message": "Task 10a0bd9a-03c8-4737-9345-f4234ba86512 is in progress but has not registered an abort handler (is_abortable is not true)"}"#,
            ),
            Outcome::Refused,
            false,
        ),
        (422, Reply::NotJson, Outcome::Refused, false),
        (500, Reply::Unread, Outcome::Failed, true),
        (429, Reply::Unread, Outcome::Failed, true),
        (400, Reply::Unread, Outcome::Failed, false),
    ];
    for (status, reply, outcome, retryable) in table {
        let c = classify(status, t, &reply);
        assert_eq!(
            (c.outcome, c.retryable),
            (outcome, retryable),
            "{status} {reply:?}"
        );
    }
    let left = classify(200, t, &json(Some("detached")));
    assert_eq!(left.action.as_deref(), Some("detached"));
    let owner = classify(404, t, &json(None));
    assert!(owner.message.starts_with("Not job owner"));
    assert!(owner.message.contains("ended"));
    assert!(classify(401, t, &Reply::Unread).message.contains("tasks"));
    // The two ways of leaving say which they are.
    let unsubscribed = classify(200, t, &json(Some("unsubscribed")));
    assert!(left.message.contains("other tabs"), "{}", left.message);
    assert!(
        unsubscribed.message.contains("other users"),
        "{}",
        unsubscribed.message
    );
}

#[test]
fn the_async_event_contract_never_takes_the_tasks_rows() {
    let a = Contract::AsyncEvent;
    // A 2xx is cancelled whatever `action` it carries; a 422 is a plain failure.
    let c = classify(200, a, &json(Some("detached")));
    assert_eq!((c.outcome, c.action), (Outcome::Cancelled, None));
    assert_eq!(c.message, "Job cancelled");
    let c = classify(422, a, &json(None));
    assert_eq!((c.outcome, c.retryable), (Outcome::Failed, false));
    assert!(c.message.contains("422"));
    assert_eq!(classify(403, a, &json(None)).outcome, Outcome::NotJobOwner);
}

#[test]
fn a_2xx_that_is_not_the_endpoints_answer_is_no_cancel() {
    for contract in [Contract::AsyncEvent, Contract::Task] {
        let c = classify(200, contract, &Reply::Redirected);
        assert_eq!((c.outcome, c.retryable), (Outcome::Unauthenticated, false));
        assert!(c.message.contains("sign in"));
        let c = classify(200, contract, &Reply::from_text("<!DOCTYPE html><form>"));
        assert_eq!((c.outcome, c.retryable), (Outcome::Failed, false));
        assert!(c.message.contains("200"));
        // No body to read (a 204, a test double's bare status) is the endpoint's answer.
        assert_eq!(
            classify(204, contract, &Reply::Unread).outcome,
            Outcome::Cancelled
        );
        // A redirect that ends on an error page is no endpoint's answer either.
        assert_eq!(
            classify(404, contract, &Reply::Redirected).outcome,
            Outcome::Unsupported
        );
    }
}

#[test]
fn a_tasks_422_is_decided_by_its_status_read_back() {
    for terminal in [
        TaskStatus::Success,
        TaskStatus::Failure,
        TaskStatus::Aborted,
        TaskStatus::TimedOut,
    ] {
        let c = after_status_read(Some(terminal));
        assert_eq!((c.outcome, c.retryable), (Outcome::AlreadyFinished, false));
        assert!(c.message.contains(terminal.as_str()));
    }
    for running in [
        TaskStatus::Pending,
        TaskStatus::InProgress,
        TaskStatus::Aborting,
    ] {
        let c = after_status_read(Some(running));
        assert_eq!((c.outcome, c.retryable), (Outcome::Refused, false));
        assert!(c.message.contains("cannot be stopped"), "{}", c.message);
    }
    let c = after_status_read(None);
    assert_eq!((c.outcome, c.retryable), (Outcome::Refused, false));
    assert_eq!(
        c.message,
        classify(422, Contract::Task, &Reply::Unread).message
    );
}

#[test]
fn bodies_beyond_the_limits_are_not_the_endpoints_json() {
    let deep = format!("{}{}", "[".repeat(6000), "]".repeat(6000));
    assert_eq!(Reply::from_text(&deep), Reply::NotJson);
    let deep_message = format!(
        r#"{{"action": "aborted", "message": {}1{}}}"#,
        "[".repeat(6000),
        "]".repeat(6000)
    );
    assert_eq!(Reply::from_text(&deep_message), Reply::NotJson);
    // 64 levels are read; 65 are not.
    let at = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert_eq!(Reply::from_text(&at(64)), json(None));
    assert_eq!(Reply::from_text(&at(65)), Reply::NotJson);
    let long = format!(
        r#"{{"action": "aborted", "pad": "{}"}}"#,
        "x".repeat(MAX_BODY_CHARS)
    );
    assert_eq!(Reply::from_text(&long), Reply::NotJson);
    // The limit is 65,536 UTF-16 code units, counted as JS counts: "é" is one, "😀" two.
    let sized = |fill: &str, units: usize| {
        let text = format!(r#"{{"action": "aborted", "pad": "{fill}"}}"#);
        let pad = (units - text.encode_utf16().count()) / fill.encode_utf16().count();
        format!(
            r#"{{"action": "aborted", "pad": "{}"}}"#,
            fill.repeat(pad + 1)
        )
    };
    assert_eq!(MAX_BODY_CHARS, 65_536, "64 Ki UTF-16 code units");
    for fill in ["x", "é", "😀"] {
        let at_limit = sized(fill, MAX_BODY_CHARS);
        assert_eq!(at_limit.encode_utf16().count(), MAX_BODY_CHARS, "{fill}");
        assert_eq!(Reply::from_text(&at_limit), json(Some("aborted")), "{fill}");
        let over = format!(" {at_limit}");
        assert_eq!(Reply::from_text(&over), Reply::NotJson, "{fill}");
    }
    // A body already parsed (a JS value) is read with the same depth limit.
    let parsed = serde_json::json!({"action": "aborted", "n": [[1]]});
    assert_eq!(Reply::from_json(&parsed), json(Some("aborted")));
    let deep: serde_json::Value = serde_json::from_str(&at(65)).unwrap();
    assert_eq!(Reply::from_json(&deep), Reply::NotJson);
    assert_eq!(
        Reply::from_text(r#"{"action": "detached"} trailing"#),
        Reply::NotJson
    );
    assert_eq!(
        Reply::from_text(r#"{"action": "detached", "task": {"uuid": "x"}}"#),
        json(Some("detached"))
    );
}

#[test]
fn an_html_404_means_no_cancel_endpoint_under_either_contract() {
    for contract in [Contract::AsyncEvent, Contract::Task] {
        let c = classify(
            404,
            contract,
            &Reply::from_text("<!DOCTYPE html><title>404</title>"),
        );
        assert_eq!((c.outcome, c.retryable), (Outcome::Unsupported, false));
        assert!(c.message.contains("not available on this server"));
    }
    let json_404 = Reply::from_text(r#"{"message":"Job not found or already completed"}"#);
    assert_eq!(
        classify(404, Contract::AsyncEvent, &json_404).outcome,
        Outcome::NotFound
    );
    // JSON that is not an object is still the server's JSON.
    assert_eq!(Reply::from_text("[1]"), json(None));
    assert_eq!(Reply::from_text(r#"{"action": 5}"#), json(None));
}

#[test]
fn messages_are_single_spaced_sentences() {
    let replies = [
        Reply::Unread,
        Reply::NotJson,
        Reply::Redirected,
        json(Some("detached")),
    ];
    for contract in [Contract::AsyncEvent, Contract::Task] {
        for reply in &replies {
            for status in [200, 401, 403, 404, 418, 422, 503] {
                let m = classify(status, contract, reply).message;
                assert!(!m.contains("  ") && m.trim() == m, "{status}: {m:?}");
            }
        }
    }
}

#[test]
fn contracts_are_read_by_name() {
    use serde_json::json;
    assert_eq!(
        Contract::read(Json(&json!(null))).unwrap(),
        Contract::AsyncEvent
    );
    assert_eq!(Contract::read(json!("task")).unwrap(), Contract::Task);
    assert_eq!(
        Contract::read(json!("async_event")).unwrap(),
        Contract::AsyncEvent
    );
    for bad in [json!("tasks"), json!(1), json!({})] {
        let err = Contract::read(Json(&bad)).unwrap_err();
        assert_eq!(err.code(), "invalid_options");
        assert!(err.to_string().contains("contract"));
    }
}
