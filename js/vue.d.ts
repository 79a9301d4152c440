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
