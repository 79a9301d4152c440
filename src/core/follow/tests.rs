//! The tests of `src/core/follow.rs`.
#![cfg(test)]

use super::*;

#[test]
fn follow_runs_while_anybody_holds_it_at_the_fastest_cadence_asked() {
    let mut holders = Holders::default();
    let slow = FollowOptions {
        interval_ms: 600_000,
        max_interval_ms: 600_000,
    };
    let quick = FollowOptions {
        interval_ms: 100,
        max_interval_ms: 200,
    };
    let app = holders.hold(Some(slow));
    assert_eq!(holders.options(), slow, "alone, its own");
    let waits = holders.hold(None);
    assert_eq!(
        holders.options(),
        FollowOptions::default(),
        "a wait is not kept waiting by the app's slow cadence"
    );
    let provider = holders.hold(Some(quick));
    assert_eq!(holders.options(), quick);
    assert!(holders.release(provider));
    assert!(holders.release(app));
    assert!(!holders.release(app), "a second stop is harmless");
    assert_eq!(holders.options(), FollowOptions::default());
    assert!(!holders.is_empty(), "the waits still hold it");
    assert!(holders.release(waits));
    assert!(holders.is_empty());
    let mixed = [
        Some(FollowOptions {
            interval_ms: 100,
            max_interval_ms: 600_000,
        }),
        Some(FollowOptions {
            interval_ms: 20_000,
            max_interval_ms: 20_000,
        }),
    ];
    for o in mixed {
        holders.hold(o);
    }
    let o = holders.options();
    assert_eq!((o.interval_ms, o.max_interval_ms), (100, 20_000));
}
use crate::core::doubles::SequenceRandom;
use crate::core::quiet::Json;
use serde_json::{json, Value};

fn options(v: Value) -> Result<FollowOptions, GuardError> {
    FollowOptions::read(Json(&v))
}

#[test]
fn options_default_to_supersets_cadence_and_keep_their_rules() {
    let defaults = FollowOptions {
        interval_ms: 500,
        max_interval_ms: 30_000,
    };
    assert_eq!(options(json!(null)).unwrap(), defaults);
    assert_eq!(options(json!({})).unwrap(), defaults);
    assert_eq!(
        options(json!({"intervalMs": null, "maxIntervalMs": null})).unwrap(),
        defaults
    );
    assert_eq!(
        options(json!({"intervalMs": 1000, "maxIntervalMs": 60000})).unwrap(),
        FollowOptions {
            interval_ms: 1000,
            max_interval_ms: 60_000
        }
    );
    // A longer interval than the default longest raises the longest with it.
    assert_eq!(
        options(json!({"intervalMs": 45000})).unwrap(),
        FollowOptions {
            interval_ms: 45_000,
            max_interval_ms: 45_000
        }
    );
    assert_eq!(
        options(json!({"intervalMs": 100})).unwrap().interval_ms,
        100
    );
    assert_eq!(
        options(json!({"maxIntervalMs": 600000}))
            .unwrap()
            .max_interval_ms,
        600_000
    );
    assert_eq!(
        options(json!({"maxIntervalMs": 500}))
            .unwrap()
            .max_interval_ms,
        500
    );
    for (bad, says) in [
        (json!({"intervalMs": 99}), "`intervalMs`"),
        (json!({"intervalMs": 600001}), "`intervalMs`"),
        (json!({"intervalMs": 500.5}), "`intervalMs`"),
        (json!({"intervalMs": "500"}), "`intervalMs`"),
        (json!({"maxIntervalMs": 499}), "`maxIntervalMs`"),
        (json!({"maxIntervalMs": 600001}), "`maxIntervalMs`"),
        (
            json!({"intervalMs": 2000, "maxIntervalMs": 1999}),
            "`maxIntervalMs`",
        ),
        (json!({"maxIntervalMs": true}), "`maxIntervalMs`"),
        (json!({"interval": 500}), "unknown option `interval`"),
        (json!(5), "expected an object"),
    ] {
        let err = options(bad.clone()).unwrap_err();
        assert_eq!(err.code(), "invalid_options", "{bad}");
        assert!(err.to_string().contains(says), "{bad}: {err}");
    }
}

