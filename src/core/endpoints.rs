//! Superset's endpoints, each in one place: where it is (its URL template, and where that
//! stands beside the app's `cancelUrl`), what the guard sends it, and how the guard reads what
//! it answers. A new endpoint is a URL method and a reader here, and the shell's call of them.
//!
//! | endpoint | URL | sent | read |
//! |---|---|---|---|
//! | async_event cancel | `POST /api/v1/async_event/<job_id>/cancel` | nothing | [`classify`](super::response::classify) |
//! | task cancel | `POST /api/v1/task/<uuid>/cancel` | `{"tab_id"?}` ([`cancel_body`](GuardOptions::cancel_body)) | [`classify`](super::response::classify) |
//! | task status | `GET /api/v1/task/<uuid>/status` | | [`read_status`] |
//! | task | `GET /api/v1/task/<uuid>` | | [`read_task_error`] |
//! | async events | `GET /api/v1/async_event/?last_id=` | | [`EventPage`](super::pages::EventPage) |
//! | status changes | `GET /api/v1/task/status_changes?cursor=` | | [`ChangesPage`](super::follow::ChangesPage) |
//!
//! Every answer is read the same way: JSON is told by its `Content-Type` ([`is_json_type`]),
//! and a body is read within a limit ([`Limit`]: 64 Ki characters, or 2 Mi for a page of an
//! event stream) and [`wire::MAX_DEPTH`](super::wire::MAX_DEPTH) levels deep.

use super::model::TaskStatus;
use super::options::{GuardOptions, DEFAULT_CANCEL_URL, DEFAULT_TASK_CANCEL_URL, PLACEHOLDER};
pub use super::quiet::{json_within_limits, MAX_BODY_CHARS};
use super::response::{Contract, Reply};

/// The task framework's status endpoint, read after a task's 422.
pub const DEFAULT_TASK_STATUS_URL: &str = "/api/v1/task/{job_id}/status";
/// A task itself: `GET` answers `{ result: TaskResponse }` (`follow` reads a failed task's
/// `semantic_result_error` there).
pub const DEFAULT_TASK_URL: &str = "/api/v1/task/{job_id}";
/// The async_event stream's polling endpoint (`follow`).
pub const DEFAULT_EVENTS_URL: &str = "/api/v1/async_event/";
/// The task framework's polling endpoint (`follow`).
pub const DEFAULT_CHANGES_URL: &str = "/api/v1/task/status_changes";

impl GuardOptions {
    /// The cancel URL for `job_id` under `contract` (the record's): the template with the id,
    /// URL-encoded, in place of `{job_id}`. `cancelUrl` is the template of the guard's own
    /// `contract`; a record of the other contract (recorded through the other contract's
    /// method, or by a tab with the other option) goes to that contract's default endpoint.
    pub fn cancel_url_for(&self, job_id: &str, contract: Contract) -> String {
        fill(self.cancel_template(contract), job_id)
    }

    /// The cancel URL template of `contract`: `cancelUrl` for the guard's own, else that
    /// contract's default.
    pub fn cancel_template(&self, contract: Contract) -> &str {
        match contract {
            c if c == self.contract => &self.cancel_url,
            Contract::Task => DEFAULT_TASK_CANCEL_URL,
            Contract::AsyncEvent => DEFAULT_CANCEL_URL,
        }
    }

    /// The status URL of the task `task_id`: beside its cancel URL (a task cancel URL ending in
    /// `/cancel` ends in `/status` instead), else Superset's own.
    pub fn status_url_for(&self, task_id: &str) -> String {
        match self.cancel_template(Contract::Task).strip_suffix("/cancel") {
            Some(base) => fill(&format!("{base}/status"), task_id),
            None => fill(DEFAULT_TASK_STATUS_URL, task_id),
        }
    }

    /// The URL of the task `task_id` itself (`GET /api/v1/task/<uuid>`, where a failed task
    /// says why): beside its cancel URL (a task cancel URL ending in `/cancel`, without it),
    /// else Superset's own.
    pub fn task_url_for(&self, task_id: &str) -> String {
        match self.cancel_template(Contract::Task).strip_suffix("/cancel") {
            Some(base) => fill(base, task_id),
            None => fill(DEFAULT_TASK_URL, task_id),
        }
    }

