//! The tests of `src/core/model.rs`.
#![cfg(test)]

use super::*;
use crate::core::quiet::Json;
use serde_json::json;

fn superset_202() -> Value {
    // The exact body from the contract file (build_job_metadata).
    json!({"channel_id": "1095c1c9-b6b1-444d-aa83-8e323b32831f",
               "job_id": "10a0bd9a-03c8-4737-9345-f4234ba86512",
               "user_id": "1",
               "status": "pending",
               "errors": [],
               "result_url": null})
}

fn read(v: &Value) -> Result<JobMetadata, GuardError> {
    JobMetadata::read(Json(v))
}

#[test]
fn reads_supersets_202_body() {
    let meta = read(&superset_202()).unwrap();
    assert_eq!(meta.job_id, "10a0bd9a-03c8-4737-9345-f4234ba86512");
    assert_eq!(meta.channel_id, "1095c1c9-b6b1-444d-aa83-8e323b32831f");
    assert_eq!(meta.user_id.as_deref(), Some("1"));
    assert_eq!(meta.status, JobStatus::Pending);
    assert!(meta.errors.is_empty());
    assert_eq!(meta.result_url, None);
}

#[test]
fn reads_an_event_and_ignores_its_id() {
    let ev = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error",
                        "errors": [{"message": "Error: relation 'foo' does not exist"}],
                        "result_url": null, "id": "1607477697866-0"});
    let meta = read(&ev).unwrap();
    assert_eq!(meta.status, JobStatus::Error);
    assert_eq!(meta.errors.len(), 1);
}

#[test]
fn numeric_and_null_user_ids_are_normalised() {
    let with_user = |user: Value| {
        let mut v = superset_202();
        v["user_id"] = user;
        read(&v).unwrap().user_id
    };
    assert_eq!(with_user(json!(7)).as_deref(), Some("7"));
    assert_eq!(with_user(json!(7.0)).as_deref(), Some("7"));
    assert_eq!(with_user(json!(null)), None);
}

#[test]
fn errors_and_result_url_may_be_absent() {
    let v = json!({"channel_id": "c", "job_id": "j", "user_id": null, "status": "running"});
    let meta = read(&v).unwrap();
    assert!(meta.errors.is_empty());
    assert_eq!(meta.result_url, None);
}

#[test]
fn rejects_invalid_metadata_with_a_reason() {
    let cases: Vec<(Value, &str)> = vec![
        (json!("not an object"), "object"),
        (json!(null), "object"),
        (
            json!({"channel_id": "c", "user_id": "1", "status": "pending"}),
            "job_id",
        ),
        (
            json!({"channel_id": "c", "job_id": "", "user_id": "1", "status": "pending"}),
            "job_id",
        ),
        (
            json!({"channel_id": "c", "job_id": 5, "user_id": "1", "status": "pending"}),
            "job_id",
        ),
        (
            json!({"channel_id": "c", "job_id": "a\nb", "user_id": "1", "status": "pending"}),
            "job_id",
        ),
        (
            json!({"job_id": "j", "user_id": "1", "status": "pending"}),
            "channel_id",
        ),
        (
            json!({"channel_id": "c", "job_id": "j", "status": "pending"}),
            "user_id",
        ),
        (
            json!({"channel_id": "c", "job_id": "j", "user_id": true, "status": "pending"}),
            "user_id",
        ),
        (
            json!({"channel_id": "c", "job_id": "j", "user_id": 1.5, "status": "pending"}),
            "user_id",
        ),
        (
            json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "queued"}),
            "status",
        ),
        (
            json!({"channel_id": "c", "job_id": "j", "user_id": "1"}),
            "status",
        ),
        (
            json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "done", "errors": "boom"}),
            "errors",
        ),
        (
            json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "done", "result_url": 3}),
            "result_url",
        ),
    ];
    for (value, field) in cases {
        let err = read(&value).unwrap_err();
        assert_eq!(err.code(), "invalid_job", "{value}");
        assert!(err.to_string().contains(field), "{value}: {err}");
    }
    let long = "x".repeat(MAX_ID_LEN + 1);
    let v = json!({"channel_id": "c", "job_id": long, "user_id": "1", "status": "pending"});
    assert!(read(&v).is_err());
}

