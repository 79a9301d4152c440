//! Superset's async-job metadata, the records the guard keeps of it, and their validation.
//!
//! Metadata is exactly the body of Superset's `202` answer (`build_job_metadata`):
//! `channel_id`, `job_id`, `user_id`, `status`, `errors`, `result_url`. Events on the async
//! stream carry the same fields plus an `id`, so both are read by [`JobMetadata::from_json`].

use super::text::cat;
use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use super::error::GuardError;
use super::json::{self, Object, ObjectWriter, ToJson, Value};
use super::session::{normalize_user_id, MAX_SAFE_INTEGER};

/// Longest job id or channel id accepted. Superset's are 36-character UUIDs and
/// `guest-` + a hex HMAC; this only keeps absurd values out of storage keys.
pub const MAX_ID_LEN: usize = 256;

/// A job's status, as Superset names it. `cancelled` is the cancel-era terminal status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    Pending,
    Running,
    Done,
    Error,
    Cancelled,
}

impl JobStatus {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(JobStatus::Pending),
            "running" => Some(JobStatus::Running),
            "done" => Some(JobStatus::Done),
            "error" => Some(JobStatus::Error),
            "cancelled" => Some(JobStatus::Cancelled),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Running => "running",
            JobStatus::Done => "done",
            JobStatus::Error => "error",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// `done`, `error` and `cancelled` end a job: the server keeps no cancel record for it.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Done | JobStatus::Error | JobStatus::Cancelled
        )
    }
}

/// Largest stored record: anything bigger in storage is treated as forged or corrupt.
pub const MAX_RECORD_BYTES: usize = 16 * 1024;

/// Names that mean something on every JS object; never a job id.
pub const RESERVED_IDS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Checks an id (job or channel): a non-empty string of at most [`MAX_ID_LEN`] characters with
/// no control characters.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && char_count(id) <= MAX_ID_LEN && !has_control(id)
}

/// Whether `s` has a control character (`char::is_control`: U+0000-U+001F, U+007F-U+009F),
/// found on the bytes: C1 controls are `0xC2 0x80`-`0xC2 0x9F` in UTF-8.
pub fn has_control(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c < 0x20
            || c == 0x7f
            || (c == 0xC2 && b.get(i + 1).is_some_and(|n| (0x80..=0x9F).contains(n)))
    })
}

/// Characters in `s` (what `s.chars().count()` says, without its vectorised counter: every
/// byte but a UTF-8 continuation byte starts a character).
pub fn char_count(s: &str) -> usize {
    s.bytes().filter(|b| b & 0xC0 != 0x80).count()
}

pub fn is_reserved_id(id: &str) -> bool {
    RESERVED_IDS.contains(&id)
}

/// Validated job metadata, with `user_id` normalised to a string or `None` (guest/anonymous).
#[derive(Clone, Debug, PartialEq)]
pub struct JobMetadata {
    pub channel_id: String,
    pub job_id: String,
    pub user_id: Option<String>,
    pub status: JobStatus,
    pub errors: Vec<Value>,
    pub result_url: Option<String>,
}

impl JobMetadata {
    /// Reads and validates metadata (or an event) from a JSON value. Unknown fields, such as an
    /// event's `id`, are ignored.
    pub fn from_json(value: &Value) -> Result<Self, GuardError> {
        let obj = value
            .as_object()
            .ok_or_else(|| invalid("expected an object with Superset's job metadata fields"))?;
        let job_id = id_field(obj, "job_id")?;
        if is_reserved_id(&job_id) {
            return Err(invalid(&cat(&[
                "`job_id` \"",
                &job_id,
                "\" is a reserved name",
            ])));
        }
        let channel_id = id_field(obj, "channel_id")?;
        let user_id = match obj.get("user_id") {
            None => {
                return Err(invalid(
                    "`user_id` is missing (it is null for guest and anonymous users)",
                ))
            }
            Some(v) => normalize_user_id(v).map_err(|m| invalid(&cat(&["`user_id` ", m])))?,
        };
        let status = match obj.get("status") {
            Some(Value::String(s)) => JobStatus::parse(s).ok_or_else(|| {
                invalid("`status` must be one of pending, running, done, error, cancelled")
            })?,
            _ => return Err(invalid("`status` must be a string")),
        };
        let errors = match obj.get("errors") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.clone(),
            Some(_) => return Err(invalid("`errors` must be an array")),
        };
        let result_url = match obj.get("result_url") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(invalid("`result_url` must be a string or null")),
        };
        Ok(Self {
            channel_id,
            job_id,
            user_id,
            status,
            errors,
            result_url,
        })
    }
}

