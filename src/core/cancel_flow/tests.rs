//! The tests of `src/core/cancel_flow.rs`.
#![cfg(test)]

use super::*;
use crate::core::cancel::CancelRefusal;
use crate::core::doubles::SequenceRandom;

#[test]
fn cancel_options_are_nothing_but_their_signal() {
    let read = |text: &str| {
        let value = crate::core::quiet::parse(text).unwrap();
        read_options(&value).map_err(|e| e.message())
    };
    for no_options in ["null", "{}", r#"{"signal": null}"#] {
        assert_eq!(read(no_options), Ok(()), "{no_options}");
    }
    let unknown = read(r#"{"timeoutMs": 5}"#).unwrap_err();
    assert!(
        unknown.contains("`timeoutMs` of cancel (known: signal)"),
        "{unknown}"
    );
    let not_object = read("[]").unwrap_err();
    assert!(
        not_object.contains("cancel's options must be an object"),
        "{not_object}"
    );
    let out = CancelOutcome::invalid_input("job-1".to_owned(), "why".to_owned());
    assert_eq!(
        (out.outcome, out.reason, out.attempts, out.http_status),
        (Outcome::Refused, Some(RefusalReason::InvalidInput), 0, None)
    );
}

fn status(s: u16) -> Answer {
    Answer::Status {
        status: s,
        retry_after: None,
        reply: Reply::Unread,
    }
}

/// Runs a flow against scripted answers; returns the waits and the outcome.
fn run(policy: RetryPolicy, answers: &[Answer]) -> (Vec<u64>, CancelOutcome) {
    let mut flow = CancelFlow::new("job-1", policy, Contract::AsyncEvent, 10_000);
    let mut random = SequenceRandom::new(vec![0.5]);
    let mut waits = Vec::new();
    for answer in answers {
        flow.sending();
        match flow.after(answer, 0, &mut random) {
            Step::Wait(ms) => waits.push(ms),
            Step::Finish(outcome) => return (waits, outcome),
            Step::ReadStatus => panic!("{answer:?} asked for a task's status"),
        }
    }
    panic!("the flow wanted more answers than scripted: {waits:?}");
}

#[test]
fn cancelled_on_the_first_answer() {
    let (waits, out) = run(RetryPolicy::default(), &[status(200)]);
    assert!(waits.is_empty());
    assert_eq!(out.outcome, Outcome::Cancelled);
    assert_eq!(
        (out.attempts, out.http_status, out.retryable),
        (1, Some(200), false)
    );
}

#[test]
fn forbidden_is_never_retried() {
    let policy = RetryPolicy {
        attempts: 10,
        ..RetryPolicy::default()
    };
    let (waits, out) = run(policy, &[status(403)]);
    assert!(waits.is_empty());
    assert_eq!(out.outcome, Outcome::NotJobOwner);
    assert_eq!(out.attempts, 1);
    assert!(!out.retryable);
    assert!(out.message.starts_with("Not job owner"));
}

#[test]
fn not_found_and_unauthenticated_are_final() {
    for (s, outcome) in [
        (404, Outcome::NotFound),
        (401, Outcome::Unauthenticated),
        (400, Outcome::Failed),
    ] {
        let (waits, out) = run(RetryPolicy::default(), &[status(s)]);
        assert!(waits.is_empty(), "{s}");
        assert_eq!((out.outcome, out.attempts), (outcome, 1));
    }
}

#[test]
fn transient_failures_retry_with_backoff_then_succeed() {
    let (waits, out) = run(
        RetryPolicy::default(),
        &[status(503), status(503), status(200)],
    );
    // Full jitter at 0.5: half of 200, then half of 400.
    assert_eq!(waits, [100, 200]);
    assert_eq!(out.outcome, Outcome::Cancelled);
    assert_eq!(out.attempts, 3);
}

#[test]
fn retries_run_out_as_a_retryable_failure() {
    let (waits, out) = run(
        RetryPolicy::default(),
        &[Answer::NetworkError, status(502), status(504)],
    );
    assert_eq!(waits.len(), 2);
    assert_eq!(out.outcome, Outcome::Failed);
    assert_eq!(
        (out.attempts, out.http_status, out.retryable),
        (3, Some(504), true)
    );
    let (_, out) = run(
        RetryPolicy {
            attempts: 1,
            ..RetryPolicy::default()
        },
        &[Answer::NetworkError],
    );
    assert_eq!(
        (out.outcome, out.attempts, out.http_status),
        (Outcome::Failed, 1, None)
    );
    assert!(out.retryable);
}

#[test]
fn retry_after_sets_the_wait() {
    let answers = [
        Answer::Status {
            status: 429,
            retry_after: Some("1".into()),
            reply: Reply::Unread,
        },
        status(200),
    ];
    let (waits, out) = run(RetryPolicy::default(), &answers);
    assert_eq!(waits, [1000]);
    assert_eq!(out.attempts, 2);
}

#[test]
fn local_refusals_become_outcomes_without_requests() {
    let flow = CancelFlow::new("j", RetryPolicy::default(), Contract::AsyncEvent, 10_000);
    let owner = CancelCheck::Refused {
        reason: CancelRefusal::NotJobOwner,
        message: "Not job owner: x".into(),
    };
    let out = flow.refusal(&owner).unwrap();
    assert_eq!(
        (out.outcome, out.attempts, out.reason),
        (Outcome::NotJobOwner, 0, None)
    );
    let unknown = CancelCheck::Refused {
        reason: CancelRefusal::UnknownJob,
        message: "Unknown job j".into(),
    };
    let out = flow.refusal(&unknown).unwrap();
    assert_eq!(out.outcome, Outcome::Refused);
    assert_eq!(out.reason, Some(RefusalReason::UnknownJob));
    let v: serde_json::Value = serde_json::to_value(&out).unwrap();
    assert_eq!(v["reason"], "unknown_job");
    assert_eq!(v["jobId"], "j");
    assert_eq!(v["httpStatus"], serde_json::Value::Null);
    let aborted: serde_json::Value = serde_json::to_value(flow.aborted()).unwrap();
    assert_eq!(aborted["outcome"], "aborted");
    assert!(aborted.get("reason").is_none());
}

#[test]
fn task_answers_are_final_and_carry_the_action() {
    let answer = |status, reply| Answer::Status {
        status,
        retry_after: None,
        reply,
    };
    let json = |action: Option<&str>| Reply::Json {
        action: action.map(str::to_owned),
    };
    for (a, outcome) in [
        (answer(200, json(Some("detached"))), Outcome::Left),
        (answer(200, json(Some("aborted"))), Outcome::Cancelled),
        (answer(404, json(None)), Outcome::NotJobOwner),
        (answer(403, json(None)), Outcome::Refused),
        (answer(404, Reply::NotJson), Outcome::Unsupported),
    ] {
        let policy = RetryPolicy {
            attempts: 10,
            ..RetryPolicy::default()
        };
        let mut flow = CancelFlow::new("t", policy, Contract::Task, 10_000);
        flow.sending();
        let Step::Finish(out) = flow.after(&a, 0, &mut SequenceRandom::new(vec![0.5])) else {
            panic!("{a:?} was retried")
        };
        assert_eq!((out.outcome, out.attempts), (outcome, 1), "{a:?}");
        if outcome == Outcome::Left {
            assert_eq!(out.action.as_deref(), Some("detached"));
            let v: serde_json::Value = serde_json::to_value(&out).unwrap();
            assert_eq!(v["outcome"], "left");
            assert_eq!(v["action"], "detached");
        }
    }
}

fn task_flow(attempts: u32) -> CancelFlow {
    let policy = RetryPolicy {
        attempts,
        ..RetryPolicy::default()
    };
    CancelFlow::new("t", policy, Contract::Task, 10_000)
}

#[test]
fn a_tasks_422_reads_the_status_once_and_decides_by_it() {
    let mut random = SequenceRandom::new(vec![0.5]);
    for body in [
        r#"{"message": "Task could not be aborted."}"#,
        r#"{"message": "Task t is in progress but has not registered an abort handler (is_abortable is not true)"}"#,
        "<html>",
    ] {
        let mut flow = task_flow(10);
        flow.sending();
        let answer = Answer::Status {
            status: 422,
            retry_after: None,
            reply: Reply::from_text(body),
        };
        assert_eq!(flow.after(&answer, 0, &mut random), Step::ReadStatus);
        let done = flow.after_status(Some(TaskStatus::Success));
        assert_eq!(
            (done.outcome, done.http_status, done.attempts, done.reason),
            (Outcome::AlreadyFinished, Some(422), 1, None)
        );
        assert_eq!(done.status, Some(TaskStatus::Success));
        let running = flow.after_status(Some(TaskStatus::InProgress));
        assert_eq!(
            (running.outcome, running.reason, running.status),
            (
                Outcome::Refused,
                Some(RefusalReason::NotAbortable),
                Some(TaskStatus::InProgress)
            )
        );
        let v: serde_json::Value = serde_json::to_value(&running).unwrap();
        assert_eq!(v["reason"], "not_abortable");
        assert!(
            v.get("status").is_none(),
            "the status is for the record only"
        );
        // No status read back (no answer, or one the guard does not know).
        let none = flow.after_status(None);
        assert_eq!(
            (none.outcome, none.reason, none.status, none.retryable),
            (Outcome::Refused, None, None, false)
        );
    }
    // Not on the async_event contract: its 422 is a plain failure.
    let mut flow = CancelFlow::new("j", RetryPolicy::default(), Contract::AsyncEvent, 10_000);
    flow.sending();
    let Step::Finish(out) = flow.after(&status(422), 0, &mut random) else {
        panic!("an async_event 422 read a task status")
    };
    assert_eq!((out.outcome, out.retryable), (Outcome::Failed, false));
}

#[test]
fn a_2xx_whose_body_cannot_be_read_is_the_servers_yes() {
    let mut random = SequenceRandom::new(vec![0.5]);
    let unreadable = Answer::Status {
        status: 200,
        retry_after: None,
        reply: Reply::Unreadable,
    };
    // async_event: the status decides.
    let mut flow = CancelFlow::new("j", RetryPolicy::default(), Contract::AsyncEvent, 10_000);
    flow.sending();
    let Step::Finish(out) = flow.after(&unreadable, 0, &mut random) else {
        panic!("an async_event 2xx was not final")
    };
    assert_eq!(
        (out.outcome, out.http_status, out.retryable),
        (Outcome::Cancelled, Some(200), false)
    );
    // task: the action is in the body; the task is read back to say what happened.
    let mut flow = task_flow(3);
    flow.sending();
    assert_eq!(flow.after(&unreadable, 0, &mut random), Step::ReadStatus);
    for (status, outcome) in [
        (Some(TaskStatus::Aborted), Outcome::Cancelled),
        (Some(TaskStatus::Aborting), Outcome::Cancelled),
        (Some(TaskStatus::InProgress), Outcome::Left),
        (Some(TaskStatus::Pending), Outcome::Left),
        (Some(TaskStatus::Success), Outcome::AlreadyFinished),
        (None, Outcome::Cancelled),
    ] {
        let out = flow.after_status(status);
        assert_eq!(
            (out.outcome, out.http_status, out.status, out.reason),
            (outcome, Some(200), status, None),
            "{status:?}"
        );
    }
    // A 422 after it reads as a 422 again.
    flow.sending();
    assert_eq!(flow.after(&status(422), 0, &mut random), Step::ReadStatus);
    assert_eq!(
        flow.after_status(Some(TaskStatus::Success)).http_status,
        Some(422)
    );
}

#[test]
fn a_request_that_times_out_is_a_retryable_failure() {
    let mut flow = task_flow(2);
    let mut random = SequenceRandom::new(vec![0.5]);
    flow.sending();
    assert!(matches!(
        flow.after(&Answer::TimedOut, 0, &mut random),
        Step::Wait(_)
    ));
    flow.sending();
    let Step::Finish(out) = flow.after(&Answer::TimedOut, 0, &mut random) else {
        panic!("retried past its attempts")
    };
    assert_eq!(
        (out.outcome, out.retryable, out.attempts, out.http_status),
        (Outcome::Failed, true, 2, None)
    );
    assert!(out.message.contains("10000 ms"), "{}", out.message);
}

#[test]
fn sent_counts_the_requests() {
    let mut flow = task_flow(3);
    assert_eq!(flow.sent(), 0);
    flow.sending();
    flow.sending();
    assert_eq!(flow.sent(), 2);
    assert_eq!(flow.aborted().attempts, 2);
}