#[test]
fn a_wrong_type_and_a_wrong_value_get_the_same_message() {
    let wrong_type = json!({"channel_id": "c", "job_id": 5, "user_id": "1", "status": "pending"});
    let wrong_value = json!({"channel_id": "c", "job_id": "", "user_id": "1", "status": "pending"});
    assert_eq!(
        read(&wrong_type).unwrap_err().to_string(),
        read(&wrong_value).unwrap_err().to_string()
    );
}

#[test]
fn errors_nested_too_deeply_are_refused_not_a_stack_overflow() {
    let nested = |depth: usize| {
        let mut v = json!("bottom");
        for _ in 0..depth {
            v = json!({ "a": [v] });
        }
        v
    };
    let with_errors = |errors: Value| {
        json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error",
                   "errors": errors})
    };
    // Each level here is an object and an array: two levels of JSON.
    let fine = read(&with_errors(json!([nested(MAX_DEPTH / 2 - 1)]))).unwrap();
    assert_eq!(fine.errors.len(), 1);
    let err = read(&with_errors(json!([nested(MAX_DEPTH / 2)]))).unwrap_err();
    assert!(err.to_string().contains("`errors`"), "{err}");
    // Far deeper: still an error value, read no further than the limit. (serde_json's own
    // reader stops at 128 levels, so the value is built here rather than parsed; the
    // browser tests send JS values 100,000 levels deep and cyclic ones.)
    let mut deep = Value::Null;
    for _ in 0..300 {
        deep = Value::Array(vec![deep]);
    }
    assert_eq!(read(&with_errors(json!([]))).unwrap().errors.len(), 0);
    let refused = read(&with_errors(Value::Array(vec![deep]))).unwrap_err();
    assert_eq!(refused.code(), "invalid_job");
}

#[test]
fn records_round_trip_through_storage_text_in_the_v1_format() {
    let meta = read(&superset_202()).unwrap();
    let rec = JobRecord::new(meta, 10, 20);
    let text = rec.to_stored();
    assert_eq!(
        text,
        r#"{"channel_id":"1095c1c9-b6b1-444d-aa83-8e323b32831f","job_id":"10a0bd9a-03c8-4737-9345-f4234ba86512","user_id":"1","status":"pending","errors":[],"result_url":null,"created_at":10,"updated_at":20}"#
    );
    assert_eq!(rec.stored_len(), text.len());
    assert_eq!(JobRecord::from_stored(&text), Some(rec));
}

#[test]
fn an_error_too_long_to_keep_whole_keeps_the_start_of_its_message() {
    // Superset's error event for a query whose database error runs to 30 KB.
    let long = format!(
        "ORA-00942: table or view does not exist \"{}\"",
        "é".repeat(15_000)
    );
    let error = json!({"message": long, "error_type": "GENERIC_DB_ENGINE_ERROR",
                           "level": "error", "extra": {"engine_name": "Oracle", "x": "y".repeat(500)}});
    let v = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error",
                       "errors": [json!({"message": "first"}), error, json!({"message": "last"})]});
    let mut rec = JobRecord::new(read(&v).unwrap(), 1, 1);
    rec.trim_to_fit().unwrap();
    assert!(rec.fits());
    assert_eq!(
        rec.errors().len(),
        2,
        "the first whole, the second shortened"
    );
    let kept = &rec.errors()[1];
    let message = kept["message"].as_str().unwrap();
    assert!(message.starts_with("ORA-00942: table or view does not exist"));
    assert!(message.ends_with('…'));
    assert!(message.chars().count() > 1000, "as much as fits");
    assert_eq!(kept["error_type"], "GENERIC_DB_ENGINE_ERROR");
    assert_eq!(kept.get("extra"), None);
    // Room is left for nothing more.
    assert!(rec.stored_len() > MAX_RECORD_BYTES - 64);
    // A short message whose other fields were too long keeps its message whole.
    let v = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error",
                       "errors": [{"message": "short", "extra": "x".repeat(20_000)}]});
    let mut rec = JobRecord::new(read(&v).unwrap(), 1, 1);
    rec.trim_to_fit().unwrap();
    assert_eq!(rec.errors(), [json!({"message": "short"})]);
    // An error without a string message is not shortened: it goes.
    let v = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error",
                       "errors": [["x".repeat(20_000)]]});
    let mut rec = JobRecord::new(read(&v).unwrap(), 1, 1);
    rec.trim_to_fit().unwrap();
    assert!(rec.errors().is_empty());
}

