//! The tests of `src/core/pages.rs`.
#![cfg(test)]

use super::*;
use crate::core::model::JobStatus;
use serde_json::json;

const EVENT: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";

fn event(id: Value, status: &str) -> Value {
    json!({"id": id, "channel_id": "c1", "job_id": EVENT, "user_id": "1",
               "status": status, "errors": [], "result_url": null})
}

fn page_of(v: Value) -> Result<EventPage, GuardError> {
    EventPage::from_text(&v.to_string(), false)
}

fn id(s: &str) -> Option<EventId> {
    EventId::parse(s)
}

#[test]
fn a_page_from_its_text_skips_an_event_nested_too_deeply_and_applies_the_rest() {
    let deep = (0..100).fold(json!(1), |v, _| json!([v]));
    let done = json!({"id": "1700000000012-0", "channel_id": "c", "job_id": "j",
                          "user_id": "1", "status": "done"});
    let text = json!({"result": [
            {"id": "1700000000014-0", "channel_id": "c", "job_id": "j", "user_id": "1",
             "status": "error", "errors": [deep]},
            done,
        ], "other": [1.5]})
    .to_string();
    let page = EventPage::from_text(&text, false).unwrap();
    assert_eq!(
        (page.events.len(), page.skipped, page.partial),
        (1, 1, false)
    );
    // The skipped event was read: its id moves the cursor past it.
    assert_eq!(page.last_id, id("1700000000014-0"));
    for bad in ["", "[]", "{\"result\": 5}", "{\"result\": [] } x", "2.5"] {
        assert_eq!(
            EventPage::from_text(bad, false).unwrap_err().code(),
            "invalid_job",
            "{bad}"
        );
    }
}

#[test]
fn an_event_whose_errors_hold_a_lone_surrogate_is_read_as_json_parse_reads_it() {
    // As Python's json.dumps writes a lone surrogate (and JSON.stringify does).
    let text = r#"{"result": [{"id": "9-0", "channel_id": "c1", "job_id": "j", "user_id": "1",
            "status": "error", "errors": [{"message": "bad \ud800 byte"}], "result_url": null}]}"#;
    let page = EventPage::from_text(text, false).unwrap();
    assert_eq!((page.events.len(), page.skipped), (1, 0));
    assert_eq!(page.events[0].status, JobStatus::Error);
    assert_eq!(page.events[0].errors[0]["message"], "bad \u{FFFD} byte");
}

#[test]
fn a_page_keeps_its_valid_events_and_its_greatest_id() {
    let page = page_of(json!({"result": [
        event(json!("5-0"), "done"),
        event(json!("7-1"), "paused"),
        {"id": "6-0", "job_id": 3},
        event(json!("nope"), "error"),
        event(json!(null), "running"),
        5, "x", [1, [2]], null, true,
    ]}))
    .unwrap();
    assert_eq!(page.events.len(), 3);
    assert_eq!(page.events[0].status, JobStatus::Done);
    assert_eq!(page.events[2].status, JobStatus::Running);
    assert_eq!((page.skipped, page.unknown), (7, 1));
    assert_eq!(page.last_id, id("7-1"));
    assert!(!page.partial);

    let empty = page_of(json!({"result": []})).unwrap();
    assert_eq!(
        (empty.events.len(), empty.last_id, empty.skipped),
        (0, None, 0)
    );
    for bad in [
        json!({"result": null}),
        json!({"result": {}}),
        json!({}),
        json!([]),
        json!("x"),
    ] {
        assert_eq!(
            EventPage::from_text(&bad.to_string(), false)
                .unwrap_err()
                .code(),
            "invalid_job"
        );
    }
}

