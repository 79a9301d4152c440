// Compiled with `tsc --noEmit` by `npm test`: the shipped types must accept the documented
// usage and reject misuse (each @ts-expect-error line fails the build if it ever compiles).
import init, {
  JobGuard,
  classifyCancelResponse,
  isGuardError,
  type AsyncEvent,
  type AsyncJobError,
  type AsyncJobRecord,
  type CancelCheck,
  type CancelClassification,
  type CancelOptions,
  type CancelOutcome,
  type CancelOutcomeKind,
  type CancelRefusalReason,
  type ChannelId,
  type Contract,
  type FollowOptions,
  type GuardChange,
  type GuardChangeSource,
  type GuardChangeType,
  type GuardError,
  type GuardErrorCode,
  type GuardOptions,
  type GuardStats,
  type GuestKey,
  type JobId,
  type JobMetadata,
  type JobRecord,
  type JobStatus,
  type LogoutResult,
  type PurgeResult,
  type QueryBody,
  type QueryOptions,
  type QueryOutcome,
  type QueryOutcomeKind,
  type QueryReason,
  type RefusalReason,
  type StopOutcome,
  type Removed,
  type RetryOptions,
  type SessionInfo,
  type SessionInput,
  type StorageKind,
  type StorageMode,
  type StorageStatus,
  type TabId,
  type TaskId,
  type TaskRecord,
  type TaskStatus,
  type TaskStatusChanges,
  type TaskStatusMessage,
  type TaskSubmission,
  type UserId,
  type WaitInput,
  type WaitOptions,
  type WaitOutcome,
  type WaitOutcomeKind,
  type WaitRefusalReason,
} from "superset-job-guard";
import {
  useChartData,
  useWaitFor,
  type ChartDataState,
  type UseChartDataOptions,
  type UseWaitForOptions,
  type WaitState,
} from "superset-job-guard/react";