    /// The async_event stream's polling URL (`follow`), asking for the events after `last_id`:
    /// beside the cancel URL (a template ending in `{job_id}/cancel` polls its folder), else
    /// Superset's own `/api/v1/async_event/`.
    pub fn events_url(&self, last_id: Option<&str>) -> String {
        let base = self.stream_base(Contract::AsyncEvent, DEFAULT_EVENTS_URL, "");
        match last_id {
            Some(id) => format!("{base}?last_id={}", encode_uri_component(id)),
            None => base,
        }
    }

    /// The task framework's `status_changes` URL (`follow`), asking for the changes at or after
    /// `cursor`: beside the task cancel URL, else Superset's own.
    pub fn changes_url(&self, cursor: Option<&str>) -> String {
        let base = self.stream_base(Contract::Task, DEFAULT_CHANGES_URL, "status_changes");
        match cursor {
            Some(cursor) => format!("{base}?cursor={}", encode_uri_component(cursor)),
            None => base,
        }
    }

    /// `contract`'s cancel template's folder (the part before `{job_id}/cancel`) with `leaf`,
    /// or `default` for a template of another shape.
    fn stream_base(&self, contract: Contract, default: &str, leaf: &str) -> String {
        match self
            .cancel_template(contract)
            .strip_suffix("{job_id}/cancel")
        {
            Some(folder) if folder.ends_with('/') && !folder.contains(PLACEHOLDER) => {
                format!("{folder}{leaf}")
            }
            _ => default.to_owned(),
        }
    }

    /// The cancel request's JSON body under `contract` (the record's): none for
    /// `async_event`; for `task`, `{"tab_id": …}` with the tab's id when it has one, `{}`
    /// otherwise (Superset's schema takes no other field: an unknown one is a server error).
    pub fn cancel_body(contract: Contract, tab_id: Option<&str>) -> Option<String> {
        (contract == Contract::Task).then(|| {
            #[derive(serde::Serialize)]
            struct Body<'a> {
                #[serde(skip_serializing_if = "Option::is_none")]
                tab_id: Option<&'a str>,
            }
            serde_json::to_string(&Body { tab_id }).unwrap_or_else(|_| "{}".to_owned())
        })
    }
}

/// `template` with `id`, URL-encoded, in place of `{job_id}`.
fn fill(template: &str, id: &str) -> String {
    template.replace(PLACEHOLDER, &encode_uri_component(id))
}

/// `encodeURIComponent`: every byte but ASCII letters, digits and `-_.!~*'()` as `%XX`.
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The longest page of an event stream the guard reads whole (UTF-16 code units): Superset
/// answers at most 100 events a page (`MAX_EVENT_COUNT`), and an event the guard keeps is at
/// most [`MAX_RECORD_BYTES`](super::model::MAX_RECORD_BYTES) (16 KiB), so 100 of the largest
/// and their ids fit with room to spare. Of a longer page the guard reads this much.
pub const MAX_PAGE_CHARS: usize = 2 * 1024 * 1024;

/// The longest chart-data result `query()` hands over (UTF-16 code units): the guard does not
/// read a result, it hands the text to `JSON.parse`; a longer one is a failure rather than a
/// page's memory spent on it.
pub const MAX_RESULT_CHARS: usize = 32 * 1024 * 1024;

/// How much of a body the guard reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// An answer: at most [`MAX_BODY_CHARS`]; a longer one is not read.
    Body,
    /// A page of an event stream: at most [`MAX_PAGE_CHARS`]; of a longer one, its start.
    Page,
    /// A chart-data result, handed over: at most [`MAX_RESULT_CHARS`].
    Result,
}

impl Limit {
    pub fn chars(self) -> usize {
        match self {
            Limit::Body => MAX_BODY_CHARS,
            Limit::Page => MAX_PAGE_CHARS,
            Limit::Result => MAX_RESULT_CHARS,
        }
    }

    /// What of a body `length` UTF-16 units long is read: all of it, its first `n` units (a
    /// page's start: a page is cut, not refused), or none (too long to be the answer).
    pub fn take(self, length: usize) -> Take {
        match self.chars() {
            chars if length <= chars => Take::Whole,
            chars if self == Limit::Page => Take::Start(chars),
            _ => Take::TooLong,
        }
    }
}

