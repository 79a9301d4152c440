// ---- pkg/superset_job_guard.d.ts
/* tslint:disable */
/* eslint-disable */

/** The `code` of an error thrown by the guard. */
export type GuardErrorCode =
| "invalid_options"
| "invalid_session"
| "invalid_job"
| "no_session"
| "not_job_owner"
| "internal"
| "freed"
| "not_initialized"
| "wasm_not_found"
| "wasm_blocked";

/** Every error the guard throws is an `Error` of this shape. */
export interface GuardError extends Error {
    name: "GuardError";
    code: GuardErrorCode;
}


/**
 * A change to the session or its records, as `subscribe` and `onChange` (which hears
 * `other_tab` only) hand it to their listeners, frozen: `jobs_changed` also when the same
 * user's session took a new channel.
 */
export type GuardChange = { readonly type: GuardChangeType; readonly source: GuardChangeSource };

/**
 * A record as it is stored and as JS sees it: Superset's snake_case field names, in
 * this order (the `v1` format). A task has `channel_id: null` and its details'
 * defaults (no errors, no result URL); a guest's record carries `guest_key`; a task
 * its `tab_ids`. Both are left out when empty, so a user's job record is written
 * exactly as before tasks and guests had them.
 *
 * Its TypeScript declaration, `JobRecordFields`, is what both kinds have;
 * `AsyncJobRecord` and `TaskRecord` narrow it by kind.
 */
export interface JobRecordFields {
    /**
     * The job's channel; `null` for a task.
     */
    channel_id: ChannelId | null;
    /**
     * The job's id, or the task's uuid.
     */
    job_id: JobId;
    /**
     * The creator's user id as a string; `null` for guest and anonymous sessions.
     */
    user_id: UserId | null;
    status: JobStatus | TaskStatus;
    /**
     * Superset's `errors` of the job, as they came; empty for a task.
     */
    errors: AsyncJobError[];
    /**
     * Where the job's result is; `null` for a task.
     */
    result_url: string | null;
    /**
     * When the job was first recorded, in ms since the epoch.
     */
    created_at: number;
    /**
     * When the record last changed, in ms since the epoch.
     */
    updated_at: number;
    /**
     * A guest's record: the guest key the session signed in with.
     */
    guest_key?: GuestKey;
    /**
     * A task's: the `tab_id`s of this browser's tabs that recorded it.
     */
    tab_ids?: TabId[];
}

/**
 * A record of a task (task framework): `JobRecordFields` as a task has them: no channel, the
 * task's uuid as `job_id`, no result URL, `errors` empty or (a failed task whose reason the
 * guard read back) `[{ message }]`, and the `tab_id`s of this browser's tabs that recorded it.
 */
export type TaskRecord = JobRecordFields & { channel_id: null; job_id: TaskId; status: TaskStatus; result_url: null };

/**
 * A record of an async_event job (`recordJob` returns one): `JobRecordFields` as a job has
 * them.
 */
export type AsyncJobRecord = JobRecordFields & { channel_id: ChannelId; status: JobStatus; tab_ids?: undefined };

/**
 * A tab's id as Superset's cancel endpoint takes it: `^[A-Za-z0-9_-]{1,64}$`.
 */
export type TabId = string;

/**
 * A task framework `202` body: chart data's `{ task_ids, cursor, tab_id? }` or SQL Lab's
 * `{ async_job: { task_id, cursor, tab_id? } }`.
 */
export type TaskSubmission = { task_ids: TaskId[]; cursor?: string; tab_id?: TabId | null } | { async_job: { task_id: TaskId; cursor?: string; tab_id?: TabId | null } };

/**
 * A task's id: a canonical uuid (36 characters, `8-4-4-4-12` lowercase hex digits).
 * `TaskId::parse` takes an upper-case one and lowers it.
 */
export type TaskId = string;

/**
 * A task's status (the task framework's seven, `superset_core/tasks/types.py`).
 */
export type TaskStatus = "pending" | "in_progress" | "aborting" | "success" | "failure" | "aborted" | "timed_out";

/**
 * A user id: a valid id (`is_valid_id`). Superset's integer ids are their decimal
 * strings (`MaybeUser` reads both).
 */
export type UserId = string;

/**
 * An async channel id (Superset's `channel_id`): a valid id.
 */
export type ChannelId = string;

/**
 * An async_event job's id (Superset's `job_id`): a valid id (`is_valid_id`) that is not a
 * reserved name. A task's uuid is one too: records of both kinds are keyed by it.
 */
export type JobId = string;

/**
 * An async_event job's status (`cancelled` is the cancel-era terminal status).
 */
export type JobStatus = "pending" | "running" | "done" | "error" | "cancelled";

/**
 * An event from `GET /api/v1/async_event/` (or the websocket): job metadata plus its stream id.
 * A status this guard does not know (one a later Superset adds) is skipped, not refused
 * (`JobMetadata::read_event`).
 */
export type AsyncEvent = Omit<JobMetadata, "status"> & { status: JobStatus | (string & {}); id?: string };

/**
 * How a `query()` settled.
 */
export type QueryOutcomeKind = "done" | "failed" | "refused" | "unauthenticated" | "stale" | "aborted";

/**
 * How a `waitFor` settled.
 */
export type WaitOutcomeKind = "done" | "failed" | "refused" | "stale" | "aborted";

/**
 * How a cancel ended.
 */
export type CancelOutcomeKind = "cancelled" | "left" | "not_job_owner" | "not_found" | "already_finished" | "unsupported" | "unauthenticated" | "refused" | "failed" | "aborted";

/**
 * How a synchronous query's stop went, or what stopping an async one did.
 */
export type StopOutcome = "stopped" | "not_running" | "unsupported" | "refused" | "failed" | "sent" | "cancelling" | "not_sent";

/**
 * How many job records an operation removed: what `login` and `logout` return.
 */
export interface PurgeResult {
    purged: number;
}

/**
 * Job metadata exactly as Superset's chart-data call returns it with `202 Accepted`
 * (`build_job_metadata`): snake_case, `user_id` a string (or number), `null` for
 * guests.
 */
