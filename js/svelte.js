// superset-job-guard/svelte: the guard as Svelte stores (Svelte 3 to 5; runes read them as
// `$jobs`). Svelte's store contract needs no import of Svelte: `subscribe(run)` calls `run` at
// once and on every change, and returns the unsubscribe. A store's last subscriber leaving (the
// component is destroyed) stops what it runs on the server.
import init, { JobGuard } from "superset-job-guard";
import { bind, guardStore } from "./stores.js";

/**
 * The guard's stores: `guard` (`null` until the module is loaded, and on a server), `error`
 * (a failed `init()`), `session`, `jobs`; `cancel(jobId)`, `waitFor(options)` and
 * `chartData(options)` make one job's cancel, a waiter and a chart's query. `options` are the
 * guard's (read once); or pass `{ guard }`, a guard the app made. In a browser it calls
 * `init()` itself; on a server it makes nothing (no fetch, no storage). `free()` frees a guard
 * it made.
 */
export function createJobGuard(options = {}) {
  const { guard: given, ...guardOptions } = options ?? {};
  const made = guardStore(init, JobGuard, given, guardOptions);
  return { ...bind(made.guard), error: made.error, free: made.free };
}
