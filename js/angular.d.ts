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