export interface JobMetadata {
    channel_id: ChannelId;
    job_id: JobId;
    user_id: string | number | null;
    status: JobStatus;
    /**
     * Superset's `errors` of the job, as they came; empty for a task.
     */
    errors?: AsyncJobError[] | null;
    /**
     * Where the job's result is; `null` for a task.
     */
    result_url?: string | null;
}

/**
 * One entry of a job's `errors`, as Superset sends it (`{ message: "..." }`). The guard keeps
 * each entry as the JSON value it came as (an object's keys in sorted order, a whole number
 * beyond JS's safe integers as the float JS holds for it).
 */
export type AsyncJobError = { message?: string; [key: string]: unknown };

/**
 * Retries of transient failures (`GuardOptions.retry`).
 */
export interface RetryOptions {
    /**
     * Every request counts, the first included. Default 3.
     */
    attempts?: number;
    /**
     * Default 200.
     */
    baseDelayMs?: number;
    /**
     * Default 5000.
     */
    maxDelayMs?: number;
}

/**
 * Stored values removed, by why.
 */
export interface Removed {
    /**
     * Not JSON, wrong types, missing fields.
     */
    unreadable: number;
    /**
     * Over the size limit of one record.
     */
    oversized: number;
    /**
     * A job id that is a JS prototype name (`__proto__`, `constructor`, `prototype`).
     */
    reservedId: number;
    /**
     * The record inside names another job than its key.
     */
    keyMismatch: number;
    /**
     * Older than `ttlSeconds`.
     */
    expired: number;
    /**
     * Owned by another user or channel than the session marker's.
     */
    foreignOwner: number;
    /**
     * A session marker that could not be read.
     */
    invalidSession: number;
    /**
     * Terminal records evicted to make room when storage was full.
     */
    evictedForSpace: number;
    /**
     * Records evicted to stay within `maxJobs`.
     */
    evictedOverLimit: number;
}

/**
 * The answer of `GET /api/v1/task/status_changes`. An entry whose status this guard does not
 * know is skipped; the others apply. (A type for TypeScript only: `StatusChange::read_all`
 * reads it.)
 */
export interface TaskStatusChanges {
    statuses: Record<string, { status: TaskStatus | (string & {}); progress?: number | null }>;
    cursor?: string | null;
}

/**
 * The answer of `checkCancel`: narrow on `allowed`.
 */
export type CancelCheck = { allowed: true; job: JobRecord } | { allowed: false; reason: CancelRefusalReason; message: string };

/**
 * The key an app derives from a guest token (guests only): a valid id.
 */
export type GuestKey = string;

/**
 * The meaning of one answer: the outcome, a message to show a person, whether a later attempt
 * could succeed, and for the task contract's 200 the `action` the server took.
 */
export interface CancelClassification {
    outcome: CancelOutcomeKind;
    message: string;
    retryable: boolean;
    /**
     * The task contract's 200: what the server did (`aborted`, `unsubscribed`, `detached`).
     */
    action?: "aborted" | "unsubscribed" | "detached" | (string & {});
}

/**
 * The options of `follow(options?)`, every one optional.
 */
export interface FollowOptions {
    /**
     * The wait after an answer that changed a record, in ms (100 to 600000). Default 500,
     * Superset's polling delay.
     */
    intervalMs?: number;
    /**
     * The longest wait, which the wait doubles up to while nothing changes, in ms
     * (`intervalMs` to 600000). Default 30000.
     */
    maxIntervalMs?: number;
}

/**
 * The options of `new JobGuard(options)`, every one optional. `null` reads as absent; unknown
 * options are refused.
 */
export interface GuardOptions {
    /**
     * Prefix of every storage key. Default `"superset-job-guard"`; no `:`.
     */
    namespace?: string;
    /**
     * Records older than this are dropped. Default 3600 (Superset's JWT expiration).
     */
    ttlSeconds?: number;
    /**
     * Most records kept; terminal ones are evicted first, then the oldest. Default 200.
     */
    maxJobs?: number;
    /**
     * `"local"` (default): shared by the origin's tabs. `"memory"`: this guard only.
     */
    storage?: StorageKind;
    /**
     * The cancel endpoint; `{job_id}` becomes the URL-encoded job (or task) id. Default
     * `"/api/v1/async_event/{job_id}/cancel"`, or `"/api/v1/task/{job_id}/cancel"` with
     * `contract: "task"`.
     */
    cancelUrl?: string;
    /**
     * Extra headers for the cancel request, e.g. `{ "X-CSRFToken": token }` for real Superset.
     */
    headers?: Record<string, string>;
    /**
     * Retries of transient failures. `attempts` counts every request, the first included.
     * Defaults 3, 200, 5000.
     */
    retry?: RetryOptions;
    /**
     * The server contract. Default `"async_event"`.
     */
    contract?: Contract;
    /**
     * Task contract: this tab's `tab_id`, as the app sends it with its queries (kept in
     * sessionStorage, it survives a reload). A cancel carries the tab id this tab recorded
     * the task with; after a reload, this one if the record lists it.
     */
    tabId?: TabId;
    /**
     * How long one request of a cancel may take, its body included, in ms (1 to 600000). A
     * request that takes longer is a failure that is retried. Default 10000.
     */
    timeoutMs?: number;
    /**
     * When the page closes (`pagehide`, not into the back/forward cache), cancel the jobs that
     * only this page's `waitFor` waiters await, with `fetch(…, { keepalive: true })` (best
     * effort; the `headers` go with it). Default `true`: a task-contract cancel carries the tab
     * id the task was recorded with, so it detaches only this tab (a task another tab or user
     * shares runs on); an async_event cancel stops the job, whose id no other page awaits.
     */
    cancelOnClose?: boolean;
    /**
     * The fetch to send the cancel with. Default: the page's `fetch` at call time. (A
     * function, which the browser shell takes out before the rest is read here.)
     */
    fetch?: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;
}

/**
 * The result of `cancel`, ready to show: it never rejects. Its TypeScript declaration,
 * `CancelOutcomeFields`, is narrowed by `CancelOutcome`: only a `refused` outcome has a
 * `reason`.
 */
