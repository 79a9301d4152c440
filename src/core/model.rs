//! Superset's async-job metadata, the records the guard keeps of it, and their validation.
//!
//! Metadata is exactly the body of Superset's `202` answer (`build_job_metadata`):
//! `channel_id`, `job_id`, `user_id`, `status`, `errors`, `result_url`. Events on the async
//! stream carry the same fields plus an `id`, so both are read as [`JobMetadata`]. Both are
//! deserialised into a wire struct first and validated by `TryFrom`, so a value of these
//! types is always valid.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::error::GuardError;
use super::ids::{
    exact_whole, is_reserved_id, quote, ChannelId, GuestKey, JobId, MaybeUser, TabId, TaskId,
    UserId, MAX_ID_LEN,
};
pub use super::statuses::{JobStatus, Status, StatusName, TaskStatus};
use super::wire::{self, AnyJson, Field, MAX_DEPTH};

/// The most tab ids a task record keeps (the tabs of one browser watching one task).
pub const MAX_TAB_IDS: usize = 16;

/// Largest stored record (its JSON): anything bigger is treated as forged or corrupt.
pub const MAX_RECORD_BYTES: usize = 16 * 1024;

/// Declares every shape that holds an async_event job's further fields (Superset's metadata
/// after its ids and status, kept as it came) from one list of them, so that a field is added
/// to the record in one place: [`JobMetadata`] (what the app passes; its TypeScript declaration
/// gives each field as optional, of the type after `given`), `MetadataWire` (the same as it
/// arrives: each a [`Field`] of the type in parentheses, checked by the function before them,
/// whose message names the field), [`JobDetails`] (what a job's record keeps, which each event
/// replaces), `StoredRecord` (the `v1` format: the fields after `status`, in the list's order,
/// of the TypeScript type after `ts`) and `RecordWire` (a stored record as read: each field
/// optional, of the type in parentheses, checked as the app's metadata is).
macro_rules! job_models {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident: $ty:ty = $check:ident($wire:ty), ts $ts:literal, given $given:literal;
    )+) => {
        /// Job metadata exactly as Superset's chart-data call returns it with `202 Accepted`
        /// (`build_job_metadata`): snake_case, `user_id` a string (or number), `null` for
        /// guests.
        // Read through `MetadataWire` and validated, with `user_id` normalised to a string, or
        // none for guest and anonymous users. (The `///` lines are the TypeScript declaration's
        // doc too.)
        #[derive(Clone, Debug, PartialEq, Deserialize)]
        #[serde(try_from = "MetadataWire")]
        #[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
        pub struct JobMetadata {
            pub channel_id: ChannelId,
            pub job_id: JobId,
            #[cfg_attr(target_arch = "wasm32", tsify(type = "string | number | null"))]
            pub user_id: Option<UserId>,
            pub status: JobStatus,
            $(
                $(#[doc = $doc])*
                #[cfg_attr(target_arch = "wasm32", tsify(optional, type = $given))]
                pub $name: $ty,
            )+
        }

        /// What a job's record keeps of Superset's metadata beyond its ids and status: each
        /// event replaces it whole. A task has none (the defaults).
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct JobDetails {
            $(
                $(#[doc = $doc])*
                pub $name: $ty,
            )+
        }

        impl JobMetadata {
            /// The metadata as a record keeps it: its channel, status and details.
            pub(super) fn into_parts(self) -> (JobId, Option<UserId>, ChannelId, JobStatus, JobDetails) {
                let details = JobDetails { $($name: self.$name,)+ };
                (self.job_id, self.user_id, self.channel_id, self.status, details)
            }
        }

        /// Metadata as it arrives, before validation. Unknown fields, such as an event's `id`,
        /// are ignored.
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct MetadataWire {
            channel_id: Field<String>,
            job_id: Field<String>,
            user_id: Field<MaybeUser>,
            status: Field<StatusName<JobStatus>>,
            $($name: Field<$wire>,)+
        }

        impl TryFrom<MetadataWire> for JobMetadata {
            type Error = String;

            fn try_from(w: MetadataWire) -> Result<Self, String> {
                let (channel_id, job_id, user_id, status) =
                    check_head(w.channel_id, w.job_id, w.user_id, w.status)?;
                Ok(Self {
                    channel_id,
                    job_id,
                    user_id,
                    status,
                    $($name: $check(w.$name, stringify!($name))?,)+
                })
            }
        }

        /// A record as it is stored and as JS sees it: Superset's snake_case field names, in
        /// this order (the `v1` format). A task has `channel_id: null` and its details'
        /// defaults (no errors, no result URL); a guest's record carries `guest_key`; a task
        /// its `tab_ids`. Both are left out when empty, so a user's job record is written
        /// exactly as before tasks and guests had them.
        ///
        /// Its TypeScript declaration, `JobRecordFields`, is what both kinds have;
        /// `AsyncJobRecord` and `TaskRecord` narrow it by kind.
        #[derive(Serialize)]
        #[cfg_attr(
            target_arch = "wasm32",
            derive(tsify::Tsify),
            tsify(rename = "JobRecordFields", missing_as_null)
        )]
        struct StoredRecord<'a> {
            /// The job's channel; `null` for a task.
            channel_id: Option<&'a ChannelId>,
            /// The job's id, or the task's uuid.
            job_id: &'a JobId,
            /// The creator's user id as a string; `null` for guest and anonymous sessions.
            user_id: &'a Option<UserId>,
            #[cfg_attr(target_arch = "wasm32", tsify(type = "JobStatus | TaskStatus"))]
            status: &'static str,
            $(
                $(#[doc = $doc])*
                #[cfg_attr(target_arch = "wasm32", tsify(type = $ts))]
                $name: &'a $ty,
            )+
            /// When the job was first recorded, in ms since the epoch.
            created_at: u64,
            /// When the record last changed, in ms since the epoch.
            updated_at: u64,
            /// A guest's record: the guest key the session signed in with.
            #[serde(skip_serializing_if = "Option::is_none")]
            guest_key: Option<&'a GuestKey>,
            /// A task's: the `tab_id`s of this browser's tabs that recorded it.
            #[serde(skip_serializing_if = "is_empty")]
            #[cfg_attr(target_arch = "wasm32", tsify(optional))]
            tab_ids: &'a [TabId],
        }

        impl Serialize for JobRecord {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let task_details;
                let (channel_id, details, tab_ids): (_, _, &[TabId]) = match &self.kind {
                    RecordKind::Job {
                        channel_id,
                        details,
                        ..
                    } => (Some(channel_id), details, &[]),
                    RecordKind::Task {
                        tab_ids, errors, ..
                    } => {
                        task_details = JobDetails {
                            errors: errors.clone(),
                            ..JobDetails::default()
                        };
                        (None, &task_details, tab_ids)
                    }
                };
                StoredRecord {
                    channel_id,
                    job_id: &self.job_id,
                    user_id: &self.user_id,
                    status: self.status().as_str(),
                    $($name: &details.$name,)+
                    created_at: self.created_at,
                    updated_at: self.updated_at,
                    guest_key: self.guest_key.as_ref(),
                    tab_ids,
                }
                .serialize(serializer)
            }
        }

        /// A stored record as read, before validation.
        #[derive(Deserialize)]
        pub(super) struct RecordWire {
            // Required, though null for a task.
            #[serde(deserialize_with = "Option::deserialize")]
            channel_id: Option<String>,
            job_id: String,
            user_id: MaybeUser,
            status: String,
            $(
                #[serde(default)]
                $name: $wire,
            )+
            created_at: f64,
            updated_at: f64,
            #[serde(default)]
            guest_key: Option<GuestKey>,
            #[serde(default)]
            tab_ids: Vec<TabId>,
        }

        impl RecordWire {
            /// A job record's metadata, to be checked as the app's is.
            fn job_metadata(self, channel_id: String, status: JobStatus) -> MetadataWire {
                MetadataWire {
                    channel_id: Field::Valid(channel_id),
                    job_id: Field::Valid(self.job_id),
                    user_id: Field::Valid(self.user_id),
                    status: Field::Valid(StatusName(Some(status))),
                    $($name: Field::Valid(self.$name),)+
                }
            }
        }
    };
}