#[test]
fn reserved_and_oversized_records_are_refused() {
    for id in super::super::ids::RESERVED_IDS {
        let v = json!({"channel_id": "c", "job_id": id, "user_id": "1", "status": "pending"});
        let err = read(&v).unwrap_err();
        assert!(err.to_string().contains("reserved name"), "{id}: {err}");
    }
    let big = vec![json!({"message": "x".repeat(1000)}); 20];
    let v =
        json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error", "errors": big});
    let mut rec = JobRecord::new(read(&v).unwrap(), 1, 1);
    assert_eq!(rec.check_fits().unwrap_err().code(), "invalid_job");
    rec.trim_to_fit().unwrap();
    assert!(rec.to_stored().len() <= MAX_RECORD_BYTES);
    assert!(!rec.errors().is_empty() && rec.errors().len() < 20);
    // As many errors as fit are kept, from the first: one more would not fit.
    let kept = rec.errors().len();
    let mut one_more = rec.clone();
    if let RecordKind::Job { details, .. } = &mut one_more.kind {
        details.errors.push(big[kept].clone());
    }
    assert!(!one_more.fits(), "{kept} kept");
    // A record of exactly the limit fits, and an error that fills it exactly is kept.
    let base = JobRecord::new(read(&v).unwrap(), 1, 1);
    let with_errors = |errors: Vec<Value>| {
        let mut r = base.clone();
        if let RecordKind::Job { details, .. } = &mut r.kind {
            details.errors = errors;
        }
        r
    };
    let empty = with_errors(vec![json!("")]).stored_len();
    let exact = with_errors(vec![json!("x".repeat(MAX_RECORD_BYTES - empty))]);
    assert_eq!(exact.stored_len(), MAX_RECORD_BYTES);
    assert!(exact.check_fits().is_ok() && exact.fits());
    let mut trimmed = exact.clone();
    trimmed.trim_to_fit().unwrap();
    assert_eq!(trimmed, exact, "nothing to trim at exactly the limit");
    // Trimming keeps each error that fits what is left, up to its last byte: here "y"
    // (4 bytes with its comma) fills the room the first leaves, and "z…" does not fit.
    let budget = MAX_RECORD_BYTES - with_errors(vec![]).stored_len();
    let first = json!("x".repeat(budget - 7));
    let mut over = with_errors(vec![first.clone(), json!("y"), json!("z".repeat(100))]);
    over.trim_to_fit().unwrap();
    assert_eq!(over.errors(), [first, json!("y")]);
    assert_eq!(over.stored_len(), MAX_RECORD_BYTES - 1);
    // The size is the record's own JSON, as the guard writes it: whitespace around it in
    // storage does not count, errors added to it do.
    let padded = format!("{}{}", rec.to_stored(), " ".repeat(MAX_RECORD_BYTES));
    assert_eq!(JobRecord::from_stored(&padded), Some(rec.clone()));
    if let RecordKind::Job { details, .. } = &mut rec.kind {
        details.errors.push(json!("x".repeat(MAX_RECORD_BYTES)));
    }
    assert_eq!(
        JobRecord::from_stored(&rec.to_stored()),
        None,
        "oversized in storage"
    );
}