export interface CancelOutcomeFields {
    outcome: CancelOutcomeKind;
    jobId: string;
    /**
     * Ready to show to a person.
     */
    message: string;
    /**
     * Whether trying again later could succeed.
     */
    retryable: boolean;
    /**
     * The last HTTP status, or `null` when no answer came (or nothing was sent).
     */
    httpStatus: number | null;
    /**
     * Requests sent; 0 when decided locally.
     */
    attempts: number;
    /**
     * Why a `refused` outcome refused, when the guard or the task's status knows.
     */
    reason?: RefusalReason;
    /**
     * The task contract's 200: what the server did (`aborted`, `unsubscribed`, `detached`).
     */
    action?: "aborted" | "unsubscribed" | "detached" | (string & {});
}

/**
 * The result of `cancel`: it never rejects. Narrow on `outcome`; a `refused` one may say why.
 */
export type CancelOutcome = CancelOutcomeFields & ({ outcome: "refused" } | { outcome: Exclude<CancelOutcomeKind, "refused">; reason?: undefined });

/**
 * The server contract: `"async_event"` (PR #42305's endpoint) or `"task"` (today's task
 * framework).
 */
export type Contract = "async_event" | "task";

/**
 * The stored session, shared by the origin's tabs (`guard.session`).
 */
export interface SessionInfo {
    userId: UserId | null;
    channelId: ChannelId | null;
    guestKey: GuestKey | null;
}

/**
 * The websocket's `task.status` payload. A status this guard does not know (one a later
 * Superset adds) is skipped, not refused.
 */
export interface TaskStatusMessage {
    task_id: TaskId;
    status: TaskStatus | (string & {});
}

/**
 * What `cancel` takes besides the job id (read in `cancel`: only a real `AbortSignal` counts).
 */
export interface CancelOptions {
    /**
     * Aborting it ends the cancel as `aborted`; no further request is sent.
     */
    signal?: AbortSignal;
}

/**
 * What `logout` returns (built from a [`PurgeResult`] and the promise).
 */
export interface LogoutResult {
    purged: number;
    /**
     * Settles (never rejects) once every stop and cancel this logout sent is answered or has
     * failed, or 3 s after: await it before the server's own sign-out, which would otherwise
     * overtake them (they then reach the server signed out, answered 401).
     */
    stopped: Promise<void>;
}

/**
 * What `query()` sends: the body the app would POST to `/api/v1/chart/data` (a query context:
 * `datasource`, `queries`, `form_data`, …), to which the guard adds `client_id` (and `tab_id`
 * on the task contract).
 */
export type QueryBody = Record<string, unknown>;

/**
 * What `query()` settles with; it never rejects.
 */
export interface QueryOutcome {
    outcome: QueryOutcomeKind;
    /**
     * `done`: the server's chart-data JSON, as `JSON.parse` reads its body; else `null`.
     */
    result: unknown;
    /**
     * The `client_id` the request carried (`POST /api/v1/chart/data/stop` takes it); `null`
     * when it carried none (a server without the stop endpoint refuses the field).
     */
    clientId: string | null;
    /**
     * The jobs (a task's uuid for a task) a `202` named.
     */
    jobIds: string[];
    /**
     * The HTTP status of the answer that settled it, where one did.
     */
    httpStatus: number | null;
    /**
     * `failed` by a job: its final status.
     */
    status: JobStatus | TaskStatus | null;
    /**
     * `failed`: the errors the server named (a task's `semantic_result_error` as
     * `[{ message }]` where it was read back).
     */
    errors: unknown[];
    /**
     * `refused` and `aborted`: why.
     */
    reason: QueryReason | null;
    /**
     * `aborted` and `stale`: how the server was told to stop it.
     */
    stop: StopOutcome | null;
    /**
     * The jobs whose cancel its stop started (`guard.cancel(id)` hands back each one's).
     */
    cancelling: string[];
    /**
     * Ready to show to a person.
     */
    message: string;
}

/**
 * What `waitFor` awaits: a `202` body (a task-framework submission, or an async_event job's
 * metadata), recorded first as `recordTasks` or `recordJob` would; or the id (a task's uuid) of
 * a job the session has recorded, or up to 100 of them.
 */
export type WaitInput = TaskSubmission | JobMetadata | string | readonly string[];

/**
 * What `waitFor` settles with; it never rejects.
 */
export interface WaitOutcome {
    outcome: WaitOutcomeKind;
    /**
     * The jobs (a task's uuid for a task) the waiter awaited.
     */
    jobIds: string[];
    /**
     * `failed`: the job that failed; `refused`: the job refused, where one was.
     */
    jobId: string | null;
    /**
     * `failed`: the job's final status.
     */
    status: JobStatus | TaskStatus | null;
    /**
     * `failed`: the job's errors (a task's `semantic_result_error` where it was read back, as
     * `[{ message }]`).
     */
    errors: unknown[];
    /**
     * `refused`: why.
     */
    reason: WaitRefusalReason | null;
    /**
     * `aborted`: the jobs whose cancel the abort started (those no other waiter awaits);
     * `guard.cancel(id)` hands back each one's running cancel.
     */
    cancelling: string[];
    /**
     * Ready to show to a person.
     */
    message: string;
}

/**
 * What changed: a sign-out, another user (or guest), the session's records, or
 * (`follow()`) the server answering 401 to the session's poll (its login there has ended)
 * or 403 (a role without the Task permission).
 */
export type GuardChangeType = "logout" | "user_changed" | "jobs_changed" | "unauthorized" | "forbidden";

/**
 * What the guard keeps of one job or task, a record of either kind: narrow on
 * `channel_id === null` (a task). Who owns it, when it was recorded and last updated (ms since
 * the epoch), a guest's record its `guest_key`.
 */
export type JobRecord = AsyncJobRecord | TaskRecord;

/**
 * What the guard removed from storage, by reason, and what it kept in memory (`guard.stats()`).
 */
