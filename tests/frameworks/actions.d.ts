// Types of tests/frameworks/actions.js, for the TypeScript apps (Angular's strict build).
import type { JobGuard, TaskSubmission } from "superset-job-guard";
export function csrfFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
export function signIn(guard: JobGuard): Promise<void>;
export function start202(tabId: string): Promise<TaskSubmission>;
export function signOut(guard: JobGuard): Promise<void>;
export const CHART: { chart: string; filter: string; durationMs: number };
