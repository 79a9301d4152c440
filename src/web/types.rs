//! The TypeScript types the package ships. The exported methods take and return `JsValue`
//! annotated with these names (`unchecked_param_type` / `unchecked_return_type`), so the
//! generated `.d.ts` says exactly what goes in and comes out.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** An async_event job's status. `done`, `error` and `cancelled` are terminal. */
export type JobStatus = "pending" | "running" | "done" | "error" | "cancelled";

/** A task's status (task framework). `success`, `failure`, `aborted` and `timed_out` are terminal. */
export type TaskStatus =
  | "pending"
  | "in_progress"
  | "aborting"
  | "success"
  | "failure"
  | "aborted"
  | "timed_out";

/** The server contract: `"async_event"` (PR #42305's endpoint) or `"task"` (today's task framework). */
export type Contract = "async_event" | "task";

/** One entry of a job's `errors`, as Superset sends it (`{ message: "..." }`). */
export interface AsyncJobError {
  message?: string;
  [key: string]: unknown;
}

/**
 * Job metadata exactly as Superset's chart-data call returns it with `202 Accepted`
 * (`build_job_metadata`): snake_case, `user_id` a string (or number), `null` for guests.
 */
export interface JobMetadata {
  channel_id: string;
  job_id: string;
  user_id: string | number | null;
  status: JobStatus;
  errors?: AsyncJobError[] | null;
  result_url?: string | null;
}

/**
 * An event from `GET /api/v1/async_event/` (or the websocket): job metadata plus its stream id.
 * A status this guard does not know (one a later Superset adds) is skipped, not refused.
 */
export interface AsyncEvent extends Omit<JobMetadata, "status"> {
  status: JobStatus | (string & {});
  id?: string;
}

/** What every record has: `user_id` normalised, and two timestamps. */
interface RecordBase {
  job_id: string;
  /** The creator's user id as a string; `null` for guest and anonymous sessions. */
  user_id: string | null;
  errors: AsyncJobError[];
  result_url: string | null;
  /** When the job was first recorded, in ms since the epoch. */
  created_at: number;
  /** When the record last changed, in ms since the epoch. */
  updated_at: number;
  /** A guest's record: the guest key the session signed in with. */
  guest_key?: string;
}

/** What the guard keeps of an async_event job: its metadata. */
export interface AsyncJobRecord extends RecordBase {
  channel_id: string;
  status: JobStatus;
  tab_ids?: undefined;
}

/**
 * What the guard keeps of a task (task framework): no channel, the task's uuid as `job_id`,
 * and the `tab_id`s of this browser's tabs that recorded it.
 */
export interface TaskRecord extends RecordBase {
  channel_id: null;
  status: TaskStatus;
  tab_ids?: string[];
}

/** A record of either kind: narrow on `channel_id === null` (a task). */
export type JobRecord = AsyncJobRecord | TaskRecord;

/**
 * A task framework `202` body: chart data's `{ task_ids, cursor, tab_id? }` or SQL Lab's
 * `{ async_job: { task_id, cursor, tab_id? } }`.
 */
export type TaskSubmission =
  | { task_ids: string[]; cursor?: string; tab_id?: string | null }
  | { async_job: { task_id: string; cursor?: string; tab_id?: string | null } };

/**
 * The websocket's `task.status` payload. A status this guard does not know (one a later
 * Superset adds) is skipped, not refused.
 */
export interface TaskStatusMessage {
  task_id: string;
  status: TaskStatus | (string & {});
}

/**
 * The answer of `GET /api/v1/task/status_changes`. An entry whose status this guard does not
 * know is skipped; the others apply.
 */
export interface TaskStatusChanges {
  statuses: Record<string, { status: TaskStatus | (string & {}); progress?: number | null }>;
  cursor?: string | null;
}

export interface GuardOptions {
  /** Prefix of every storage key. Default `"superset-job-guard"`; no `:`. */
  namespace?: string;
  /** Records older than this are dropped. Default 3600 (Superset's JWT expiration). */
  ttlSeconds?: number;
  /** Most records kept; terminal ones are evicted first, then the oldest. Default 200. */
  maxJobs?: number;
  /** `"local"` (default): shared by the origin's tabs. `"memory"`: this guard only. */
  storage?: "local" | "memory";
  /** The server contract. Default `"async_event"`. */
  contract?: Contract;
  /**
   * Task contract: this tab's `tab_id`, as the app sends it with its queries (kept in
   * sessionStorage, it survives a reload). A cancel carries the tab id this tab recorded the
   * task with; after a reload, this one if the record lists it.
   */
  tabId?: string;
  /**
   * The cancel endpoint; `{job_id}` becomes the URL-encoded job (or task) id. Default
   * `"/api/v1/async_event/{job_id}/cancel"`, or `"/api/v1/task/{job_id}/cancel"` with `contract: "task"`.
   */
  cancelUrl?: string;
  /** Extra headers for the cancel request, e.g. `{ "X-CSRFToken": token }` for real Superset. */
  headers?: Record<string, string>;
  /** Retries of transient failures. `attempts` counts every request, the first included. Defaults 3, 200, 5000. */
  retry?: { attempts?: number; baseDelayMs?: number; maxDelayMs?: number };
  /**
   * How long one request of a cancel may take, its body included, in ms (1 to 600000). A
   * request that takes longer is a failure that is retried. Default 10000.
   */
  timeoutMs?: number;
  /** The fetch to send the cancel with. Default: the page's `fetch` at call time. */
  fetch?: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;
}