export interface GuardStats {
    removed: Removed;
    /**
     * Writes the storage refused that were kept in this tab's memory instead.
     */
    keptInMemory: number;
    /**
     * Updates skipped because their status is one this guard does not know (a status a later
     * Superset adds): events, task status messages, `status_changes` entries.
     */
    unknownStatuses: number;
    /**
     * Events of the event stream `follow()` passed over: not job metadata, or nested too
     * deeply (the stream goes on after them).
     */
    skippedEvents: number;
    /**
     * Pages of an event stream `follow()` could read only in part: longer than the page limit
     * (2 Mi characters), broken after some events, or not readable at all (the task stream
     * then starts again from a fresh cursor).
     */
    partialPages: number;
}

/**
 * Where a change was made: `"local"`, by this guard; `"other_tab"`, by another tab (or
 * another guard of this page).
 */
export type GuardChangeSource = "local" | "other_tab";

/**
 * Where the guard keeps its data (`guard.storage`).
 */
export interface StorageStatus {
    /**
     * `"local"`: localStorage, shared by the origin's tabs. `"memory"`: this page only (asked
     * for, or localStorage is unavailable: `reason` says why). `"degraded"`: localStorage, but
     * some writes were refused (storage full) and are kept in this tab's memory.
     */
    kind: StorageMode;
    /**
     * Why the data is not (only) in localStorage; `null` when it is, or memory was asked for.
     */
    reason: string | null;
}

/**
 * Where the guard keeps its data: `"local"` (default), shared by the origin's tabs, or
 * `"memory"`, this guard only.
 */
export type StorageKind = "local" | "memory";

/**
 * Where the guard's data lives, as `guard.storage` reports it.
 */
export type StorageMode = "local" | "memory" | "degraded";

/**
 * Who signed in: what `login` takes. `userId` is `null` for guests (embedded dashboards) and
 * anonymous users.
 */
export interface SessionInput {
    userId: string | number | null;
    /**
     * The async channel, when the app knows it (guests: `"guest-..."`). Learnt from job
     * metadata otherwise.
     */
    channelId?: ChannelId | null;
    /**
     * Guests only (`userId: null`): a key the app derives from its guest token, so that one
     * guest's records are never another's (Superset 6.1.0 gives every guest one channel).
     */
    guestKey?: GuestKey | null;
}

/**
 * Why `checkCancel` refuses a cancel before any request is sent.
 */
export type CancelRefusalReason = "no_session" | "unknown_job" | "not_job_owner" | "already_finished";

/**
 * Why a `query()` was refused or aborted.
 */
export type QueryReason = "no_session" | "forbidden" | "not_job_owner" | "removed" | "invalid_input" | "unsupported" | "signal" | "logout" | "user_changed" | "page_end";

/**
 * Why a `waitFor` was refused.
 */
export type WaitRefusalReason = "no_session" | "unknown_job" | "not_job_owner" | "invalid_input" | "user_changed" | "unauthenticated" | "expired" | "removed" | "forbidden" | "unsupported";

/**
 * Why a cancel's outcome is `refused`: the guard's own check (`no_session`,
 * `unknown_job`, `already_finished`), options it cannot take (`invalid_input`: nothing is
 * sent), or the server's for a task that is running and cannot be aborted (a 422, with
 * the task's status read back: `not_abortable`). Absent when the server refused for
 * another reason.
 */
export type RefusalReason = "no_session" | "unknown_job" | "already_finished" | "invalid_input" | "not_abortable";

/**
 * `query()`'s options: `signal` (its abort stops the query on the server), `staleTimeoutMs`
 * (default 600000: no answer or progress for that long stops it), `cancelOnClose` (default the
 * guard's: whether the page's end stops it), `url` (default `/api/v1/chart/data`: a path of
 * this site).
 */
export type QueryOptions = { signal?: AbortSignal; staleTimeoutMs?: number; cancelOnClose?: boolean; url?: string };

/**
 * `waitFor`'s options: `signal` (its abort stops waiting and cancels what no other waiter
 * awaits), `staleTimeoutMs` (default 600000), `cancelOnClose` (default the guard's option:
 * whether the page's end cancels this waiter's jobs).
 */
export type WaitOptions = { signal?: AbortSignal; staleTimeoutMs?: number; cancelOnClose?: boolean };


/**
 * Guards Superset async-job metadata for the signed-in session. See the README for the rules.
 */
