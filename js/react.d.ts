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