#[test]
fn the_cadence_doubles_while_quiet_and_starts_over_on_a_change() {
    let mut c = Cadence::new(FollowOptions::default());
    let quiet: Vec<u64> = (0..9).map(|_| c.quiet()).collect();
    assert_eq!(
        quiet,
        [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
    );
    assert_eq!(c.current_ms(), 30_000);
    assert_eq!(c.changed(), 500);
    assert_eq!(c.current_ms(), 500);
    assert_eq!(c.quiet(), 500);
    assert_eq!(c.quiet(), 1000);
    c.restart();
    assert_eq!(c.quiet(), 500);
}

#[test]
fn failures_back_off_with_equal_jitter_and_honour_retry_after() {
    let mut c = Cadence::new(FollowOptions::default());
    let mut low = SequenceRandom::new(vec![0.0]);
    let mut high = SequenceRandom::new(vec![0.999_999]);
    // Ceilings 1 s, 2 s, 4 s …: a wait from half of it to all of it.
    assert_eq!(c.failed(None, 0, &mut low), 500);
    assert_eq!(c.failed(None, 0, &mut high), 1999);
    assert_eq!(c.failed(None, 0, &mut low), 2000);
    for _ in 0..40 {
        c.failed(None, 0, &mut high);
    }
    assert_eq!(c.failed(None, 0, &mut high), 29_999);
    assert_eq!(c.failed(None, 0, &mut low), 15_000);
    // A random source out of range counts as 0, not as a wait past the ceiling.
    let mut broken = SequenceRandom::new(vec![f64::NAN, 7.0, -1.0]);
    for _ in 0..3 {
        assert_eq!(c.failed(None, 0, &mut broken), 15_000);
    }
    // The server's hint lengthens the wait, capped at the longest interval, and never
    // shortens it: `Retry-After: 0` or a date in the past backs off all the same.
    assert_eq!(c.failed(Some("86400"), 0, &mut high), 30_000);
    assert_eq!(c.failed(Some("soon"), 0, &mut low), 15_000);
    assert_eq!(c.failed(Some("0"), 0, &mut low), 15_000);
    assert_eq!(
        c.failed(Some("Thu, 01 Jan 1970 00:00:01 GMT"), 5000, &mut high),
        29_999
    );
    let mut fresh = Cadence::new(FollowOptions::default());
    assert_eq!(fresh.failed(Some("3"), 0, &mut low), 3000);
    assert_eq!(fresh.failed(Some("0"), 0, &mut low), 1000);
    // However the server answers, failures in a row reach the longest interval.
    let waits: Vec<u64> = (0..8)
        .map(|_| fresh.failed(Some("0"), 0, &mut low))
        .collect();
    assert_eq!(
        waits,
        [2000, 4000, 8000, 15_000, 15_000, 15_000, 15_000, 15_000]
    );
    // An answer read ends the failures: the backoff starts over.
    c.quiet();
    assert_eq!(c.failed(None, 0, &mut low), 500);
    c.changed();
    assert_eq!(c.failed(None, 0, &mut low), 500);
    c.failed(None, 0, &mut low);
    c.restart();
    assert_eq!(c.failed(None, 0, &mut low), 500);
}

#[test]
fn a_change_never_brings_a_poll_into_a_backoff_or_within_the_interval() {
    let mut c = Cadence::new(FollowOptions::default());
    let mut low = SequenceRandom::new(vec![0.0]);
    // Healthy: the next poll no sooner than 500 ms after the last one.
    assert_eq!(c.woken(10_000, None, None), 0, "never polled: at once");
    assert_eq!(c.woken(10_000, Some(9_900), None), 400);
    assert_eq!(c.woken(10_000, Some(9_000), None), 0);
    // A quiet stretch had doubled the interval: a change starts it over.
    c.quiet();
    c.quiet();
    c.woken(10_000, Some(0), None);
    assert_eq!(c.current_ms(), 500);
    // Failing: what is left of the backoff stands, however many changes come.
    let wait = c.failed(Some("0"), 10_000, &mut low);
    assert!(c.failing());
    let until = 10_000 + wait;
    for now in [10_001, 10_200, until - 1] {
        assert_eq!(c.woken(now, Some(10_000), Some(until)), until - now);
    }
    assert_eq!(c.woken(until + 5, Some(10_000), Some(until)), 0);
    // An answer read ends the failures.
    c.quiet();
    assert!(!c.failing());
    assert_eq!(c.woken(20_000, Some(19_800), Some(until)), 300);
}

#[test]
fn answers_are_told_apart_by_status_and_content_type() {
    use Contract::{AsyncEvent, Task};
    use PollAnswer::*;
    for contract in [AsyncEvent, Task] {
        assert_eq!(classify_poll(200, true, contract, true), Read);
        assert_eq!(classify_poll(204, true, contract, false), Read);
        // Vite's dev server answers an unknown GET with its HTML page.
        assert_eq!(classify_poll(200, false, contract, true), Failed);
        assert_eq!(classify_poll(401, true, contract, true), SignedOut);
        assert_eq!(classify_poll(401, false, contract, false), SignedOut);
        for status in [301, 429, 500, 502, 503] {
            assert_eq!(classify_poll(status, true, contract, true), Failed);
        }
        // A role without the permission: stopped until the next login, never retried.
        assert_eq!(classify_poll(403, true, contract, true), Forbidden);
        // The stream is not there (the task framework switched off answers 404 on every
        // task route, with JSON; a Superset without the route, its HTML page).
        assert_eq!(classify_poll(404, true, contract, true), Absent);
        assert_eq!(classify_poll(404, false, contract, false), Absent);
    }
    assert_eq!(classify_poll(400, true, Task, true), CursorRefused);
    assert_eq!(classify_poll(400, false, Task, true), CursorRefused);
    // Without a cursor there is no cursor to refuse; the event stream has none to refuse.
    assert_eq!(classify_poll(400, true, Task, false), Failed);
    assert_eq!(classify_poll(400, true, AsyncEvent, true), Failed);
}

#[test]
fn event_ids_are_redis_stream_ids_in_redis_order() {
    let id = |s: &str| EventId::parse(s).unwrap();
    assert_eq!(id("1607477697866-0").as_str(), "1607477697866-0");
    assert!(id("1607477697866-1") > id("1607477697866-0"));
    assert!(id("1607477697867-0") > id("1607477697866-9"));
    assert!(id("10-0") > id("9-5"));
    assert!(id("18446744073709551615-18446744073709551615") > id("1-1"));
    for bad in [
        "",
        "-",
        "1",
        "1-",
        "-1",
        "1-2-3",
        "a-1",
        "1-a",
        " 1-1",
        "1-1 ",
        "+1-1",
        "1-+1",
        "18446744073709551616-0",
        "0-000000000000000000001",
        "1_1",
    ] {
        assert_eq!(EventId::parse(bad), None, "{bad}");
    }
}

#[test]
fn task_cursors_are_floored_to_whole_seconds() {
    let c = |s: &str| TaskCursor::parse(s).map(|c| c.0);
    assert_eq!(
        c("2026-09-01T10:00:00").as_deref(),
        Some("2026-09-01T10:00:00")
    );
    assert_eq!(
        c("2026-09-01T10:00:00.999").as_deref(),
        Some("2026-09-01T10:00:00")
    );
    assert_eq!(
        c("2026-09-01T10:00:00.123456789Z").as_deref(),
        Some("2026-09-01T10:00:00Z")
    );
    assert_eq!(
        c("2026-09-01T10:00:59.5+02:00").as_deref(),
        Some("2026-09-01T10:00:59+02:00")
    );
    assert_eq!(
        c("2026-09-01T10:00:00-05:30").as_deref(),
        Some("2026-09-01T10:00:00-05:30")
    );
    for bad in [
        "",
        "2026-09-01",
        "2026-09-01 10:00:00",
        "2026-09-01T10:00",
        "2026-09-01T10:00:00.",
        "2026-09-01T10:00:00.1234567890",
        "2026-09-01T10:00:00z",
        "2026-09-01T10:00:00+0200",
        "2026-09-01T10:00:00+02:0a",
        "2026-09-01T10:00:00+02:00:00",
        "2026-09-01T10:00:00.5&task_type=x",
        "２026-09-01T10:00:00",
        "now",
    ] {
        assert_eq!(c(bad), None, "{bad}");
    }
}

#[test]
fn the_earlier_cursor_is_kept_when_they_compare() {
    let c = |s: &str| TaskCursor::parse(s).unwrap();
    let early = c("2026-09-01T10:00:00");
    let late = c("2026-09-01T10:00:05.7");
    assert_eq!(early.clone().earlier(late.clone()), early);
    assert_eq!(late.clone().earlier(early.clone()), early);
    let utc = c("2026-09-01T09:00:00Z");
    assert_eq!(late.clone().earlier(utc.clone()), late);
    assert_eq!(
        utc.clone().earlier(c("2026-09-01T08:00:00Z")).as_str(),
        "2026-09-01T08:00:00Z"
    );
    assert_eq!(
        serde_json::from_value::<TaskCursor>(json!("2026-09-01T10:00:00.25")).unwrap(),
        early
    );
    assert!(serde_json::from_value::<TaskCursor>(json!("tomorrow")).is_err());
    assert!(serde_json::from_value::<TaskCursor>(json!(5)).is_err());
}

#[test]
fn a_changes_page_keeps_its_changes_and_its_floored_cursor() {
    const A: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";
    let read = |v: Value| ChangesPage::read_with(|| Json(&v));
    let page = read(
        json!({"statuses": {A: {"status": "success", "progress": 1}},
                               "cursor": "2026-09-01T10:00:01.734"}),
    )
    .unwrap();
    assert_eq!(page.changes.len(), 1);
    assert_eq!(page.cursor.unwrap().as_str(), "2026-09-01T10:00:01");
    let first = read(json!({"statuses": {}, "cursor": "2026-09-01T10:00:00"})).unwrap();
    assert!(first.changes.is_empty());
    assert!(first.cursor.is_some());
    for no_cursor in [
        json!({"statuses": {}}),
        json!({"statuses": {}, "cursor": null}),
        json!({"statuses": {}, "cursor": 17}),
        json!({"statuses": {}, "cursor": "yesterday"}),
    ] {
        assert_eq!(read(no_cursor.clone()).unwrap().cursor, None, "{no_cursor}");
    }
    for bad in [
        json!({"cursor": "2026-09-01T10:00:00"}),
        json!([]),
        json!(null),
    ] {
        assert_eq!(read(bad).unwrap_err().code(), "invalid_job");
    }
}
