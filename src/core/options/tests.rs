//! The tests of `src/core/options.rs`.
#![cfg(test)]

use super::*;
use crate::core::endpoints::encode_uri_component;
use crate::core::quiet::Json;
use serde_json::{json, Value};

impl GuardOptions {
    fn from_json(v: &Value) -> Result<Self, GuardError> {
        Self::read(Json(v))
    }
}

#[test]
fn cancel_urls_encode_the_job_id() {
    let o = GuardOptions::default();
    let a = Contract::AsyncEvent;
    assert_eq!(
        o.cancel_url_for("10a0bd9a-03c8-4737-9345-f4234ba86512", a),
        "/api/v1/async_event/10a0bd9a-03c8-4737-9345-f4234ba86512/cancel"
    );
    assert_eq!(
        o.cancel_url_for("a/b?c=d#e f", a),
        "/api/v1/async_event/a%2Fb%3Fc%3Dd%23e%20f/cancel"
    );
    assert_eq!(encode_uri_component("é!~*'()_.-"), "%C3%A9!~*'()_.-");
}

#[test]
fn the_messages_state_the_limits_in_force() {
    for (rule, limit) in [
        (NAMESPACE_RULE, MAX_NAMESPACE_LEN as u64),
        (TTL_RULE, u64::from(MAX_TTL_SECONDS)),
        (MAX_JOBS_RULE, MAX_MAX_JOBS as u64),
        (CANCEL_URL_RULE, MAX_CANCEL_URL_LEN as u64),
        (HEADERS_RULE, MAX_HEADERS as u64),
        (ATTEMPTS_RULE, u64::from(MAX_ATTEMPTS)),
        (BASE_DELAY_RULE, MAX_BASE_DELAY_MS),
        (MAX_DELAY_RULE, MAX_MAX_DELAY_MS),
    ] {
        assert!(rule.contains(&format!(" {limit}")), "{rule}");
    }
    assert!(CANCEL_URL_RULE.contains(PLACEHOLDER));
}

#[test]
fn cancel_on_close_is_on_unless_turned_off() {
    assert!(GuardOptions::default().cancel_on_close);
    let off = GuardOptions::from_json(&json!({ "cancelOnClose": false })).unwrap();
    assert!(!off.cancel_on_close);
    let on = GuardOptions::from_json(&json!({ "cancelOnClose": null })).unwrap();
    assert!(on.cancel_on_close);
    let bad = GuardOptions::from_json(&json!({ "cancelOnClose": "yes" })).unwrap_err();
    assert_eq!(
        bad,
        GuardError::InvalidOptions(CANCEL_ON_CLOSE_RULE.to_owned())
    );
}

#[test]
fn defaults() {
    let o = GuardOptions::from_json(&Value::Null).unwrap();
    assert_eq!(o, GuardOptions::default());
    assert_eq!(o.namespace, "superset-job-guard");
    assert_eq!(o.ttl_ms, 3_600_000);
    assert_eq!(o.max_jobs, 200);
    assert_eq!(o.storage, StorageKind::Local);
    assert_eq!(o.cancel_url, "/api/v1/async_event/{job_id}/cancel");
    assert!(o.headers.is_empty());
    assert_eq!(
        o.retry,
        RetryPolicy {
            attempts: 3,
            base_delay_ms: 200,
            max_delay_ms: 5000
        }
    );
    assert_eq!(GuardOptions::from_json(&json!({})).unwrap(), o);
    assert_eq!(
        GuardOptions::from_json(&json!({"namespace": null, "maxJobs": null})).unwrap(),
        o
    );
}

#[test]
fn reads_every_option() {
    let o = GuardOptions::from_json(
        &json!({"namespace": "app", "ttlSeconds": 1.5, "maxJobs": 3, "storage": "memory"}),
    )
    .unwrap();
    assert_eq!(
        o,
        GuardOptions {
            namespace: "app".into(),
            ttl_ms: 1500,
            max_jobs: 3,
            storage: StorageKind::Memory,
            ..GuardOptions::default()
        }
    );
    let o = GuardOptions::from_json(&json!({
        "cancelUrl": "/superset/api/v1/async_event/{job_id}/cancel",
        "headers": {"X-CSRFToken": "tok", "X-GuestToken": "g"},
        "retry": {"attempts": 5, "baseDelayMs": 0, "maxDelayMs": 1000},
        "fetch": null
    }))
    .unwrap();
    assert_eq!(o.cancel_url, "/superset/api/v1/async_event/{job_id}/cancel");
    assert_eq!(
        o.headers,
        [
            ("X-CSRFToken".into(), "tok".into()),
            ("X-GuestToken".into(), "g".into())
        ]
    );
    assert_eq!(
        o.retry,
        RetryPolicy {
            attempts: 5,
            base_delay_ms: 0,
            max_delay_ms: 1000
        }
    );
    let partial = GuardOptions::from_json(&json!({"retry": {"attempts": 1}})).unwrap();
    assert_eq!(partial.retry.attempts, 1);
    assert_eq!(partial.retry.base_delay_ms, 200);
    assert_eq!(
        GuardOptions::from_json(&json!({"maxJobs": 5.0}))
            .unwrap()
            .max_jobs,
        5
    );
}