#[test]
fn a_record_fits_when_its_stored_text_does() {
    // A short stored text fits without writing the record again. The most a stored text
    // grows when written again: numbers serde_json writes longer (`1e15`), fields left
    // out that are written with their defaults.
    let limit = (MAX_RECORD_BYTES - 64) / 5;
    let head = r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"error","created_at":1e12,"updated_at":1e12,"errors":["#;
    let count = (limit - head.len() - 2) / 5;
    let text = format!("{head}{}]}}", vec!["1e15"; count].join(","));
    assert!(text.len() <= limit, "{}", text.len());
    let rec: JobRecord = serde_json::from_str(&text).unwrap();
    let written = rec.to_stored().len();
    assert!(written > 3 * text.len(), "{written} from {}", text.len());
    assert!(written <= MAX_RECORD_BYTES && rec.fits());
    assert!(rec.fits_stored(text.len()));
    // Longer: counted exactly.
    let longer = format!("{head}{}]}}", vec!["1e15"; count * 2].join(","));
    let big: JobRecord = serde_json::from_str(&longer).unwrap();
    assert!(!big.fits() && !big.fits_stored(longer.len()));
    assert!(rec.fits_stored(longer.len()));
    let mut rec = JobRecord::new(read(&superset_202()).unwrap(), u64::MAX, u64::MAX);
    rec.cancel();
    let url = |rec: &mut JobRecord, url: Option<String>| {
        if let RecordKind::Job { details, .. } = &mut rec.kind {
            details.result_url = url;
        }
    };
    for n in [0, 1, 100, 2000, 2600, 2700, 2800, 5000] {
        for fill in ["x", "\u{1}", "\"", "é"] {
            url(&mut rec, Some(fill.repeat(n)));
            assert_eq!(
                rec.fits(),
                rec.to_stored().len() <= MAX_RECORD_BYTES,
                "{n} {fill:?}"
            );
            // Every field counts, the optional ones included.
            let mut guest = JobRecord::task(
                "10a0bd9a-03c8-4737-9345-f4234ba86512".into(),
                None,
                None,
                u64::MAX,
            );
            guest.guest_key = GuestKey::try_from(fill.repeat(n.clamp(1, MAX_ID_LEN))).ok();
            guest.kind = RecordKind::Task {
                status: TaskStatus::Pending,
                tab_ids: vec!["t".repeat(64).as_str().into(); n / 64],
                errors: Vec::new(),
            };
            assert_eq!(
                guest.fits(),
                guest.to_stored().len() <= MAX_RECORD_BYTES,
                "{n} {fill:?}"
            );
        }
    }
}

#[test]
fn records_read_back_as_written_whole_numbers_and_escapes_included() {
    // The store keeps each record it writes beside its text (store/parsed.rs) when reading
    // that text gives the very record back.
    let error = |n: Value| json!({"message": "é\u{1}\"\\\n😀", "n": n, "i": -7, "u": 9_007_199_254_740_991u64});
    let with = |errors: Vec<Value>| {
        let v = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error",
                           "errors": errors});
        JobRecord::new(read(&v).unwrap(), 1, 2)
    };
    let whole = with(vec![
        error(json!(0)),
        error(json!(-9_007_199_254_740_991i64)),
        error(json!([{"a": 3}])),
    ]);
    assert!(whole.reads_back_exactly());
    assert_eq!(JobRecord::from_stored(&whole.to_stored()), Some(whole));
    // A float anywhere in the errors: not promised (serde_json reads it back to within one
    // unit in the last place), so not kept beside its text.
    for f in [0.1, 2.0, 1e300, 5e-324] {
        assert!(
            !with(vec![error(json!([{"x": f}]))]).reads_back_exactly(),
            "{f}"
        );
    }
}

