//! Every parser the guard runs on untrusted input: stored records and session markers (any
//! string from localStorage, read as gloo-storage reads it: serde_json), job metadata and
//! events, the options and login objects, the task framework's 202 bodies, status messages and
//! status changes, the contract option, cancel answers' bodies and the status read after a
//! task's 422 (any JSON, through the same serde readers the JS boundary uses, and as text
//! within the body limits), and Retry-After headers; and, as `applyEvent`, `follow()` and `waitFor`
//! read them, events and status-change answers from their text (lone surrogates mended as
//! `JSON.parse` reads them), `waitFor`'s input and options, `query()`'s options and the
//! chart-data answers it reads. None may panic; what one accepts must
//! be valid and must round-trip, and the one-pass and two-pass readings of a text answer alike. (Numbers inside a record's `errors` are parsed as serde_json parses floats
//! by default, which may move one by its last bit: there the round trip checks that every
//! entry is still there, not each number's last bit.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use superset_job_guard::core::ids::{canonical_uuid, is_reserved_id, is_tab_id, is_valid_id};
use superset_job_guard::core::model::{JobMetadata, JobRecord, RecordKind};
use superset_job_guard::core::options::GuardOptions;
use superset_job_guard::core::endpoints::{read_status, read_task_error};
use superset_job_guard::core::chart::{
    classify_chart, classify_result, ChartAnswer, QuerySettings, MAX_ERRORS, MAX_MESSAGE_CHARS,
};
use superset_job_guard::core::follow::ChangesPage;
use superset_job_guard::core::quiet::{self, Json};
use superset_job_guard::core::surrogates::mend;
use superset_job_guard::core::wait_input::{read_input, WaitInput, WaitSettings};
use superset_job_guard::core::waiters::MAX_JOBS_PER_WAITER;
use superset_job_guard::core::pages::EventPage;
use superset_job_guard::core::response::{classify, Contract, Reply};
use superset_job_guard::core::retry::{parse_http_date, parse_retry_after};
use superset_job_guard::core::session::Session;
use superset_job_guard::core::task::{StatusChange, Submission, MAX_TASKS_PER_BODY};

/// The record without its job's `errors`, and how many there were.
fn without_errors(mut record: JobRecord) -> (JobRecord, usize) {
    let errors = match &mut record.kind {
        RecordKind::Job { details, .. } => std::mem::take(&mut details.errors).len(),
        RecordKind::Task { .. } => 0,
    };
    (record, errors)
}