job_models! {
    /// Superset's `errors` of the job, as they came; empty for a task.
    errors: Vec<Value> = json_list(Option<AnyJson>),
        ts "AsyncJobError[]", given "AsyncJobError[] | null";
    /// Where the job's result is; `null` for a task.
    result_url: Option<String> = string_or_null(Option<String>),
        ts "string | null", given "string | null";
}

/// The checks of what every job's metadata has: its ids, owner and status, in this order.
fn check_head(
    channel_id: Field<String>,
    job_id: Field<String>,
    user_id: Field<MaybeUser>,
    status: Field<StatusName<JobStatus>>,
) -> Result<(ChannelId, JobId, Option<UserId>, JobStatus), String> {
    let job_id = match job_id.valid() {
        Some(id) if is_reserved_id(&id) => {
            return Err(format!("`job_id` \"{}\" is a reserved name", quote(&id)))
        }
        Some(id) => JobId::try_from(id).map_err(|_| id_rule("job_id"))?,
        None => return Err(id_rule("job_id")),
    };
    let channel_id = channel_id
        .valid()
        .and_then(|id| ChannelId::try_from(id).ok())
        .ok_or_else(|| id_rule("channel_id"))?;
    let user_id = match user_id {
        Field::Valid(user) => user.0,
        Field::Missing => {
            return Err(
                "`user_id` is missing (it is null for guest and anonymous users)".to_owned(),
            )
        }
        Field::Invalid => {
            return Err(
                "`user_id` must be a non-empty string without control characters, \
                        a whole number, or null"
                    .to_owned(),
            )
        }
    };
    let status = status.valid().and_then(|s| s.0).ok_or(STATUS_RULE)?;
    Ok((channel_id, job_id, user_id, status))
}