#[test]
fn rejects_bad_options_naming_the_option() {
    let cases = [
        (json!("x"), "object"),
        (json!({"ttlSecond": 5}), "ttlSecond"),
        (json!({"namespace": ""}), "namespace"),
        (json!({"namespace": "a:b"}), "namespace"),
        (json!({"namespace": 5}), "namespace"),
        (json!({"ttlSeconds": 0}), "ttlSeconds"),
        (json!({"ttlSeconds": -1}), "ttlSeconds"),
        (json!({"ttlSeconds": "60"}), "ttlSeconds"),
        (json!({"ttlSeconds": 1e12}), "ttlSeconds"),
        (json!({"maxJobs": 0}), "maxJobs"),
        (json!({"maxJobs": 2.5}), "maxJobs"),
        (json!({"maxJobs": 1_000_000}), "maxJobs"),
        (json!({"storage": "session"}), "storage"),
        (
            json!({"cancelUrl": "/api/v1/async_event/cancel"}),
            "cancelUrl",
        ),
        (json!({"cancelUrl": 5}), "cancelUrl"),
        (json!({"headers": "X-CSRFToken: t"}), "headers"),
        (
            json!({"headers": {"X-CSRFToken": 5}}),
            "headers.X-CSRFToken",
        ),
        (json!({"headers": {"Bad Name": "v"}}), "headers.Bad Name"),
        (
            json!({"headers": {"X-A": "v\r\nX-Injected: 1"}}),
            "headers.X-A",
        ),
        (json!({"retry": 3}), "retry"),
        (json!({"retry": {"attempts": 0}}), "retry.attempts"),
        (json!({"retry": {"attempts": 11}}), "retry.attempts"),
        (json!({"retry": {"baseDelayMs": -1}}), "retry.baseDelayMs"),
        (json!({"retry": {"maxDelayMs": 1e9}}), "retry.maxDelayMs"),
        (json!({"retry": {"tries": 2}}), "retry.tries"),
        (json!({"timeoutMs": 0}), "timeoutMs"),
        (json!({"timeoutMs": 600_001}), "timeoutMs"),
        (json!({"timeoutMs": 1.5}), "timeoutMs"),
        (json!({"timeoutMs": "10"}), "timeoutMs"),
        // fetch refuses header values beyond Latin-1: refused here, not at every cancel.
        (
            json!({"headers": {"X-A": "caf\u{e9} \u{2713}"}}),
            "headers.X-A",
        ),
        (json!({"headers": {"X-A": "\u{fffd}"}}), "headers.X-A"),
    ];
    for (v, field) in cases {
        let err = GuardOptions::from_json(&v).unwrap_err();
        assert_eq!(err.code(), "invalid_options");
        assert!(err.to_string().contains(field), "{v}: {err}");
    }
}

#[test]
fn the_task_contract_has_its_own_url_and_body() {
    let o = GuardOptions::from_json(&json!({"contract": "task"})).unwrap();
    assert_eq!(o.contract, Contract::Task);
    let t = Contract::Task;
    assert_eq!(
        o.cancel_url_for("10a0bd9a-03c8-4737-9345-f4234ba86512", t),
        "/api/v1/task/10a0bd9a-03c8-4737-9345-f4234ba86512/cancel"
    );
    assert_eq!(
        GuardOptions::cancel_body(t, Some("tab-1")).as_deref(),
        Some(r#"{"tab_id":"tab-1"}"#)
    );
    assert_eq!(GuardOptions::cancel_body(t, None).as_deref(), Some("{}"));
    let custom =
        GuardOptions::from_json(&json!({"contract": "task", "cancelUrl": "/x/{job_id}"})).unwrap();
    assert_eq!(custom.cancel_url, "/x/{job_id}");
    let default = GuardOptions::from_json(&json!({"contract": "async_event"})).unwrap();
    assert_eq!(default, GuardOptions::default());
    assert_eq!(
        GuardOptions::cancel_body(Contract::AsyncEvent, Some("t")),
        None
    );
    let tab = GuardOptions::from_json(&json!({"tabId": "tab_1"})).unwrap();
    assert_eq!(tab.tab_id.as_deref(), Some("tab_1"));
    for bad in [json!({"tabId": "a b"}), json!({"tabId": 3})] {
        assert!(GuardOptions::from_json(&bad)
            .unwrap_err()
            .to_string()
            .contains("tabId"));
    }
    for bad in [json!({"contract": "tasks"}), json!({"contract": 1})] {
        let err = GuardOptions::from_json(&bad).unwrap_err();
        assert_eq!(err.code(), "invalid_options");
        assert!(err.to_string().contains("contract"), "{err}");
    }
}

#[test]
fn the_timeout_is_read_in_milliseconds() {
    assert_eq!(GuardOptions::default().timeout_ms, DEFAULT_TIMEOUT_MS);
    assert_eq!(DEFAULT_TIMEOUT_MS, 10_000);
    for ms in [1, 2500, MAX_TIMEOUT_MS] {
        let o = GuardOptions::from_json(&json!({ "timeoutMs": ms })).unwrap();
        assert_eq!(o.timeout_ms, ms);
    }
    assert!(TIMEOUT_RULE.contains(&format!(" {MAX_TIMEOUT_MS}")));
    let latin1 = GuardOptions::from_json(&json!({"headers": {"X-A": "caf\u{e9} \u{ff}"}}));
    assert_eq!(latin1.unwrap().headers[0].1, "caf\u{e9} \u{ff}");
}
