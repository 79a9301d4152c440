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