/// A list of any JSON (missing or `null`: empty).
fn json_list(field: Field<Option<AnyJson>>, name: &str) -> Result<Vec<Value>, String> {
    match field.nullable() {
        Ok(None) | Ok(Some(AnyJson(Value::Null))) => Ok(Vec::new()),
        Ok(Some(AnyJson(Value::Array(items)))) => Ok(items),
        _ => Err(format!(
            "`{name}` must be an array (of JSON nested at most {MAX_DEPTH} levels deep)"
        )),
    }
}

/// A string or nothing (missing or `null`).
fn string_or_null(field: Field<Option<String>>, name: &str) -> Result<Option<String>, String> {
    field
        .nullable()
        .map_err(|_| format!("`{name}` must be a string or null"))
}

fn id_rule(name: &str) -> String {
    format!(
        "`{name}` must be a non-empty string of at most {MAX_ID_LEN} characters without control \
         characters or U+FFFD, other than `.` and `..`"
    )
}

const STATUS_RULE: &str = "`status` must be one of pending, running, done, error, cancelled";

const METADATA_EXPECTED: &str = "expected an object with Superset's job metadata fields";

impl JobMetadata {
    /// Reads and validates metadata from any deserializer: a JS value, a `serde_json::Value`,
    /// JSON text. (The reader of events, with a status it does not know refused.)
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        Self::read_event(value)?.ok_or_else(|| GuardError::InvalidJob(STATUS_RULE.to_owned()))
    }

    /// Reads an event of the async stream: like [`read`](Self::read), but an event whose
    /// `status` is a name this guard does not know (a later Superset's) is `None`, to be
    /// skipped, where the rest of it is valid.
    pub fn read_event<'de, D: Deserializer<'de>>(value: D) -> Result<Option<Self>, GuardError> {
        let mut w: MetadataWire =
            wire::read(value, METADATA_EXPECTED).map_err(GuardError::InvalidJob)?;
        let unknown = match &w.status {
            Field::Valid(StatusName(Some(_))) => false,
            Field::Valid(StatusName(None)) => true,
            Field::Missing | Field::Invalid => false,
        };
        if unknown {
            w.status = Field::Valid(StatusName(Some(JobStatus::Pending)));
        }
        let meta = Self::try_from(w).map_err(GuardError::InvalidJob)?;
        Ok((!unknown).then_some(meta))
    }
}

