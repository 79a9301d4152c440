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