/// What the guard stores for one job: the metadata plus when it was recorded and last updated
/// (milliseconds since the epoch). Written with Superset's snake_case field names.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    pub channel_id: String,
    pub job_id: String,
    pub user_id: Option<String>,
    pub status: JobStatus,
    pub errors: Vec<Value>,
    pub result_url: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
}

impl JobRecord {
    pub fn new(meta: JobMetadata, created_at: u64, updated_at: u64) -> Self {
        Self {
            channel_id: meta.channel_id,
            job_id: meta.job_id,
            user_id: meta.user_id,
            status: meta.status,
            errors: meta.errors,
            result_url: meta.result_url,
            created_at,
            updated_at,
        }
    }

    /// Reads a stored record. Anything that is not a complete, valid record is `None`: the store
    /// treats it as absent and removes it.
    pub fn from_stored(text: &str) -> Option<Self> {
        if text.len() > MAX_RECORD_BYTES {
            return None;
        }
        let value = json::parse(text)?;
        let meta = JobMetadata::from_json(&value).ok()?;
        let created_at = timestamp(value.get("created_at")?)?;
        let updated_at = timestamp(value.get("updated_at")?)?;
        Some(Self::new(meta, created_at, updated_at))
    }

    /// The JSON text kept in storage; a record over [`MAX_RECORD_BYTES`] is refused.
    pub fn to_stored(&self) -> Result<String, GuardError> {
        let text = self.to_json();
        if text.len() > MAX_RECORD_BYTES {
            return Err(GuardError::InvalidJob(cat(&[
                "the job record would take ",
                &json::u64_text(text.len() as u64),
                " bytes, more than the ",
                &json::u64_text(MAX_RECORD_BYTES as u64),
                " allowed (is `errors` huge?)",
            ])));
        }
        Ok(text)
    }

    /// The stored text, keeping only as many `errors` (from the first) as fit: for server
    /// events, whose status must not be lost to an oversized error list. One pass.
    pub fn to_stored_fitting(&mut self) -> Result<String, GuardError> {
        if let Ok(text) = self.to_stored() {
            return Ok(text);
        }
        let errors = ::core::mem::take(&mut self.errors);
        let base = self.to_stored()?.len();
        let mut budget = MAX_RECORD_BYTES.saturating_sub(base);
        for error in errors {
            let len = error.to_json().len() + 1;
            if len > budget {
                break;
            }
            budget -= len;
            self.errors.push(error);
        }
        self.to_stored()
    }
}

impl ToJson for JobStatus {
    fn write_json(&self, out: &mut String) {
        self.as_str().write_json(out);
    }
}

impl ToJson for JobRecord {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("channel_id", &self.channel_id)
            .field("job_id", &self.job_id)
            .field("user_id", &self.user_id)
            .field("status", &self.status)
            .field("errors", &self.errors)
            .field("result_url", &self.result_url)
            .field("created_at", &self.created_at)
            .field("updated_at", &self.updated_at)
            .end();
    }
}

/// A stored timestamp: whole, non-negative milliseconds. Written as `1700000000000` by this
/// crate; a JS writer may write `1700000000000.0` or `1.7e12`, which is the same time.
fn timestamp(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    if n.is_negative() {
        return None;
    }
    let ms = n.exact_magnitude(0)?;
    (n.is_integer_text() || ms <= MAX_SAFE_INTEGER).then_some(ms)
}

fn invalid(message: &str) -> GuardError {
    GuardError::InvalidJob(message.to_owned())
}

fn id_field(obj: &Object, name: &str) -> Result<String, GuardError> {
    match obj.get(name) {
        Some(Value::String(s)) if is_valid_id(s) => Ok(s.clone()),
        _ => Err(invalid(&cat(&[
            "`",
            name,
            "` must be a non-empty string of at most ",
            &json::u64_text(MAX_ID_LEN as u64),
            " characters without control characters",
        ]))),
    }
}

#[cfg(test)]
mod tests {
    use crate::test_prelude::*;

    use super::*;
    use crate::core::json::testing::json;

