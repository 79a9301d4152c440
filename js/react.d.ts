// Types of superset-job-guard/react (js/react.js).
import type { ReactNode } from "react";
import type { CancelOutcome, GuardOptions, JobGuard, JobRecord, SessionInfo } from "superset-job-guard";

export interface JobGuardProviderProps {
  /** The guard's options, read once; the provider makes the guard and frees it on unmount. */
  options?: GuardOptions;
  /** Or a guard the app made (and frees itself). */
  guard?: JobGuard;
  children?: ReactNode;
}

/** One guard for the app. Call the package's `init()` before rendering it. */
export function JobGuardProvider(props: JobGuardProviderProps): ReactNode;

/** The provider's guard; throws outside a `JobGuardProvider`. */
export function useJobGuard(): JobGuard;

/** The stored session, re-rendering on every change (this tab's and other tabs'). */
export function useSession(): SessionInfo | null;

/** The session's records (jobs and tasks), oldest first; the same array until a change. */
export function useJobs(): readonly JobRecord[];

export interface CancelState {
  /** Starts the cancel, or returns the running one's promise. Never rejects. */
  cancel: () => Promise<CancelOutcome>;
  /** A cancel is running. */
  pending: boolean;
  /** The last outcome, `message` ready to show; `null` before the first. */
  outcome: CancelOutcome | null;
}

/** Cancels one job or task; aborted on unmount and on logout. */
export function useCancel(jobId: string): CancelState;