export async function dashboard(created: JobMetadata, event: AsyncEvent): Promise<string> {
  await init();
  const guard = new JobGuard({ namespace: "app", ttlSeconds: 3600, maxJobs: 50 });
  const other = new JobGuard();
  other.free();

  const purged: number = guard.login({ userId: 1 }).purged;
  guard.login({ userId: "1", channelId: "chan" });
  guard.login({ userId: null, channelId: "guest-abc" });

  const session: SessionInfo | null = guard.session;
  const user: string | null = session ? session.userId : null;

  const record: JobRecord = guard.recordJob(created);
  const status: "pending" | "running" | "done" | "error" | "cancelled" = record.status;
  const updated: JobRecord | null = guard.applyEvent(event);
  const all: JobRecord[] = guard.jobs();
  const one: JobRecord | null = guard.job(record.job_id);

  const check: CancelCheck = guard.checkCancel(record.job_id);
  let text: string;
  if (check.allowed) {
    // Narrowed: the record is there.
    text = check.job.job_id;
  } else {
    // Narrowed: a reason from the documented set, and a message.
    const reason: "no_session" | "unknown_job" | "not_job_owner" | "already_finished" = check.reason;
    text = `${reason}: ${check.message}`;
  }

  try {
    const { purged, stopped }: { purged: number; stopped: Promise<void> } = guard.logout();
    void stopped.then(() => purged);
  } catch (e) {
    if (isGuardError(e)) {
      const code: "invalid_options" | "invalid_session" | "invalid_job" | "no_session"
        | "not_job_owner" | "internal" | "freed" | "not_initialized" | "wasm_not_found"
        | "wasm_blocked" = e.code;
      text += code + e.message;
    }
  }

  const where: "local" | "memory" | "degraded" = guard.storage.kind;
  const reason: string | null = guard.storage.reason;
  const removed: number = guard.stats().removed.foreignOwner + guard.stats().keptInMemory;
  const unsubscribe: () => void = guard.onChange((change) => {
    const kind: "logout" | "user_changed" | "jobs_changed" | "unauthorized" | "forbidden" = change.type;
    text += kind;
  });
  unsubscribe();
  const stop: () => void = guard.follow();
  stop();
  guard.follow({ intervalMs: 1000, maxIntervalMs: 60000 })();
  // @ts-expect-error follow's options are typed
  guard.follow({ interval: 1000 });
  text += `${where}${reason}${removed}`;

  const withHttp = new JobGuard({
    cancelUrl: "/superset/api/v1/async_event/{job_id}/cancel",
    headers: { "X-CSRFToken": "token" },
    retry: { attempts: 4, baseDelayMs: 100, maxDelayMs: 2000 },
    timeoutMs: 15000,
    fetch: (input, init) => fetch(input, init),
  });
  const controller = new AbortController();
  const outcome: CancelOutcome = await withHttp.cancel(record.job_id, { signal: controller.signal });
  if (outcome.outcome === "refused") {
    // Narrowed: a refusal says why when the guard or the task's status knows (a server's 403
    // does not).
    const why: "no_session" | "unknown_job" | "already_finished" | "invalid_input" | "not_abortable" | undefined =
      outcome.reason;
    text += why ?? "refused by the server";
  }
  const attempts: number = outcome.attempts;
  const httpStatus: number | null = outcome.httpStatus;
  const classified = classifyCancelResponse(403);
  const retryable: boolean = classified.retryable;
  text += `${attempts}${httpStatus}${retryable}${outcome.message}`;

  // @ts-expect-error a cancelled outcome carries no refusal reason
  const noReason: "unknown_job" = outcome.outcome === "cancelled" ? outcome.reason : "unknown_job";
  // @ts-expect-error the timeout is a number of milliseconds
  new JobGuard({ timeoutMs: "10s" });
  // @ts-expect-error retry counts are numbers
  new JobGuard({ retry: { attempts: "3" } });
  // @ts-expect-error header values are strings
  new JobGuard({ headers: { "X-CSRFToken": 5 } });
  // @ts-expect-error storage is "local" or "memory"
  new JobGuard({ storage: "session" });
  // @ts-expect-error options are typed, not any
  new JobGuard({ ttl: 5 });
  // @ts-expect-error userId is required
  guard.login({});
  // @ts-expect-error metadata needs a job_id
  guard.recordJob({ channel_id: "c", user_id: "1", status: "pending" });
  // @ts-expect-error status is one of Superset's
  guard.recordJob({ ...created, status: "queued" });
  // @ts-expect-error a refused check has no job
  check.job;
  if (!check.allowed) {
    // @ts-expect-error refusals carry a reason, not a job
    check.job.job_id;
  }
  // @ts-expect-error a record's user_id is a string or null, never a number
  const n: number = record.user_id;

  return [purged, user, status, updated, all.length, one, text, n, noReason].join();
}

// Today's Superset: the task framework, and guests of 6.1.0.
export async function tasks(body: TaskSubmission): Promise<string> {
  const guard = new JobGuard({ contract: "task", tabId: "tab-1" });
  guard.login({ userId: null, guestKey: "9f2c01" });
  const guestKey: string | null = guard.session?.guestKey ?? null;
  const recorded: TaskRecord[] = guard.recordTasks(body);
  guard.recordTasks({ async_job: { task_id: "10a0bd9a-03c8-4737-9345-f4234ba86512", cursor: "c" } });
  const changed: TaskRecord | null = guard.applyTaskStatus({ task_id: recorded[0].job_id, status: "in_progress" });
  const polled: TaskRecord[] = guard.applyStatusChanges({ statuses: {}, cursor: "c" });
  const tabs: string[] | undefined = recorded[0].tab_ids;
  const any: JobRecord | null = guard.job(recorded[0].job_id);
  let text = `${guestKey}${changed?.status}${polled.length}${tabs}`;
  if (any && any.channel_id === null) {
    // Narrowed: a task, with a task status.
    const s: "pending" | "in_progress" | "aborting" | "success" | "failure" | "aborted" | "timed_out" = any.status;
    text += s;
  }
  const outcome = await guard.cancel(recorded[0].job_id);
  const kind: "cancelled" | "left" | "not_job_owner" | "not_found" | "already_finished" | "unsupported"
    | "unauthenticated" | "refused" | "failed" | "aborted" = outcome.outcome;
  const html = classifyCancelResponse(404, "task", "<html></html>");
  const action: string | undefined = classifyCancelResponse(200, "task", { action: "detached" }).action;
  text += `${kind}${html.outcome}${action}`;
  // @ts-expect-error the contract is "async_event" or "task"
  new JobGuard({ contract: "tasks" });
  // A status a later Superset adds is skipped at run time, so the types take any string, and
  // Superset's first status_changes answer may carry `cursor: null`.
  guard.applyTaskStatus({ task_id: "x", status: "paused" });
  guard.applyStatusChanges({ statuses: { x: { status: "paused" } }, cursor: null });
  // @ts-expect-error a task status is a string
  guard.applyTaskStatus({ task_id: "x", status: 5 });
  // @ts-expect-error a 202 body names task_ids or async_job
  guard.recordTasks({ job_id: "x" });
  return text;
}