fn is_empty(tabs: &&[TabId]) -> bool {
    tabs.is_empty()
}

impl TryFrom<RecordWire> for JobRecord {
    type Error = String;

    fn try_from(mut w: RecordWire) -> Result<Self, String> {
        // Whole, non-negative milliseconds. Written as `1700000000000` by this crate; a JS
        // writer may write `1700000000000.0` or `1.7e12`, which is the same time.
        let (Some(created_at), Some(updated_at)) =
            (exact_whole(w.created_at), exact_whole(w.updated_at))
        else {
            return Err("`created_at` and `updated_at` are whole milliseconds".to_owned());
        };
        let guest_key = w.guest_key.take();
        let mut record = match w.channel_id.take() {
            Some(channel_id) => {
                let status = JobStatus::from_name(&w.status).ok_or(STATUS_RULE)?;
                let has_tab_ids = !w.tab_ids.is_empty();
                let meta = JobMetadata::try_from(w.job_metadata(channel_id, status))?;
                if has_tab_ids {
                    return Err("`tab_ids` are a task's tab ids".to_owned());
                }
                Self::new(meta, created_at, updated_at)
            }
            None => {
                let rule = "a task record has a lowercase uuid and a task status";
                let id = TaskId::try_from(w.job_id).map_err(|_| rule)?;
                let status = TaskStatus::from_name(&w.status).ok_or(rule)?;
                if w.tab_ids.len() > MAX_TAB_IDS {
                    return Err("`tab_ids` are a task's tab ids".to_owned());
                }
                let errors = match w.errors {
                    Some(AnyJson(Value::Array(errors))) => errors,
                    _ => Vec::new(),
                };
                let mut record = Self::task(id, w.user_id.0, None, created_at);
                record.kind = RecordKind::Task {
                    status,
                    tab_ids: w.tab_ids,
                    errors,
                };
                record.updated_at = updated_at;
                record
            }
        };
        if guest_key.is_some() && record.user_id.is_some() {
            return Err("`guest_key` is a valid id, of a guest's record".to_owned());
        }
        record.guest_key = guest_key;
        Ok(record)
    }
}

/// What the guard keeps of one job or task, a record of either kind: narrow on
/// `channel_id === null` (a task). Who owns it, when it was recorded and last updated (ms since
/// the epoch), a guest's record its `guest_key`.
// In Rust, what depends on the contract is a `RecordKind`, so the compiler, not a null
// channel, says which endpoint, body and answer table apply. Stored (and handed to JS) as
// `StoredRecord`, the `v1` format.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "RecordWire")]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(type = "AsyncJobRecord | TaskRecord")
)]
pub struct JobRecord {
    /// The job's id, or the task's uuid (a [`TaskId`]).
    pub job_id: JobId,
    pub user_id: Option<UserId>,
    pub created_at: u64,
    pub updated_at: u64,
    pub guest_key: Option<GuestKey>,
    pub kind: RecordKind,
}

/// What a record holds by its contract.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordKind {
    /// An async_event job: its channel, status and what else Superset sends about it.
    Job {
        channel_id: ChannelId,
        status: JobStatus,
        details: JobDetails,
    },
    /// A task of the task framework: the tab ids of this browser's tabs that recorded it, and
    /// why it failed, where the guard read that back (`[{ message }]`, Superset's
    /// `semantic_result_error`; empty otherwise).
    Task {
        status: TaskStatus,
        tab_ids: Vec<TabId>,
        errors: Vec<Value>,
    },
}

/// The length of `value`'s JSON, as gloo-storage would write it.
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    // Room for a typical record up front: growing the buffer would copy it.
    let mut json = Vec::with_capacity(1024);
    match serde_json::to_writer(&mut json, value) {
        Ok(()) => json.len(),
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
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
        let wrong_type =
            json!({"channel_id": "c", "job_id": 5, "user_id": "1", "status": "pending"});
        let wrong_value =
            json!({"channel_id": "c", "job_id": "", "user_id": "1", "status": "pending"});
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
        let v = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "error", "errors": big});
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
}