export class JobGuard {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Applies an async event to the session's record of its job; `null` when the job is not
     * the session's, or the event's status is one this guard does not know (skipped, counted
     * in `stats()`). Throws `invalid_job` for a malformed event.
     */
    applyEvent(event: AsyncEvent): AsyncJobRecord | null;
    /**
     * Applies a `status_changes` answer (`{ statuses, cursor }`) to the session's task
     * records; returns the records that changed. An entry whose status this guard does not
     * know is skipped (counted in `stats()`); a malformed answer throws `invalid_job` (nothing
     * applied).
     */
    applyStatusChanges(body: TaskStatusChanges): TaskRecord[];
    /**
     * Applies the websocket's `{ task_id, status }` to the session's record of the task; the
     * record if it changed, else `null` (a status this guard does not know is skipped and
     * counted in `stats()`). Throws `invalid_job` for a malformed message.
     */
    applyTaskStatus(message: TaskStatusMessage): TaskRecord | null;
    /**
     * Cancels a job the session owns: checks locally first (a refusal sends nothing), then
     * POSTs to the cancel endpoint, retrying transient failures. Never rejects: every path
     * resolves to a `CancelOutcome`. Options it cannot take (an unknown key, a `signal` that
     * is not an `AbortSignal`) are `refused` with `invalid_input`, nothing sent.
     */
    cancel(jobId: string, options?: CancelOptions): Promise<CancelOutcome>;
    /**
     * May this session cancel the job? Decided locally; nothing is sent.
     */
    checkCancel(jobId: string): CancelCheck;
    /**
     * Keeps the session's records current from Superset's event stream (the guard's
     * `contract`'s), with one poller for all the tabs of the browser (`navigator.locks`).
     * Polls only while the session has a record that has not ended, and waits for the next
     * `login` after a 401. Each call is a holder: polling goes on while any holder holds it
     * (another `follow()`, a provider's, `waitFor`'s waiters), at the fastest cadence any
     * holder asks for. Returns `stop`, which lets this holder go (a second call is harmless).
     * Throws `invalid_options`.
     */
    follow(options?: FollowOptions): () => void;
    /**
     * The session's record of a job, or `null`.
     */
    job(jobId: string): JobRecord | null;
    /**
     * The session's records, oldest first.
     */
    jobs(): JobRecord[];
    /**
     * Signs a session in. A different user than the stored session's purges every record
     * first, and ends what the previous one started. Returns how many records were removed.
     */
    login(session: SessionInput): PurgeResult;
    /**
     * Stops the session's queries on the server, in every tab (with `keepalive`; `stopped`
     * settles when they are answered, at once when nothing was sent), then removes every key
     * of the namespace and Superset's `last_async_event_id`, and ends every cancel in flight
     * as `aborted`. A logout with nothing to remove (no session, no records) announces
     * nothing.
     */
    logout(): LogoutResult;
    /**
     * Creates a guard. Throws a `GuardError` (`invalid_options`) for bad options; never for
     * storage: without a usable localStorage it keeps its data in memory and says so in
     * `storage`.
     */
    constructor(options?: GuardOptions);
    /**
     * Calls `callback({ type })` when another tab signs out (`"logout"`), signs in as someone
     * else (`"user_changed"`), changes this session's jobs (`"jobs_changed"`) or, following
     * the server for this session, met a 401 (`"unauthorized"`). Returns a function that
     * unsubscribes.
     */
    onChange(callback: (change: GuardChange) => void): () => void;
    /**
     * Sends a chart's query (`body`: what the app would POST to `/api/v1/chart/data`; `url`
     * overrides the path) with a `client_id` the guard makes where the server takes one (and
     * on the task contract the tab id), and follows whatever Superset answers to its result:
     * a `200`, a `202` job read at its `result_url`, or `202` tasks asked again for the warm
     * cache. Stopped on the server by `signal`, a logout in any tab, the page's end and the
     * guard's `free()`, as far as the server can stop it; a user switch drops it. Never
     * rejects: settles with a `QueryOutcome`.
     */
    query(body: QueryBody, options?: QueryOptions): Promise<QueryOutcome>;
    /**
     * Records the metadata Superset's create call returned. Throws `invalid_job`,
     * `no_session` or `not_job_owner`.
     */
    recordJob(meta: JobMetadata): AsyncJobRecord;
    /**
     * Records the tasks a task-framework `202` body started (chart data's
     * `{ task_ids, cursor, tab_id? }` or SQL Lab's `{ async_job: { task_id, cursor, tab_id? } }`),
     * owned by the signed-in session. Throws `invalid_job` (nothing stored) or `no_session`.
     */
    recordTasks(body: TaskSubmission): TaskRecord[];
    /**
     * What the guard removed from storage or kept in memory, by reason.
     */
    stats(): GuardStats;
    /**
     * Calls `listener({ type, source })` on every change to the session or its records: this
     * tab's own (`source: "local"`: `login`, `logout`, a record written, an event or status
     * applied, a cancel settled) and other tabs' (`"other_tab"`, as `onChange` hears them).
     * `type` is `"logout"`, `"user_changed"`, `"jobs_changed"` or `"unauthorized"` (the server
     * answered 401, in this tab or another). Returns a function that unsubscribes. A listener
     * that throws, or unsubscribes during a call, breaks neither the guard nor the other
     * listeners.
     */
    subscribe(listener: (change: GuardChange) => void): () => void;
    /**
     * Waits for jobs of the session: a `202` body (recorded first, as `recordJob` or
     * `recordTasks` would), a job id or an array of them. Registers now, and settles (never
     * rejects) with a `WaitOutcome`: `done` when every job ended well, `failed` at the first
     * that did not (`jobId`, `status`, `errors`), `refused` for a job this session does not own
     * or know (nothing is sent) and at once when the wait can no longer hear anything (`reason`:
     * `no_session`, `user_changed`, `unauthenticated`, `expired`, `removed`), `stale` after
     * `staleTimeoutMs` (default 600000) without progress, `aborted` by `signal`: then each of
     * its jobs that no other waiter of the browser awaits is cancelled as `cancel()` would.
     * Fed by `follow()`, which the waiters hold while anything waits, and the app's
     * `applyEvent` / `applyTaskStatus` / `applyStatusChanges`. With `cancelOnClose` (the
     * default), the page's end cancels what no other waiter of the browser awaits. Bad options
     * settle `refused` (`invalid_input`).
     */
    waitFor(input: WaitInput, options?: WaitOptions): Promise<WaitOutcome>;
    /**
     * The stored session (shared by the origin's tabs), or `null`.
     */
    readonly session: SessionInfo | null;
    /**
     * Where the guard keeps its data: `{ kind: "local" | "memory" | "degraded", reason }`.
     */
    readonly storage: StorageStatus;
}

/**
 * What an answer from the cancel endpoint means: the same table `cancel` uses, for apps that
 * send the request through their own client. `contract` is `"async_event"` (the default) or
 * `"task"`; `body` is the answer's parsed JSON, or its text (an HTML page is not JSON: a 404
 * with one is `unsupported`); without it a 404 counts as the endpoint's own answer.
 */
export function classifyCancelResponse(httpStatus: number, contract?: Contract, body?: unknown): CancelClassification;

/**
 * Whether `error` was thrown by the guard (an `Error` named `"GuardError"` with a `code`).
 */
