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
mod tests;