#[test]
fn task_records_round_trip() {
    let mut rec = JobRecord::task(
        "10a0bd9a-03c8-4737-9345-f4234ba86512".into(),
        None,
        Some("t-1".into()),
        5,
    );
    rec.guest_key = Some("g".into());
    assert!(rec.set_task_status(TaskStatus::TimedOut));
    let text = rec.to_stored();
    assert!(text.contains(r#""status":"timed_out""#), "{text}");
    assert_eq!(rec.stored_len(), text.len());
    assert_eq!(JobRecord::from_stored(&text), Some(rec.clone()));
    assert!(rec.is_task() && rec.status().is_terminal());
    let mut aborted = rec.clone();
    aborted.cancel();
    assert_eq!(aborted.status(), TaskStatus::Aborted);
    let tabs = |n: usize| RecordKind::Task {
        status: TaskStatus::Pending,
        tab_ids: (0..n).map(|i| format!("t{i}").as_str().into()).collect(),
        errors: Vec::new(),
    };
    rec.kind = tabs(MAX_TAB_IDS);
    assert_eq!(JobRecord::from_stored(&rec.to_stored()), Some(rec.clone()));
    rec.kind = tabs(MAX_TAB_IDS + 1);
    assert_eq!(JobRecord::from_stored(&rec.to_stored()), None);
}

#[test]
fn whole_float_timestamps_are_read() {
    let text = r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"done","errors":[],"result_url":null,"created_at":1796228787559.0,"updated_at":2}"#;
    assert_eq!(
        JobRecord::from_stored(text).unwrap().created_at,
        1_796_228_787_559
    );
    let half = text.replace("1796228787559.0", "1.5");
    assert_eq!(JobRecord::from_stored(&half), None);
}

#[test]
fn malformed_stored_records_read_as_absent() {
    for text in [
        "",
        "{",
        "null",
        "[]",
        r#"{"job_id":"j"}"#,
        r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"done","errors":[],"result_url":null}"#,
        r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"done","errors":[],"result_url":null,"created_at":-1,"updated_at":2}"#,
        r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"nope","errors":[],"result_url":null,"created_at":1,"updated_at":2}"#,
        r#"{"channel_id":"c","job_id":"__proto__","user_id":"1","status":"done","errors":[],"result_url":null,"created_at":1,"updated_at":2}"#,
        // Tasks: a uuid (lowercase) and a task status; tab ids only on tasks; guest keys
        // only on guests' records.
        r#"{"channel_id":null,"job_id":"j","user_id":"1","status":"pending","errors":[],"result_url":null,"created_at":1,"updated_at":2}"#,
        r#"{"channel_id":null,"job_id":"10A0BD9A-03C8-4737-9345-F4234BA86512","user_id":"1","status":"pending","errors":[],"result_url":null,"created_at":1,"updated_at":2}"#,
        r#"{"channel_id":null,"job_id":"10a0bd9a-03c8-4737-9345-f4234ba86512","user_id":"1","status":"running","errors":[],"result_url":null,"created_at":1,"updated_at":2}"#,
        r#"{"channel_id":null,"job_id":"10a0bd9a-03c8-4737-9345-f4234ba86512","user_id":"1","status":"pending","errors":[],"result_url":null,"created_at":1,"updated_at":2,"tab_ids":["a b"]}"#,
        r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"pending","errors":[],"result_url":null,"created_at":1,"updated_at":2,"tab_ids":["t"]}"#,
        r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"pending","errors":[],"result_url":null,"created_at":1,"updated_at":2,"guest_key":"g"}"#,
        r#"{"channel_id":"c","job_id":"j","user_id":"1","status":"in_progress","errors":[],"result_url":null,"created_at":1,"updated_at":2}"#,
        r#"{"job_id":"j","user_id":"1","status":"done","errors":[],"result_url":null,"created_at":1,"updated_at":2}"#,
    ] {
        assert_eq!(JobRecord::from_stored(text), None, "{text}");
    }
}