// Every type an app passes in or gets back, by its exported name (the README names them where
// each call is shown).
export async function named(
  body202: JobMetadata,
  event: AsyncEvent,
  taskBody: TaskSubmission,
  message: TaskStatusMessage,
  changes: TaskStatusChanges,
): Promise<string> {
  const retry: RetryOptions = { attempts: 3, baseDelayMs: 200, maxDelayMs: 5000 };
  const contract: Contract = "task";
  const options: GuardOptions = { namespace: "app", contract, tabId: "tab-1", retry };
  const guard = new JobGuard(options);
  const sessionInput: SessionInput = { userId: 1, channelId: "chan" };
  const purged: PurgeResult = guard.login(sessionInput);
  const record: AsyncJobRecord = guard.recordJob(body202);
  const errors: AsyncJobError[] = record.errors;
  const status: JobStatus = record.status;
  const ids: [JobId, ChannelId, UserId | null] = [record.job_id, record.channel_id, record.user_id];
  const applied: AsyncJobRecord | null = guard.applyEvent(event);
  const tasks: TaskRecord[] = guard.recordTasks(taskBody);
  const taskIds: TaskId[] = tasks.map((t) => t.job_id);
  const taskStatus: TaskStatus | undefined = guard.applyTaskStatus(message)?.status;
  const changed: TaskRecord[] = guard.applyStatusChanges(changes);
  const check: CancelCheck = guard.checkCancel(record.job_id);
  const refusal: CancelRefusalReason | null = check.allowed ? null : check.reason;
  const cancelOptions: CancelOptions = { signal: new AbortController().signal };
  const outcome: CancelOutcome = await guard.cancel(record.job_id, cancelOptions);
  const kind: CancelOutcomeKind = outcome.outcome;
  const why: RefusalReason | undefined = outcome.outcome === "refused" ? outcome.reason : undefined;
  const classified: CancelClassification = classifyCancelResponse(403, contract);
  const follow: FollowOptions = { intervalMs: 1000, maxIntervalMs: 60000 };
  guard.follow(follow)();
  const changeTypes: GuardChangeType[] = [];
  const sources: GuardChangeSource[] = [];
  guard.subscribe((change: GuardChange) => {
    changeTypes.push(change.type);
    sources.push(change.source);
  })();
  const storage: StorageStatus = guard.storage;
  const mode: StorageMode = storage.kind;
  const kinds: StorageKind[] = ["local", "memory"];
  const stats: GuardStats = guard.stats();
  const removed: Removed = stats.removed;
  const guest: GuestKey | null = guard.session?.guestKey ?? null;
  const tab: TabId | undefined = tasks[0]?.tab_ids?.[0];
  let code: GuardErrorCode | null = null;
  try {
    guard.logout();
  } catch (e) {
    if (isGuardError(e)) {
      const error: GuardError = e;
      code = error.code;
    }
  }
  // @ts-expect-error a GuardErrorCode is one of the documented codes
  const unknown: GuardErrorCode = "no_such_code";
  return [
    purged.purged, errors.length, status, ids, applied, taskIds, taskStatus, changed.length, refusal,
    kind, why, classified.outcome, changeTypes, sources, mode, kinds, removed.expired, guest, tab, code, unknown,
  ].join();
}

