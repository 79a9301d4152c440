//! What a record does: a new job's or task's, its status and what each update changes, the
//! rules of its size, and reading it back from storage. The record itself ([`JobRecord`], its
//! [`RecordKind`]) is declared beside the `v1` format [`job_models!`](super::model) makes of
//! it.

use serde_json::Value;

use super::error::GuardError;
use super::ids::{ChannelId, TabId, TaskId, UserId};
use super::model::{json_len, JobMetadata, JobRecord, RecordKind, MAX_RECORD_BYTES};
use super::statuses::{JobStatus, Status, TaskStatus};

impl JobRecord {
    pub fn new(meta: JobMetadata, created_at: u64, updated_at: u64) -> Self {
        let (job_id, user_id, channel_id, status, details) = meta.into_parts();
        Self {
            job_id,
            user_id,
            created_at,
            updated_at,
            guest_key: None,
            kind: RecordKind::Job {
                channel_id,
                status,
                details,
            },
        }
    }

    /// A new, `pending` record of the task `task_id` for `user_id`.
    pub fn task(task_id: TaskId, user_id: Option<UserId>, tab_id: Option<TabId>, now: u64) -> Self {
        Self {
            job_id: task_id.into(),
            user_id,
            created_at: now,
            updated_at: now,
            guest_key: None,
            kind: RecordKind::Task {
                status: TaskStatus::Pending,
                tab_ids: tab_id.into_iter().collect(),
                errors: Vec::new(),
            },
        }
    }

    /// Whether this is a task of the task framework (rather than an async_event job).
    pub fn is_task(&self) -> bool {
        matches!(self.kind, RecordKind::Task { .. })
    }

    /// An async_event job's channel; `None` for a task.
    pub fn channel_id(&self) -> Option<&ChannelId> {
        match &self.kind {
            RecordKind::Job { channel_id, .. } => Some(channel_id),
            RecordKind::Task { .. } => None,
        }
    }

    pub fn status(&self) -> Status {
        match &self.kind {
            RecordKind::Job { status, .. } => Status::Job(*status),
            RecordKind::Task { status, .. } => Status::Task(*status),
        }
    }

    pub fn is_terminal(&self) -> bool {
        self.status().is_terminal()
    }

    /// A task's tab ids; none for a job.
    pub fn tab_ids(&self) -> &[TabId] {
        match &self.kind {
            RecordKind::Task { tab_ids, .. } => tab_ids,
            RecordKind::Job { .. } => &[],
        }
    }

    /// A task's new status, unless the task has ended or already has it. Whether it changed
    /// (a job's record never does).
    pub fn set_task_status(&mut self, new: TaskStatus) -> bool {
        match &mut self.kind {
            RecordKind::Task { status, .. } if !status.is_terminal() && *status != new => {
                *status = new;
                true
            }
            _ => false,
        }
    }

    /// A job's event: its status and details (errors, result URL), unless the job has ended.
    /// Whether it applied (a task's record never takes a job's event).
    pub fn apply_event(&mut self, event: JobMetadata) -> bool {
        match &mut self.kind {
            RecordKind::Job {
                status, details, ..
            } if !status.is_terminal() => {
                (_, _, _, *status, *details) = event.into_parts();
                true
            }
            _ => false,
        }
    }

    /// A job's errors, or why a task failed where that was read back.
    pub fn errors(&self) -> &[Value] {
        match &self.kind {
            RecordKind::Job { details, .. } => &details.errors,
            RecordKind::Task { errors, .. } => errors,
        }
    }

    /// Whether reading this record's JSON text back gives this very record: not when its
    /// `errors` hold a number with a fraction or an exponent, which serde_json reads back to a
    /// float within one unit in the last place of the one written, not always to it.
    pub fn reads_back_exactly(&self) -> bool {
        fn exact(v: &Value) -> bool {
            match v {
                Value::Number(n) => !n.is_f64(),
                Value::Array(items) => items.iter().all(exact),
                Value::Object(entries) => entries.values().all(exact),
                _ => true,
            }
        }
        self.errors().iter().all(exact)
    }

    /// A failed task's reason, as Superset's `semantic_result_error` gave it: its `errors`
    /// become `[{ "message": reason }]`. Whether it changed (only a task that failed takes one).
    pub fn set_task_error(&mut self, reason: &str) -> bool {
        match &mut self.kind {
            RecordKind::Task { status, errors, .. } if *status == TaskStatus::Failure => {
                let new = vec![serde_json::json!({ "message": reason })];
                let changed = *errors != new;
                *errors = new;
                changed
            }
            _ => false,
        }
    }

    /// A job's result URL (`query()` reads a job's result there).
    pub fn result_url(&self) -> Option<&str> {
        match &self.kind {
            RecordKind::Job { details, .. } => details.result_url.as_deref(),
            RecordKind::Task { .. } => None,
        }
    }

    /// Leaves the terminal status a successful cancel leaves: `cancelled` for a job, `aborted`
    /// for a task.
    pub fn cancel(&mut self) {
        match &mut self.kind {
            RecordKind::Job { status, .. } => *status = JobStatus::Cancelled,
            RecordKind::Task { status, .. } => *status = TaskStatus::Aborted,
        }
    }