/// What of a body is read ([`Limit::take`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    Whole,
    Start(usize),
    TooLong,
}

/// Whether an answer's declared `Content-Length` is beyond what `limit` reads (at most 3 bytes
/// of UTF-8 for each UTF-16 unit), so that its body need not be read at all. A page's start is
/// read whatever its length.
pub fn declared_too_long(content_length: Option<&str>, limit: Limit) -> bool {
    let declared = content_length
        .filter(|n| n.len() <= 20 && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok());
    limit != Limit::Page && declared.is_some_and(|n| n > 3 * limit.chars() as u64)
}

/// How long a body the guard did not need may take to arrive once its answer is decided (ms).
/// It is read to its end rather than aborted (a request aborted after its answer shows as
/// failed, `net::ERR_ABORTED`, in the browser's network log); one not ended by then is aborted,
/// so that it holds no connection.
pub const UNREAD_BODY_MS: u32 = 2_000;

/// Whether an answer whose body the guard did not need is read to its end (within
/// [`UNREAD_BODY_MS`]) rather than aborted at once: unless its `Content-Length` declares more
/// than an answer the guard reads ([`Limit::Body`]).
pub fn drains_unread(content_length: Option<&str>) -> bool {
    !declared_too_long(content_length, Limit::Body)
}

/// Whether a `Content-Type` is JSON's (`application/json`, or a `+json` type).
pub fn is_json_type(kind: &str) -> bool {
    let kind = kind.to_ascii_lowercase();
    kind.starts_with("application/json") || kind.contains("+json")
}

/// An HTTP status as JS gives it: a whole number from 0 to 999, else none.
pub fn http_status(value: f64) -> Option<u16> {
    (value.fract() == 0.0 && (0.0..=999.0).contains(&value)).then_some(value as u16)
}

/// What a cancel answer's body says, as far as it can be told without reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    Decided(Reply),
    /// A JSON body the outcome depends on: read its text.
    Text,
}

/// What a cancel answer's body says, read only where the outcome depends on it (a 2xx, a 404,
/// a 422). An answer `fetch` reached by following a redirect is another page's. JSON is told
/// by its `Content-Type`; a body of another type (Superset's HTML error page or login page) is
/// not the endpoint's answer. A 404 without a `Content-Type` is not either (Superset's own
/// 404s are JSON; a dev server's bare 404 for a route it does not have is not "job not
/// found"): the record is kept. Otherwise no `Content-Type` says nothing: read by status
/// alone.
pub fn reading(status: u16, redirected: bool, content_type: Option<&str>) -> Read {
    if redirected {
        return Read::Decided(Reply::Redirected);
    }
    if !matches!(status, 200..=299 | 404 | 422) {
        return Read::Decided(Reply::Unread);
    }
    match content_type {
        None if status == 404 => Read::Decided(Reply::NotJson),
        None => Read::Decided(Reply::Unread),
        Some(kind) if is_json_type(kind) => Read::Text,
        Some(_) => Read::Decided(Reply::NotJson),
    }
}

/// The task's status in the body of `GET /api/v1/task/<uuid>/status` (`{ "status": … }`):
/// `None` unless it is one of the task framework's statuses.
pub fn read_status(text: &str) -> Option<TaskStatus> {
    json_within_limits(text)?
        .get("status")?
        .as_str()
        .and_then(TaskStatus::from_name)
}

/// The most of a task's `semantic_result_error` the guard keeps (characters).
pub const MAX_TASK_ERROR_CHARS: usize = 1024;