export function isGuardError(error: unknown): error is GuardError;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __freedError: () => any;
    readonly __wbg_jobguard_free: (a: number, b: number) => void;
    readonly classifyCancelResponse: (a: any, b: any, c: any) => [number, number, number];
    readonly isGuardError: (a: any) => number;
    readonly jobguard_applyEvent: (a: number, b: any) => [number, number, number];
    readonly jobguard_applyStatusChanges: (a: number, b: any) => [number, number, number];
    readonly jobguard_applyTaskStatus: (a: number, b: any) => [number, number, number];
    readonly jobguard_cancel: (a: number, b: any, c: any) => any;
    readonly jobguard_checkCancel: (a: number, b: any) => [number, number, number];
    readonly jobguard_follow: (a: number, b: any) => [number, number, number];
    readonly jobguard_job: (a: number, b: any) => [number, number, number];
    readonly jobguard_jobs: (a: number) => [number, number, number];
    readonly jobguard_login: (a: number, b: any) => [number, number, number];
    readonly jobguard_logout: (a: number) => [number, number, number];
    readonly jobguard_new: (a: any) => [number, number, number];
    readonly jobguard_onChange: (a: number, b: any) => [number, number, number];
    readonly jobguard_query: (a: number, b: any, c: any) => any;
    readonly jobguard_recordJob: (a: number, b: any) => [number, number, number];
    readonly jobguard_recordTasks: (a: number, b: any) => [number, number, number];
    readonly jobguard_session: (a: number) => [number, number, number];
    readonly jobguard_stats: (a: number) => [number, number, number];
    readonly jobguard_storage: (a: number) => [number, number, number];
    readonly jobguard_subscribe: (a: number, b: any) => [number, number, number];
    readonly jobguard_waitFor: (a: number, b: any, c: any) => any;
    readonly wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475: (a: number, b: number, c: any, d: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475_24: (a: number, b: number, c: any, d: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__he5ff5a6db65ddc42: (a: number, b: number, c: any) => any;
    readonly wasm_bindgen__convert__closures_____invoke__h7d3ea58711d21d88: (a: number, b: number, c: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__heff736c0bc83f558: (a: number, b: number, c: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__h05b5433cabc2fd89: (a: number, b: number) => void;
    readonly __wbindgen_malloc: (a: number, b: number) => number;
    readonly __wbindgen_realloc: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_free: (a: number, b: number, c: number) => void;
    readonly __wbindgen_exn_store: (a: number) => void;
    readonly __externref_table_alloc: () => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_destroy_closure: (a: number, b: number) => void;
    readonly __externref_table_dealloc: (a: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;

// ---- js/index.d.ts
// Types of the package's entry: wasm-bindgen's generated declarations. Its JobGuard class
// declares `[Symbol.dispose]()`, which needs the ESNext.Disposable lib (and that lib the
// well-known symbols): referenced here, so an app compiles with its default `lib`, whatever its
// target, and `skipLibCheck` off.
/// <reference lib="es2015.symbol.wellknown" />
/// <reference lib="esnext.disposable" />
export * from "../pkg/superset_job_guard.js";
export { default } from "../pkg/superset_job_guard.js";

// ---- js/react.d.ts
// Types of superset-job-guard/react (js/react.js): React 16.8 to 19.
import type { ReactElement, ReactNode } from "react";
import type {
  CancelOutcome,
  FollowOptions,
  GuardOptions,
  JobGuard,
  JobRecord,
  QueryBody,
  QueryOptions,
  QueryOutcome,
  SessionInfo,
  WaitInput,
  WaitOutcome,
} from "superset-job-guard";

export interface JobGuardProviderProps {
  /** The guard's options, read once; the provider makes the guard and frees it on unmount. */
  options?: GuardOptions;
  /** Or a guard the app made (and frees itself). */
  guard?: JobGuard;
  /**
   * Keep the session's records current from Superset's event stream while mounted
   * (`guard.follow()`, one poller for all the browser's tabs). Default `true`; `false` for an
   * app that feeds `applyEvent` / `applyStatusChanges` itself; options set the cadence (read
   * once).
   */
  follow?: boolean | FollowOptions;
  /**
   * React 16.8 and 17 only (React 18 and later have their own, which is used): the shim of the
   * `use-sync-external-store` package, which the app installs:
   * `import { useSyncExternalStore } from "use-sync-external-store/shim"`. Read once.
   */
  useSyncExternalStore?: <T>(
    subscribe: (onStoreChange: () => void) => () => void,
    getSnapshot: () => T,
    getServerSnapshot?: () => T,
  ) => T;
  children?: ReactNode;
}

/**
 * One guard for the app. Await the package's `init()` before rendering it to have the guard
 * from the first render; otherwise (and while a server-rendered page hydrates) it renders its
 * children without a guard, loads the module itself and makes the guard then. On a server it
 * makes none: no fetch, no storage. (A `ReactElement`: what every React's types, 16.8 to 19,
 * accept from a JSX component.)
 */
export function JobGuardProvider(props: JobGuardProviderProps): ReactElement;

/**
 * The provider's guard; `null` while the provider has none yet: during a server render, and in
 * the browser until `init()` has loaded the module (an app that awaits `init()` before its first
 * render has it from the start). Throws outside a `JobGuardProvider`.
 */
export function useJobGuard(): JobGuard | null;

/** The stored session, re-rendering on every change (this tab's and other tabs'). */
export function useSession(): SessionInfo | null;

/** The session's records (jobs and tasks), oldest first; the same array until a change. */
export function useJobs(): readonly JobRecord[];

export interface CancelState {
  /** Starts the cancel, or returns the running one's promise. Never rejects. */
  cancel: () => Promise<CancelOutcome>;
  /** A cancel of this job is running. */
  pending: boolean;
  /** The job's last outcome, `message` ready to show; `null` before the first or once dismissed. */
  outcome: CancelOutcome | null;
  /** Forgets the job's last outcome. */
  dismiss: () => void;
}

/**
 * Cancels one job or task; follows the current `jobId`; the cancels it started are aborted on
 * unmount and on logout. The outcome is kept with the guard (`useCancelOutcomes`).
 */
export function useCancel(jobId: string): CancelState;

export interface CancelOutcomes {
  /** The last cancel outcome of each job that has one, by job id, whether or not its record remains. */
  outcomes: ReadonlyMap<string, CancelOutcome>;
  /** Forgets one job's outcome, or every outcome without an argument. */
  dismiss: (jobId?: string) => void;
}

/** Every job's last cancel outcome, kept after its record (and row) is gone, until dismissed or the session ends. */
export function useCancelOutcomes(): CancelOutcomes;

export interface UseWaitForOptions {
  /** No status progress for this long settles the wait `stale` (default 600000, Superset's). Read when a wait starts. */
  staleTimeoutMs?: number;
  /** Whether the page's end cancels this query (default the guard's `cancelOnClose`). Read when a wait starts. */
  cancelOnClose?: boolean;
}

export interface WaitState {
  /** The current input's outcome; `null` until it settles, and for a new input. */
  outcome: WaitOutcome | null;
  /** There is an input and no outcome yet (also while the provider has no guard, and on a server). */
  waiting: boolean;
}

/**
 * Waits for a query with `guard.waitFor`: `input` is a 202 body (recorded first) or job ids;
 * `null`/`undefined` waits for nothing. A new input (compared by its JSON) starts a new wait
 * and aborts the previous one, which cancels its jobs that no other waiter awaits; unmounting
 * aborts too (after a microtask, so StrictMode's unmount and mount again keep the wait). Before
 * the provider has its guard, the wait starts when it comes.
 */
export function useWaitFor(input: WaitInput | null | undefined, options?: UseWaitForOptions): WaitState;

/** What `useChartData` passes on to `guard.query` (its `signal` is the hook's own). Read when a query starts; `url` is part of what is compared. */
export type UseChartDataOptions = Omit<QueryOptions, "signal">;

export interface ChartDataState {
  /** The current body's outcome; `null` until it settles, and for a new body. */
  outcome: QueryOutcome | null;
  /** The server's chart-data JSON once `outcome.outcome` is `"done"`, else `null`. */
  result: unknown;
  /** There is a body and no outcome yet (also while nobody is signed in, while the provider has no guard, and on a server). */
  pending: boolean;
}

/**
 * A chart's data with `guard.query`: `body` is what the app would POST to `/api/v1/chart/data`;
 * `null`/`undefined` runs nothing. It runs for the signed-in user: not while nobody is (pending
 * until a sign-in), again when another user or guest signs in. A new body (compared by its
 * JSON, with `url`) supersedes the last, whose query is stopped on the server; unmounting
 * stops it too (after a microtask, so StrictMode's unmount and mount again keep it). Nothing of
 * a superseded body or of an ended session is ever shown.
 */
export function useChartData(body: QueryBody | null | undefined, options?: UseChartDataOptions): ChartDataState;

// ---- js/stores.d.ts
// Types shared by superset-job-guard/vue, /svelte and /angular (js/stores.js).
import type { CancelOutcome, GuardOptions, JobGuard, QueryOptions, QueryOutcome, WaitOptions, WaitOutcome } from "superset-job-guard";

/** Svelte's store contract: `run` is called at once with the value, then on every change. */
export interface Readable<T> {
  subscribe(run: (value: T) => void): () => void;
  /** The value now, without subscribing. */
  get(): T;
}

export interface CancelValue {
  /** A cancel of this job is running (from anywhere on the page). */
  pending: boolean;
  /** The job's last outcome, `message` ready to show; `null` before the first or once dismissed. */
  outcome: CancelOutcome | null;
}

export interface WaitValue {
  /** The current input's outcome; `null` until it settles, and for a new input. */
  outcome: WaitOutcome | null;
  /** There is an input and no outcome yet (also while the guard is not loaded). */
  waiting: boolean;
}

export interface ChartDataValue {
  /** The current body's outcome; `null` until it settles, and for a new body. */
  outcome: QueryOutcome | null;
  /** The server's chart-data JSON once `outcome.outcome` is `"done"`, else `null`. */
  result: unknown;
  /** There is a body and no outcome yet (also while nobody is signed in and while the guard is not loaded). */
  pending: boolean;
}

/** What `waitFor` reads besides its signal, read when a wait starts. */
export type WaitStoreOptions = Omit<WaitOptions, "signal">;
/** What `query` reads besides its signal, read when a query starts; `url` is part of what is compared. */
export type ChartDataOptions = Omit<QueryOptions, "signal">;

/** The guard's options, or `{ guard }`: a guard the app made (and frees). */
export type GuardSource = GuardOptions & { guard?: JobGuard };

// ---- js/vue.d.ts
// Types of superset-job-guard/vue (js/vue.js).
import type { App, ComputedRef, MaybeRefOrGetter, ShallowRef } from "vue";
import type { CancelOutcome, GuardError, JobGuard, JobRecord, QueryBody, QueryOutcome, SessionInfo, WaitInput, WaitOutcome } from "superset-job-guard";
import type { ChartDataOptions, GuardSource, WaitStoreOptions } from "./stores.js";

export type { ChartDataOptions, GuardSource, WaitStoreOptions } from "./stores.js";

export interface JobGuardPlugin {
  install(app: App): void;
  /** Frees a guard the plugin made (the app's `unmount()` does it too). */
  free(): void;
}

/**
 * A plugin with one guard for the app: `app.use(createJobGuard({ headers }))`. In a browser it
 * calls `init()` and makes the guard; on a server (Nuxt's) none: no fetch, no storage.
 * `options` are the guard's (read once), or `{ guard }`, one the app made (and frees).
 */
export function createJobGuard(options?: GuardSource): JobGuardPlugin;

/** The guard: `null` until `init()` has loaded the module, and on a server. */
export function useJobGuard(): Readonly<ShallowRef<JobGuard | null>>;
/** A failed `init()` (`wasm_not_found`, `wasm_blocked`) or guard options (`invalid_options`), else `null`. */
export function useGuardError(): Readonly<ShallowRef<GuardError | null>>;
/** `guard.session`, current on every change (this tab's and other tabs'). */
export function useSession(): Readonly<ShallowRef<SessionInfo | null>>;
/** `guard.jobs()`: the session's records, oldest first. */
export function useJobs(): Readonly<ShallowRef<readonly JobRecord[]>>;

export interface UseCancel {
  pending: ComputedRef<boolean>;
  /** The job's last outcome, `message` ready to show; `null` before the first or once dismissed. */
  outcome: ComputedRef<CancelOutcome | null>;
  /** Starts the cancel, or returns the running one's promise. Never rejects. */
  cancel(): Promise<CancelOutcome>;
  dismiss(): void;
}
/** Cancels one job; `jobId` may be a ref or a getter (followed). */
export function useCancel(jobId: MaybeRefOrGetter<string>): UseCancel;

/** Waits for a query: `input` (ref or getter; `null` waits for nothing) compared by its JSON. */
export function useWaitFor(
  input: MaybeRefOrGetter<WaitInput | null | undefined>,
  options?: WaitStoreOptions,
): { outcome: ComputedRef<WaitOutcome | null>; waiting: ComputedRef<boolean> };

/** A chart's data for the signed-in user: `body` (ref or getter; `null` runs nothing) compared by its JSON. */
export function useChartData(
  body: MaybeRefOrGetter<QueryBody | null | undefined>,
  options?: ChartDataOptions,
): { outcome: ComputedRef<QueryOutcome | null>; result: ComputedRef<unknown>; pending: ComputedRef<boolean> };

// ---- js/svelte.d.ts
// Types of superset-job-guard/svelte (js/svelte.js).
import type { GuardError, JobGuard, JobRecord, QueryBody, SessionInfo, WaitInput } from "superset-job-guard";
import type { CancelValue, ChartDataOptions, ChartDataValue, GuardSource, Readable, WaitStoreOptions } from "./stores.js";

export type { CancelValue, ChartDataOptions, ChartDataValue, GuardSource, Readable, WaitStoreOptions, WaitValue } from "./stores.js";

/** One job's cancel: a store of `{ pending, outcome }`; its last subscriber leaving aborts the cancels it started. */
export interface CancelStore extends Readable<CancelValue> {
  /** Starts the cancel, or returns the running one's promise. Never rejects. */
  cancel(): Promise<import("superset-job-guard").CancelOutcome>;
  /** Forgets the job's last outcome. */
  dismiss(): void;
}

/** A store of one query at a time; its last subscriber leaving stops it. */
export interface RunStore<I, V> extends Readable<V> {
  /** Runs for `input` (compared by its JSON: the same again changes nothing; a new one stops the last); `null` runs nothing. */
  run(input: I | null | undefined): void;
  /** Stops what runs. */
  stop(): void;
}

export interface JobGuardStores {
  /** The guard: `null` until `init()` has loaded the module, and on a server. */
  guard: Readable<JobGuard | null>;
  /** A failed `init()` (`wasm_not_found`, `wasm_blocked`) or guard options (`invalid_options`), else `null`. */
  error: Readable<GuardError | null>;
  /** `guard.session`, current on every change (this tab's and other tabs'). */
  session: Readable<SessionInfo | null>;
  /** `guard.jobs()`: the session's records, oldest first; the same array until a change. */
  jobs: Readable<readonly JobRecord[]>;
  /** One job's cancel. */
  cancel(jobId: string): CancelStore;
  /** A waiter (`guard.waitFor`): `run(input)` with a 202 body or job ids. */
  waitFor(options?: WaitStoreOptions): RunStore<WaitInput, import("./stores.js").WaitValue>;
  /** A chart's query (`guard.query`) for the signed-in user: `run(body)`; pending while nobody is signed in. */
  chartData(options?: ChartDataOptions): RunStore<QueryBody, ChartDataValue>;
  /** Frees a guard made here. */
  free(): void;
}

/**
 * The guard's stores. `options` are the guard's (read once), or `{ guard }`, one the app made.
 * In a browser it calls `init()` and makes the guard; on a server it makes none.
 */
export function createJobGuard(options?: GuardSource): JobGuardStores;

// ---- js/angular.d.ts
// Types of superset-job-guard/angular (js/angular.js).
import type { EnvironmentProviders, InjectionToken, Signal } from "@angular/core";
import type { CancelOutcome, GuardError, JobGuard, JobRecord, QueryBody, QueryOutcome, SessionInfo, WaitInput, WaitOutcome } from "superset-job-guard";
import type { ChartDataOptions, GuardSource, WaitStoreOptions } from "./stores.js";

export type { ChartDataOptions, GuardSource, WaitStoreOptions } from "./stores.js";

export interface JobGuardSignals {
  /** The guard: `null` until `init()` has loaded the module, and on a server. */
  guard: Signal<JobGuard | null>;
  /** A failed `init()` (`wasm_not_found`, `wasm_blocked`) or guard options (`invalid_options`), else `null`. */
  error: Signal<GuardError | null>;
  /** `guard.session`, current on every change (this tab's and other tabs'). */
  session: Signal<SessionInfo | null>;
  /** `guard.jobs()`: the session's records, oldest first. */
  jobs: Signal<readonly JobRecord[]>;
}

/** The app's one guard and its signals: `inject(JOB_GUARD)`. */
export const JOB_GUARD: InjectionToken<JobGuardSignals>;

/** In the app's providers: the guard's options (read once), or `{ guard }`, one the app made (and frees). */
export function provideJobGuard(options?: GuardSource): EnvironmentProviders;

/** Cancels one job; `jobId` a string or a signal (followed). Call in an injection context. */
export function injectCancel(jobId: string | (() => string)): {
  pending: Signal<boolean>;
  outcome: Signal<CancelOutcome | null>;
  /** Starts the cancel, or returns the running one's promise. Never rejects. */
  cancel(): Promise<CancelOutcome>;
  dismiss(): void;
};

/** Waits for a query: `input` a signal or function (`null` waits for nothing), compared by its JSON. */
export function injectWaitFor(
  input: () => WaitInput | null | undefined,
  options?: WaitStoreOptions,
): { outcome: Signal<WaitOutcome | null>; waiting: Signal<boolean> };

/** A chart's data for the signed-in user: `body` a signal or function (`null` runs nothing), compared by its JSON. */
export function injectChartData(
  body: () => QueryBody | null | undefined,
  options?: ChartDataOptions,
): { outcome: Signal<QueryOutcome | null>; result: Signal<unknown>; pending: Signal<boolean> };