/// A task id as the readers must hand it on: a uuid, already canonical.
fn canonical(id: &str) -> bool {
    canonical_uuid(id).as_deref() == Some(id)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(record) = JobRecord::from_stored(text) {
        assert!(is_valid_id(&record.job_id) && !is_reserved_id(&record.job_id));
        let again = record.to_stored();
        let back = JobRecord::from_stored(&again).expect("an accepted record reads back");
        assert_eq!(without_errors(back), without_errors(record));
    }
    if let Some(session) = Session::from_stored(text) {
        let again = session.to_stored();
        assert_eq!(Session::from_stored(&again), Some(session));
    }
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        if let Ok(meta) = JobMetadata::read(&value) {
            assert!(is_valid_id(&meta.job_id) && !is_reserved_id(&meta.job_id));
            assert!(is_valid_id(&meta.channel_id));
        }
        // A status this guard does not know is `None` (skipped), never an error.
        let _ = JobMetadata::read_event(&value);
        let _ = Session::from_login(&value);
        let _ = GuardOptions::read(&value);
        if let Ok(submission) = Submission::read(&value) {
            let ids = &submission.task_ids;
            assert!(!ids.is_empty() && ids.len() <= MAX_TASKS_PER_BODY);
            assert!(ids.iter().all(|id| canonical(id)));
            assert!(submission.tab_id.as_deref().map_or(true, is_tab_id));
        }
        if let Ok(change) = StatusChange::read(&value) {
            assert!(canonical(&change.task_id));
        }
        if let Ok(changes) = StatusChange::read_all(&value) {
            assert!(changes.iter().all(|c| canonical(&c.task_id)));
        }
        let _ = Contract::read(&value);
        let reply = Reply::from_json(&value);
        for contract in [Contract::AsyncEvent, Contract::Task] {
            for status in [200, 403, 404, 422] {
                let _ = classify(status, contract, &reply);
            }
        }
    }
    let reply = Reply::from_text(text);
    for status in [200, 404, 422] {
        let _ = classify(status, Contract::Task, &reply);
    }
    // The answer of a task's status read after a 422: a task status (its type) or nothing.
    let _ = read_status(text);
    // A failed task's reason: bounded.
    if let Some(reason) = read_task_error(text) {
        assert!(reason.chars().count() <= 1024);
    }
    // A page of the event stream, whole or cut: never more events than a page holds, and the
    // cursor only from ids read.
    for cut in [false, true] {
        if let Ok(page) = EventPage::from_text(text, cut) {
            assert!(page.events.len() + page.skipped <= 1000 + 1);
            assert!(page.unknown <= page.skipped);
        }
    }
    let mut json = serde_json::Deserializer::from_str(text);
    let _ = JobMetadata::read(&mut json);

    // Lone surrogates: text serde_json reads is left as it is; mending is done once.
    let mended = mend(text);
    if serde_json::from_str::<serde_json::Value>(text).is_ok() {
        assert_eq!(mended, text);
    }
    assert_eq!(mend(&mended), mended);
    // An event as `applyEvent` reads it, and a status-change answer as `follow()` reads it.
    let event = quiet::read(text, |d| JobMetadata::read_event(d), |_| {
        superset_job_guard::core::error::GuardError::InvalidJob(String::new())
    });
    if let Ok(parsed) = quiet::parse(text) {
        if let Ok(page) = ChangesPage::read_with(|| Json(&parsed)) {
            assert!(page.changes.iter().all(|c| canonical(&c.task_id)));
        }
        // waitFor's first argument and its options.
        match read_input(&parsed) {
            Ok(WaitInput::Ids(ids)) => {
                assert!(!ids.is_empty() && ids.len() <= MAX_JOBS_PER_WAITER);
            }
            Ok(WaitInput::Tasks(submission)) => {
                assert!(submission.task_ids.iter().all(|id| canonical(id)));
            }
            Ok(WaitInput::Job(meta)) => assert!(is_valid_id(&meta.job_id)),
            Err(_) => {}
        }
        if let Ok(settings) = WaitSettings::read(Json(&parsed), true) {
            assert!((1..=86_400_000).contains(&settings.stale_ms));
        }
        // query()'s options, and a chart-data answer and a result's read as it reads them:
        // errors bounded, a 202 only with a job or tasks.
        if let Ok(settings) = QuerySettings::read(Json(&parsed), true) {
            assert!(settings.url.starts_with('/') && !settings.url.starts_with("//"));
        }
        for status in [200, 202, 400, 401, 403, 404, 500] {
            for answer in [
                classify_chart(status, true, Some(&parsed)),
                classify_result(status, true, Some(&parsed)),
            ] {
                match answer {
                    ChartAnswer::Accepted(WaitInput::Ids(_)) => panic!("a 202 names a job or tasks"),
                    ChartAnswer::Failed { errors, message, .. } => {
                        assert!(errors.len() <= MAX_ERRORS);
                        assert!(message.chars().count() <= 4 * MAX_MESSAGE_CHARS);
                    }
                    _ => {}
                }
            }
        }
    } else {
        assert!(event.is_err());
    }
    if let Ok(Some(event)) = event {
        assert!(is_valid_id(&event.job_id) && is_valid_id(&event.channel_id));
    }
    let _ = parse_retry_after(text, 1_700_000_000_000);
    let _ = parse_http_date(text);
});
