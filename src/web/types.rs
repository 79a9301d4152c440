//! The TypeScript shapes that have no Rust type of their own: what an export takes that a core
//! reader reads leniently (its wire struct would make every field optional), and the
//! narrowings of a derived type by kind (`AsyncJobRecord`, `TaskRecord`, `CancelOutcome`).
//! Each is a declaration only (tsify, `#[tsify(type = …)]`): the exports take and return them
//! as typed JS values (`boundary::Js<T>`), and types-agree checks every one against what the
//! module does. The shapes of the core's own types come from those types.
#![allow(dead_code)] // declarations for TypeScript only

use crate::core::ids::TaskId;
use serde::Serialize;

// From core/cancel_flow.rs:
/// The result of `cancel`: it never rejects. Narrow on `outcome`; a `refused` one may say why.
#[derive(tsify::Tsify)]
#[tsify(
    rename = "CancelOutcome",
    type = "CancelOutcomeFields & ({ outcome: \"refused\" } | { outcome: Exclude<CancelOutcomeKind, \"refused\">; reason?: undefined })"
)]
pub struct CancelOutcomeTs;

// From core/model.rs:
/// One entry of a job's `errors`, as Superset sends it (`{ message: "..." }`). The guard keeps
/// each entry as the JSON value it came as (an object's keys in sorted order, a whole number
/// beyond JS's safe integers as the float JS holds for it).
#[derive(tsify::Tsify)]
#[tsify(type = "{ message?: string; [key: string]: unknown }")]
pub struct AsyncJobError;

// From core/model.rs:
/// An event from `GET /api/v1/async_event/` (or the websocket): job metadata plus its stream id.
/// A status this guard does not know (one a later Superset adds) is skipped, not refused
/// (`JobMetadata::read_event`).
#[derive(tsify::Tsify)]
#[tsify(
    type = "Omit<JobMetadata, \"status\"> & { status: JobStatus | (string & {}); id?: string }"
)]
pub struct AsyncEvent;

// From core/record.rs:
/// A record of an async_event job (`recordJob` returns one): `JobRecordFields` as a job has
/// them.
#[derive(tsify::Tsify)]
#[tsify(
    type = "JobRecordFields & { channel_id: ChannelId; status: JobStatus; tab_ids?: undefined }"
)]
pub struct AsyncJobRecord;

// From core/record.rs:
/// A record of a task (task framework): `JobRecordFields` as a task has them: no channel, the
/// task's uuid as `job_id`, no result URL, `errors` empty or (a failed task whose reason the
/// guard read back) `[{ message }]`, and the `tab_id`s of this browser's tabs that recorded it.
#[derive(tsify::Tsify)]
#[tsify(
    type = "JobRecordFields & { channel_id: null; job_id: TaskId; status: TaskStatus; result_url: null }"
)]
pub struct TaskRecord;

// From core/session.rs:
/// Who signed in: what `login` takes. `userId` is `null` for guests (embedded dashboards) and
/// anonymous users.
// A type for TypeScript only: `LoginWire` reads it, telling a missing field from one of the
// wrong type.
#[derive(tsify::Tsify)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct SessionInput {
    #[tsify(type = "string | number | null")]
    user_id: (),
    /// The async channel, when the app knows it (guests: `"guest-..."`). Learnt from job
    /// metadata otherwise.
    #[tsify(optional, type = "ChannelId | null")]
    channel_id: (),
    /// Guests only (`userId: null`): a key the app derives from its guest token, so that one
    /// guest's records are never another's (Superset 6.1.0 gives every guest one channel).
    #[tsify(optional, type = "GuestKey | null")]
    guest_key: (),
}

// From core/task.rs:
/// A task framework `202` body: chart data's `{ task_ids, cursor, tab_id? }` or SQL Lab's
/// `{ async_job: { task_id, cursor, tab_id? } }`.
// A type for TypeScript only: `SubmissionWire` reads it.
#[derive(tsify::Tsify)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum TaskSubmission {
    ChartData {
        task_ids: Vec<TaskId>,
        #[tsify(optional)]
        cursor: Option<String>,
        #[tsify(optional, type = "TabId | null")]
        tab_id: (),
    },
    SqlLab {
        #[tsify(type = "{ task_id: TaskId; cursor?: string; tab_id?: TabId | null }")]
        async_job: (),
    },
}