/// Why a failed task failed, in the body of `GET /api/v1/task/<uuid>` (`{ "result": { …,
/// "semantic_result_error": "…" } }`): its first [`MAX_TASK_ERROR_CHARS`] characters, or
/// `None` when there is no such non-empty string.
pub fn read_task_error(text: &str) -> Option<String> {
    let body = json_within_limits(text)?;
    let reason = body.get("result")?.get("semantic_result_error")?.as_str()?;
    let reason: String = reason.chars().take(MAX_TASK_ERROR_CHARS).collect();
    (!reason.trim().is_empty()).then_some(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_read_whole_within_its_limit_a_page_cut_and_the_rest_refused() {
        assert_eq!(Limit::Body.take(MAX_BODY_CHARS), Take::Whole);
        assert_eq!(Limit::Body.take(MAX_BODY_CHARS + 1), Take::TooLong);
        assert_eq!(Limit::Result.take(MAX_RESULT_CHARS + 1), Take::TooLong);
        assert_eq!(
            Limit::Page.take(MAX_PAGE_CHARS + 1),
            Take::Start(MAX_PAGE_CHARS)
        );
        assert_eq!(http_status(404.0), Some(404));
        assert_eq!(http_status(404.5), None);
        assert_eq!(http_status(1000.0), None);
        assert_eq!(http_status(-1.0), None);
    }
    use crate::core::quiet::Json;
    use serde_json::{json, Value};

    fn from_json(v: &Value) -> Result<GuardOptions, crate::core::error::GuardError> {
        GuardOptions::read(Json(v))
    }

    #[test]
    fn each_record_is_cancelled_on_its_own_contracts_endpoint() {
        let id = "10a0bd9a-03c8-4737-9345-f4234ba86512";
        let (a, t) = (Contract::AsyncEvent, Contract::Task);
        let default = GuardOptions::default();
        assert_eq!(
            default.cancel_url_for(id, t),
            format!("/api/v1/task/{id}/cancel")
        );
        let task = from_json(&json!({"contract": "task"})).unwrap();
        assert_eq!(
            task.cancel_url_for("job-1", a),
            "/api/v1/async_event/job-1/cancel"
        );
        // `cancelUrl` is the guard's own contract's template.
        let custom = from_json(&json!({"cancelUrl": "/s/async_event/{job_id}/cancel"})).unwrap();
        assert_eq!(custom.cancel_url_for("j", a), "/s/async_event/j/cancel");
        assert_eq!(
            custom.cancel_url_for(id, t),
            format!("/api/v1/task/{id}/cancel")
        );
    }

    #[test]
    fn an_unneeded_body_is_read_to_its_end_unless_it_declares_more_than_an_answer() {
        let most = (3 * MAX_BODY_CHARS).to_string();
        let more = (3 * MAX_BODY_CHARS + 1).to_string();
        // Undeclared (chunked) or short: read, within UNREAD_BODY_MS.
        for declared in [None, Some("0"), Some("120"), Some(most.as_str())] {
            assert!(drains_unread(declared), "{declared:?}");
        }
        // Declared longer than an answer the guard reads: aborted at once.
        assert!(!drains_unread(Some(&more)));
        assert!(!drains_unread(Some("18446744073709551615")));
        // A length that is not a whole number it can read says nothing: read, within the bound.
        for unreadable in ["-1", "12 ", "18446744073709551616", "1e9"] {
            assert!(drains_unread(Some(unreadable)), "{unreadable}");
        }
    }

    #[test]
    fn the_status_url_stands_beside_the_task_cancel_url() {
        let id = "10a0bd9a-03c8-4737-9345-f4234ba86512";
        let status = |options: Value| from_json(&options).unwrap().status_url_for(id);
        assert_eq!(status(json!({})), format!("/api/v1/task/{id}/status"));
        assert_eq!(
            status(json!({"contract": "task"})),
            format!("/api/v1/task/{id}/status")
        );
        assert_eq!(
            status(
                json!({"contract": "task", "cancelUrl": "/superset/api/v1/task/{job_id}/cancel"})
            ),
            format!("/superset/api/v1/task/{id}/status")
        );
        assert_eq!(
            status(json!({"contract": "task", "cancelUrl": "/x?id={job_id}"})),
            format!("/api/v1/task/{id}/status")
        );
        // An async_event guard's own cancelUrl says nothing of tasks.
        assert_eq!(
            status(json!({"cancelUrl": "/superset/{job_id}/cancel"})),
            format!("/api/v1/task/{id}/status")
        );
    }

    /// The task itself stands beside its cancel URL too (read by `follow`'s failed tasks only).
    #[test]
    fn the_task_url_stands_beside_the_task_cancel_url() {
        let id = "10a0bd9a-03c8-4737-9345-f4234ba86512";
        let task = |options: Value| from_json(&options).unwrap().task_url_for(id);
        assert_eq!(task(json!({})), format!("/api/v1/task/{id}"));
        assert_eq!(
            task(json!({"contract": "task", "cancelUrl": "/superset/api/v1/task/{job_id}/cancel"})),
            format!("/superset/api/v1/task/{id}")
        );
        assert_eq!(
            task(json!({"contract": "task", "cancelUrl": "/x?id={job_id}"})),
            format!("/api/v1/task/{id}")
        );
    }

    #[test]
    fn the_stream_urls_stand_beside_the_cancel_urls() {
        let o = |options: Value| from_json(&options).unwrap();
        let defaults = o(json!({}));
        assert_eq!(defaults.events_url(None), "/api/v1/async_event/");
        assert_eq!(
            defaults.events_url(Some("1607477697866-0")),
            "/api/v1/async_event/?last_id=1607477697866-0"
        );
        assert_eq!(defaults.changes_url(None), "/api/v1/task/status_changes");
        assert_eq!(
            defaults.changes_url(Some("2026-09-01T10:00:00+02:00")),
            "/api/v1/task/status_changes?cursor=2026-09-01T10%3A00%3A00%2B02%3A00"
        );
        let prefixed = o(
            json!({"cancelUrl": "https://bi.example/superset/api/v1/async_event/{job_id}/cancel"}),
        );
        assert_eq!(
            prefixed.events_url(Some("1-0")),
            "https://bi.example/superset/api/v1/async_event/?last_id=1-0"
        );
        let tasks = o(json!({"contract": "task", "cancelUrl": "/s/api/v1/task/{job_id}/cancel"}));
        assert_eq!(tasks.changes_url(None), "/s/api/v1/task/status_changes");
        // Templates of another shape poll Superset's own endpoints.
        for template in [
            "/x?id={job_id}",
            "/cancel/{job_id}",
            "/a{job_id}/cancel",
            "/{job_id}/{job_id}/cancel",
        ] {
            let odd = o(json!({"contract": "task", "cancelUrl": template}));
            assert_eq!(
                odd.changes_url(None),
                "/api/v1/task/status_changes",
                "{template}"
            );
            let odd = o(json!({"cancelUrl": template}));
            assert_eq!(odd.events_url(None), "/api/v1/async_event/", "{template}");
        }
    }

    #[test]
    fn a_failed_tasks_reason_is_read_bounded() {
        let read = |v: serde_json::Value| read_task_error(&v.to_string());
        let body = |e: serde_json::Value| serde_json::json!({"result": {"uuid": "u", "status": "failure", "semantic_result_error": e}});
        assert_eq!(
            read(body("Column \"x\" does not exist".into())).as_deref(),
            Some("Column \"x\" does not exist")
        );
        let long = "é".repeat(5000);
        let kept = read(body(long.into())).unwrap();
        assert_eq!(kept.chars().count(), MAX_TASK_ERROR_CHARS);
        for none in [
            body(serde_json::Value::Null),
            body(5.into()),
            body("  ".into()),
            serde_json::json!({"semantic_result_error": "top level is not Superset's shape"}),
            serde_json::json!({"result": null}),
        ] {
            assert_eq!(read(none.clone()), None, "{none}");
        }
        assert_eq!(read_task_error("<html>"), None);
    }

    #[test]
    fn a_status_answer_names_a_task_status_or_nothing() {
        assert_eq!(
            read_status(r#"{"status": "in_progress"}"#),
            Some(TaskStatus::InProgress)
        );
        assert_eq!(
            read_status(r#"{"status": "success", "x": [1]}"#),
            Some(TaskStatus::Success)
        );
        for nothing in [
            r#"{"status": "paused"}"#,
            r#"{"status": "done"}"#,
            r#"{"status": 3}"#,
            r#"{"result": {"status": "success"}}"#,
            "<html>",
            "",
        ] {
            assert_eq!(read_status(nothing), None, "{nothing}");
        }
        let deep = format!(
            r#"{{"status": "success", "x": {}{}}}"#,
            "[".repeat(65),
            "]".repeat(65)
        );
        assert_eq!(read_status(&deep), None);
    }
}