    /// Reads a record from its stored text as the store does; anything that is not a
    /// complete, valid record whose JSON fits in [`MAX_RECORD_BYTES`] is `None`.
    pub fn from_stored(text: &str) -> Option<Self> {
        super::quiet::from_json::<Self>(text)
            .ok()
            .filter(Self::fits)
    }

    /// The stored text (what gloo-storage writes for it; for the tests, which compare it).
    #[cfg(any(test, feature = "test-doubles"))]
    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// How many bytes the record's JSON takes, counted without building it.
    pub fn stored_len(&self) -> usize {
        json_len(self)
    }

    /// Whether the record's stored text (its JSON, as gloo-storage writes it) fits in
    /// [`MAX_RECORD_BYTES`]: measured on that text, counted as it is written, so every field
    /// counts, whatever fields the record gains.
    pub fn fits(&self) -> bool {
        self.stored_len() <= MAX_RECORD_BYTES
    }

    /// [`fits`](Self::fits) for a record read from a stored text of at most `text_len` UTF-8
    /// bytes, without writing the record again when that text is short enough: written again,
    /// a stored text grows only where its numbers are written shorter than serde_json writes
    /// them (`1e15` is `1000000000000000.0`: 4 bytes become at most 18) and by the fields it
    /// left out that are written with their defaults (`"errors":[],"result_url":null`, under
    /// 64 bytes); escapes (`\u00e9`), whitespace and unknown fields only shrink it.
    pub fn fits_stored(&self, text_len: usize) -> bool {
        const GROWTH: usize = 5;
        const DEFAULTS: usize = 64;
        text_len.saturating_mul(GROWTH).saturating_add(DEFAULTS) <= MAX_RECORD_BYTES || self.fits()
    }

    /// Refuses a record whose JSON would not fit (`invalid_job`).
    pub fn check_fits(&self) -> Result<(), GuardError> {
        let len = self.stored_len();
        if len > MAX_RECORD_BYTES {
            return Err(GuardError::InvalidJob(format!(
                "the job record would take {len} bytes, more than the {MAX_RECORD_BYTES} allowed (is `errors` huge?)"
            )));
        }
        Ok(())
    }

    /// Orders records oldest first, ties by job id; with `finished_first`, terminal records
    /// before the others (the order of eviction). Job ids are unique in a store, so the order
    /// is total and an unstable sort gives the same order as a stable one, with less code.
    /// (One sort for every caller: each sort closure is a copy of the sort in the module.)
    pub fn sort(records: &mut [JobRecord], finished_first: bool) {
        records.sort_unstable_by(|a, b| {
            let rank = |r: &JobRecord| (finished_first && !r.is_terminal(), r.created_at);
            (rank(a), &a.job_id).cmp(&(rank(b), &b.job_id))
        });
    }

    /// Keeps only as many `errors` (from the first) as fit: for server events, whose status
    /// must not be lost to an oversized error list. The first error that does not fit whole is
    /// kept shortened where it can be (`shortened`): its `message`'s start, so that a long
    /// database error still says what went wrong.
    pub fn trim_to_fit(&mut self) -> Result<(), GuardError> {
        if self.fits() {
            return Ok(());
        }
        let RecordKind::Job { details, .. } = &mut self.kind else {
            return self.check_fits();
        };
        let all = std::mem::take(&mut details.errors);
        let mut budget = MAX_RECORD_BYTES.saturating_sub(self.stored_len());
        let mut kept = Vec::new();
        for error in all {
            let len = json_len(&error) + 1;
            if len > budget {
                kept.extend(shortened(&error, budget.saturating_sub(1)));
                break;
            }
            budget -= len;
            kept.push(error);
        }
        if let RecordKind::Job { details, .. } = &mut self.kind {
            details.errors = kept;
        }
        self.check_fits()
    }
}

/// Superset's error (`{ message, error_type?, level?, … }`) in at most `budget` bytes of JSON:
/// its `error_type` and `level` when they are strings, and its `message` cut short, ending in
/// `…`; `None` for an error without a string `message`, or when not even a short one fits.
fn shortened(error: &Value, budget: usize) -> Option<Value> {
    const SHORTEST: usize = 64;
    let message = error.get("message")?.as_str()?;
    let mut short = serde_json::Map::new();
    for key in ["error_type", "level"] {
        if let Some(v) = error.get(key).filter(|v| v.is_string()) {
            short.insert(key.to_owned(), v.clone());
        }
    }
    let total = message.chars().count();
    let with = |chars: usize| {
        let mut short = short.clone();
        let cut = (chars < total).then_some('…');
        let text: String = message.chars().take(chars).chain(cut).collect();
        short.insert("message".to_owned(), Value::String(text));
        Value::Object(short)
    };
    // The longest start that fits: found by halving (a few dozen sizes of a 16 KiB record, on
    // the rare event too long to keep).
    let (mut fits, mut over) = (SHORTEST.min(total), total);
    if json_len(&with(fits)) > budget {
        return None;
    }
    if json_len(&with(total)) <= budget {
        return Some(with(total));
    }
    while over > fits + 1 {
        let mid = fits + (over - fits) / 2;
        if json_len(&with(mid)) <= budget {
            fits = mid;
        } else {
            over = mid;
        }
    }
    Some(with(fits))
}