// From core/task.rs:
/// The websocket's `task.status` payload. A status this guard does not know (one a later
/// Superset adds) is skipped, not refused.
// A type for TypeScript only: `StatusWire` reads it.
#[derive(tsify::Tsify)]
#[allow(dead_code)]
pub struct TaskStatusMessage {
    task_id: TaskId,
    #[tsify(type = "TaskStatus | (string & {})")]
    status: (),
}

// From core/task.rs:
/// The answer of `GET /api/v1/task/status_changes`. An entry whose status this guard does not
/// know is skipped; the others apply. (A type for TypeScript only: `StatusChange::read_all`
/// reads it.)
#[derive(tsify::Tsify)]
#[allow(dead_code)]
pub struct TaskStatusChanges {
    #[tsify(
        type = "Record<string, { status: TaskStatus | (string & {}); progress?: number | null }>"
    )]
    statuses: (),
    #[tsify(optional, type = "string | null")]
    cursor: (),
}

// From core/waiters.rs:
/// What `waitFor` awaits: a `202` body (a task-framework submission, or an async_event job's
/// metadata), recorded first as `recordTasks` or `recordJob` would; or the id (a task's uuid) of
/// a job the session has recorded, or up to 100 of them.
#[derive(tsify::Tsify)]
#[tsify(type = "TaskSubmission | JobMetadata | string | readonly string[]")]
pub struct WaitInput;

// From core/waiters.rs:
/// `waitFor`'s options: `signal` (its abort stops waiting and cancels what no other waiter
/// awaits), `staleTimeoutMs` (default 600000), `cancelOnClose` (default the guard's option:
/// whether the page's end cancels this waiter's jobs).
#[derive(tsify::Tsify)]
#[tsify(type = "{ signal?: AbortSignal; staleTimeoutMs?: number; cancelOnClose?: boolean }")]
pub struct WaitOptions;

// From core/query.rs:
/// What `query()` sends: the body the app would POST to `/api/v1/chart/data` (a query context:
/// `datasource`, `queries`, `form_data`, …), to which the guard adds `client_id` (and `tab_id`
/// on the task contract).
#[derive(tsify::Tsify)]
#[tsify(type = "Record<string, unknown>")]
pub struct QueryBody;

// From core/query.rs:
/// `query()`'s options: `signal` (its abort stops the query on the server), `staleTimeoutMs`
/// (default 600000: no answer or progress for that long stops it), `cancelOnClose` (default the
/// guard's: whether the page's end stops it), `url` (default `/api/v1/chart/data`: a path of
/// this site).
#[derive(tsify::Tsify)]
#[tsify(
    type = "{ signal?: AbortSignal; staleTimeoutMs?: number; cancelOnClose?: boolean; url?: string }"
)]
pub struct QueryOptions;

/// What `cancel` takes besides the job id (read in `cancel`: only a real `AbortSignal` counts).
#[derive(tsify::Tsify)]
#[allow(dead_code)]
pub struct CancelOptions {
    /// Aborting it ends the cancel as `aborted`; no further request is sent.
    #[tsify(optional, type = "AbortSignal")]
    signal: (),
}

/// How many job records an operation removed: what `login` and `logout` return.
#[derive(Serialize, tsify::Tsify)]
pub struct PurgeResult {
    pub(super) purged: usize,
}

/// What `logout` returns (built from a [`PurgeResult`] and the promise).
#[derive(tsify::Tsify)]
#[allow(dead_code)]
pub struct LogoutResult {
    purged: usize,
    /// Settles (never rejects) once every stop and cancel this logout sent is answered or has
    /// failed, or 3 s after: await it before the server's own sign-out, which would otherwise
    /// overtake them (they then reach the server signed out, answered 401).
    #[tsify(type = "Promise<void>")]
    stopped: (),
}