    fn superset_202() -> Value {
        // The exact body from the contract file (build_job_metadata).
        json!({"channel_id": "1095c1c9-b6b1-444d-aa83-8e323b32831f",
               "job_id": "10a0bd9a-03c8-4737-9345-f4234ba86512",
               "user_id": "1",
               "status": "pending",
               "errors": [],
               "result_url": null})
    }

    #[test]
    fn control_characters_are_found_on_the_bytes_as_char_is_control_says() {
        for c in (0..0x3000u32)
            .chain(0xFFF0..0x10000)
            .chain([0x1F600, 0x10FFFF])
        {
            let Some(c) = char::from_u32(c) else { continue };
            let s = format!("a{c}b");
            assert_eq!(has_control(&s), c.is_control(), "U+{:04X}", c as u32);
            assert_eq!(char_count(&s), s.chars().count());
        }
    }

    #[test]
    fn reads_supersets_202_body() {
        let meta = JobMetadata::from_json(&superset_202()).unwrap();
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
        let meta = JobMetadata::from_json(&ev).unwrap();
        assert_eq!(meta.status, JobStatus::Error);
        assert_eq!(meta.errors.len(), 1);
    }

    #[test]
    fn numeric_and_null_user_ids_are_normalised() {
        let with_user = |user: &str| {
            json::parse(&superset_202().to_json().replace(r#""user_id":"1""#, user)).unwrap()
        };
        assert_eq!(
            JobMetadata::from_json(&with_user(r#""user_id":7"#))
                .unwrap()
                .user_id
                .as_deref(),
            Some("7")
        );
        assert_eq!(
            JobMetadata::from_json(&with_user(r#""user_id":null"#))
                .unwrap()
                .user_id,
            None
        );
    }

    #[test]
    fn errors_and_result_url_may_be_absent() {
        let v = json!({"channel_id": "c", "job_id": "j", "user_id": null, "status": "running"});
        let meta = JobMetadata::from_json(&v).unwrap();
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
            let err = JobMetadata::from_json(&value).unwrap_err();
            assert_eq!(err.code(), "invalid_job", "{value}");
            assert!(err.to_string().contains(field), "{value}: {err}");
        }
        let long = "x".repeat(MAX_ID_LEN + 1);
        let v = json!({"channel_id": "c", "job_id": long, "user_id": "1", "status": "pending"});
        assert!(JobMetadata::from_json(&v).is_err());
    }

    #[test]
    fn terminal_statuses() {
        let terminal: Vec<_> = ["pending", "running", "done", "error", "cancelled"]
            .iter()
            .map(|s| JobStatus::parse(s).unwrap())
            .filter(|s| s.is_terminal())
            .map(JobStatus::as_str)
            .collect();
        assert_eq!(terminal, ["done", "error", "cancelled"]);
    }

    #[test]
    fn records_round_trip_through_storage_text() {
        let meta = JobMetadata::from_json(&superset_202()).unwrap();
        let rec = JobRecord::new(meta, 10, 20);
        let text = rec.to_stored().unwrap();
        assert!(text.contains("\"job_id\":\"10a0bd9a-03c8-4737-9345-f4234ba86512\""));
        assert!(text.contains("\"created_at\":10"));
        assert_eq!(JobRecord::from_stored(&text), Some(rec));
    }

    #[test]
    fn reserved_and_oversized_records_are_refused() {
        for id in RESERVED_IDS {
            let v = json!({"channel_id": "c", "job_id": id, "user_id": "1", "status": "pending"});
            assert!(JobMetadata::from_json(&v).is_err(), "{id}");
        }
        let big = vec![serde_json::json!({"message": "x".repeat(1000)}); 20];
        let v = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error", "errors": big});
        let mut rec = JobRecord::new(JobMetadata::from_json(&v).unwrap(), 1, 1);
        assert_eq!(rec.to_stored().unwrap_err().code(), "invalid_job");
        let text = rec.to_stored_fitting().unwrap();
        assert!(text.len() <= MAX_RECORD_BYTES);
        assert!(!rec.errors.is_empty() && rec.errors.len() < 20);
        let padded = format!("{text}{}", " ".repeat(MAX_RECORD_BYTES));
        assert_eq!(
            JobRecord::from_stored(&padded),
            None,
            "oversized in storage"
        );
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
        ] {
            assert_eq!(JobRecord::from_stored(text), None, "{text}");
        }
    }
}