export interface CancelOptions {
  /** Aborting it ends the cancel as `aborted`; no further request is sent. */
  signal?: AbortSignal;
}

/** How a cancel ended. */
export type CancelOutcomeKind =
  | "cancelled"
  | "left"
  | "not_job_owner"
  | "not_found"
  | "already_finished"
  | "unsupported"
  | "unauthenticated"
  | "refused"
  | "failed"
  | "aborted";

/** The result of `cancel`: it never rejects. */
export type CancelOutcome = {
  outcome: CancelOutcomeKind;
  jobId: string;
  /** Ready to show to a person. */
  message: string;
  /** Whether trying again later could succeed. */
  retryable: boolean;
  /** The last HTTP status, or `null` when no answer came (or nothing was sent). */
  httpStatus: number | null;
  /** Requests sent; 0 when decided locally. */
  attempts: number;
  /** The task contract's 200: what the server did. */
  action?: "aborted" | "unsubscribed" | "detached" | string;
} & (
  | {
      outcome: "refused";
      /**
       * Refused here before any request (`no_session`, `unknown_job`, `already_finished`), or
       * by the server for a task that is running and cannot be aborted (`not_abortable`);
       * absent when the server refused for another reason.
       */
      reason?: "no_session" | "unknown_job" | "already_finished" | "not_abortable";
    }
  | { outcome: Exclude<CancelOutcomeKind, "refused">; reason?: undefined }
);

/** What one HTTP status of the cancel endpoint means (`classifyCancelResponse`). */
export interface CancelClassification {
  outcome: CancelOutcomeKind;
  message: string;
  retryable: boolean;
  /** The task contract's 200: what the server did. */
  action?: string;
}

/** Who signed in. `userId` is `null` for guests (embedded dashboards) and anonymous users. */
export interface SessionInput {
  userId: string | number | null;
  /** The async channel, when the app knows it (guests: `"guest-..."`). Learnt from job metadata otherwise. */
  channelId?: string | null;
  /**
   * Guests only (`userId: null`): a key the app derives from its guest token, so that one
   * guest's records are never another's (Superset 6.1.0 gives every guest one channel).
   */
  guestKey?: string | null;
}

/** The stored session, shared by the origin's tabs. */
export interface SessionInfo {
  userId: string | null;
  channelId: string | null;
  guestKey: string | null;
}

/** How many job records an operation removed. */
export interface PurgeResult {
  purged: number;
}

/** Why a cancel is refused before any request is sent. */
export type CancelRefusalReason = "no_session" | "unknown_job" | "not_job_owner" | "already_finished";

/** The answer of `checkCancel`: narrow on `allowed`. */
export type CancelCheck =
  | { allowed: true; job: JobRecord }
  | { allowed: false; reason: CancelRefusalReason; message: string };

/** Where the guard keeps its data (`guard.storage`). */
export interface StorageStatus {
  /**
   * `"local"`: localStorage, shared by the origin's tabs. `"memory"`: this page only (asked
   * for, or localStorage is unavailable: `reason` says why). `"degraded"`: localStorage, but
   * some writes were refused (storage full) and are kept in this tab's memory.
   */
  kind: "local" | "memory" | "degraded";
  reason: string | null;
}

/** What the guard removed from storage, by reason, and what it kept in memory (`guard.stats()`). */
export interface GuardStats {
  removed: {
    unreadable: number;
    oversized: number;
    reservedId: number;
    keyMismatch: number;
    expired: number;
    foreignOwner: number;
    invalidSession: number;
    evictedForSpace: number;
    evictedOverLimit: number;
  };
  keptInMemory: number;
  /** Updates skipped because their status is one this guard does not know (a later Superset's). */
  unknownStatuses: number;
}

/**
 * A change to the session or its records (`guard.subscribe`; `guard.onChange` hears `other_tab`
 * only): `jobs_changed` also when the same user's session took a new channel. Frozen.
 */
export interface GuardChange {
  readonly type: "logout" | "user_changed" | "jobs_changed";
  /** `"local"`: this guard made it; `"other_tab"`: another tab did. */
  readonly source: "local" | "other_tab";
}

/** The `code` of an error thrown by the guard. */
export type GuardErrorCode =
  | "invalid_options"
  | "invalid_session"
  | "invalid_job"
  | "no_session"
  | "not_job_owner"
  | "internal"
  | "freed";

/** Every error the guard throws is an `Error` of this shape. */
export interface GuardError extends Error {
  name: "GuardError";
  code: GuardErrorCode;
}
"#;