// waitFor: a 202 body (either contract) or ids; the outcome's fields; cancelOnClose.
export async function waiting(taskBody: TaskSubmission, jobBody: JobMetadata): Promise<string> {
  const guard = new JobGuard({ contract: "task", tabId: "tab-1", cancelOnClose: true });
  guard.login({ userId: 1 });
  const controller = new AbortController();
  const options: WaitOptions = { signal: controller.signal, staleTimeoutMs: 600000, cancelOnClose: false };
  const first: WaitOutcome = await guard.waitFor(taskBody, options);
  const inputs: WaitInput[] = [taskBody, jobBody, "job-1", ["job-1", "job-2"]];
  const outcomes: WaitOutcome[] = await Promise.all(inputs.map((input) => guard.waitFor(input)));
  const kind: WaitOutcomeKind = first.outcome;
  const reason: WaitRefusalReason | null = first.reason;
  const failed: JobStatus | TaskStatus | null = first.outcome === "failed" ? first.status : null;
  const ids: string[] = [...first.jobIds, ...first.cancelling, first.jobId ?? ""];
  const errors: unknown[] = first.errors;
  // @ts-expect-error an outcome kind is one of the documented five
  const wrong: WaitOutcomeKind = "cancelled";
  // @ts-expect-error a number is not a job
  void guard.waitFor(42);
  // @ts-expect-error cancelOnClose is a boolean
  void new JobGuard({ cancelOnClose: "yes" });
  // @ts-expect-error a waiter's cancelOnClose too
  void guard.waitFor("job-1", { cancelOnClose: 1 });
  return [kind, reason, failed, ids, errors.length, wrong, outcomes.length, first.message].join();
}

// React: useWaitFor over a 202 body, ids, or nothing yet.
export function useChartQuery(body: TaskSubmission | null, ids: readonly string[]): string {
  const options: UseWaitForOptions = { staleTimeoutMs: 60000 };
  const state: WaitState = useWaitFor(body, options);
  const outcome: WaitOutcome | null = state.outcome;
  const waiting: boolean = state.waiting;
  const byIds: WaitState = useWaitFor(ids);
  const nothing: WaitState = useWaitFor(undefined);
  // @ts-expect-error a number is not a WaitInput
  useWaitFor(7);
  return `${waiting} ${outcome?.outcome ?? ""} ${byIds.waiting} ${nothing.waiting}`;
}

// query(): a chart's body in, an outcome out that never rejects; logout()'s stopped.
export async function chartData(guard: JobGuard, signal: AbortSignal): Promise<string> {
  const body: QueryBody = { datasource: { id: 1, type: "table" }, queries: [{ columns: ["region"] }] };
  const options: QueryOptions = { signal, staleTimeoutMs: 60000, cancelOnClose: true, url: "/api/v1/chart/data" };
  const outcome: QueryOutcome = await guard.query(body, options);
  const kind: QueryOutcomeKind = outcome.outcome;
  const reason: QueryReason | null = outcome.reason;
  const stop: StopOutcome | null = outcome.stop;
  const clientId: string | null = outcome.clientId;
  const status: number | null = outcome.httpStatus;
  const result: unknown = outcome.result;
  // @ts-expect-error a query outcome kind is one of the documented six
  const wrong: QueryOutcomeKind = "cancelled";
  // @ts-expect-error the body is an object
  void guard.query("SELECT 1");
  // @ts-expect-error url is a string
  void guard.query(body, { url: 7 });
  const out: LogoutResult = guard.logout();
  await out.stopped;
  return [kind, reason, stop, clientId, status, String(result), wrong, out.purged].join();
}

// React: useChartData over a body, or nothing yet.
export function useChart(body: QueryBody | null): string {
  const options: UseChartDataOptions = { staleTimeoutMs: 60000, url: "/api/v1/chart/data" };
  const state: ChartDataState = useChartData(body, options);
  const outcome: QueryOutcome | null = state.outcome;
  const pending: boolean = state.pending;
  const result: unknown = state.result;
  // @ts-expect-error the hook's signal is its own
  useChartData(body, { signal: new AbortController().signal });
  return `${pending} ${outcome?.outcome ?? ""} ${String(result)}`;
}