#[test]
fn more_events_than_a_page_holds_are_read_up_to_the_limit() {
    let many: Vec<Value> = (0..=MAX_EVENTS_PER_PAGE)
        .map(|i| event(json!(format!("{i}-0")), "done"))
        .collect();
    let all = page_of(json!({ "result": many[..MAX_EVENTS_PER_PAGE] })).unwrap();
    assert_eq!((all.events.len(), all.partial), (1000, false));
    let over = page_of(json!({ "result": many })).unwrap();
    assert_eq!((over.events.len(), over.partial), (1000, true));
    assert_eq!(
        over.last_id,
        id("999-0"),
        "the next poll reads on from here"
    );
}

/// A page of Superset's size: 100 error events, each with messages of `message_len`.
fn superset_page(message_len: usize) -> String {
    let events: Vec<Value> = (0..100)
        .map(|i| {
            let mut e = event(json!(format!("1700000000{i:03}-0")), "error");
            e["job_id"] = json!(format!("job-{i}"));
            e["errors"] = json!([{"message": "m".repeat(message_len), "error_type": "X"}]);
            e
        })
        .collect();
    json!({ "result": events }).to_string()
}

#[test]
fn a_page_of_supersets_size_is_read_whole() {
    let text = superset_page(1200);
    assert!(text.len() > 120_000, "{}", text.len());
    let page = EventPage::from_text(&text, false).unwrap();
    assert_eq!(
        (page.events.len(), page.skipped, page.partial),
        (100, 0, false)
    );
    assert_eq!(page.last_id, id("1700000000099-0"));
}

#[test]
fn a_page_cut_short_gives_the_events_read_whole_and_the_next_poll_reads_on() {
    let text = superset_page(1200);
    // Cut in the middle of the 41st event.
    let at = text.match_indices("\"id\"").nth(40).unwrap().0 + 30;
    let page = EventPage::from_text(&text[..at], true).unwrap();
    assert_eq!(
        (page.events.len(), page.skipped, page.partial),
        (40, 0, true)
    );
    assert_eq!(
        page.last_id,
        id("1700000000039-0"),
        "the 41st is read next time"
    );
    // An event larger than the page limit, the first of its page: passed over.
    // (Superset writes an event's `id` first; `json!` would sort the keys.)
    let huge = format!(
        r#"{{"result": [{{"id": "1700000000100-0", "channel_id": "c1", "job_id": "{EVENT}", "user_id": "1", "status": "error", "errors": [{{"message": "{}"}}]}}]}}"#,
        "m".repeat(5000)
    );
    let page = EventPage::from_text(&huge[..2000], true).unwrap();
    assert_eq!(
        (page.events.len(), page.skipped, page.partial),
        (0, 1, true)
    );
    assert_eq!(page.last_id, id("1700000000100-0"));
    // Cut before any id: nothing to go on from.
    assert!(EventPage::from_text(&huge[..12], true).is_err());
}

#[test]
fn a_page_that_breaks_after_some_events_passes_over_the_broken_one() {
    let deeper_than_serde_json_reads = (0..200).fold(json!(1), |v, _| json!([v]));
    let text = format!(
        r#"{{"result": [{}, {{"id": "2-0", "errors": {deeper_than_serde_json_reads}}}, {}]}}"#,
        event(json!("1-0"), "done"),
        event(json!("3-0"), "done"),
    );
    let page = EventPage::from_text(&text, false).unwrap();
    assert_eq!(
        (page.events.len(), page.skipped, page.partial),
        (1, 1, true)
    );
    assert_eq!(
        page.last_id,
        id("2-0"),
        "past the broken event; 3-0 comes next"
    );
    // Broken JSON after two events.
    let text = format!(
        "{{\"result\": [{}, {}, {{\"id\": \"9-0\", \"x\": tru",
        event(json!("7-0"), "done"),
        event(json!("8-0"), "running")
    );
    let page = EventPage::from_text(&text, false).unwrap();
    assert_eq!(
        (page.events.len(), page.skipped, page.partial),
        (2, 1, true)
    );
    assert_eq!(page.last_id, id("9-0"));
}
