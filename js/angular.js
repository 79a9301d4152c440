// superset-job-guard/angular: the guard in an Angular app (standalone, zoneless or with zones,
// server rendering included) as an injectable and signals. `provideJobGuard(options)` in the
// app's providers; `inject(JOB_GUARD)` gives the app's one guard and its signals; the
// `inject…` functions, called in a component's injection context (a field initializer), give
// one job's cancel, a waiter and a chart's query, stopped when the component is destroyed. The
// guard is made in the browser once the module is loaded; on a server none (no fetch, no
// storage). Over the stores of js/stores.js.
import { DestroyRef, InjectionToken, computed, effect, inject, makeEnvironmentProviders, signal, untracked } from "@angular/core";
import init, { JobGuard } from "superset-job-guard";
import { bind, guardStore } from "./stores.js";

const OPTIONS = new InjectionToken("superset-job-guard: options");

/** A signal of a store's value; unsubscribed with `destroyRef`. */
function signalOf(store, destroyRef) {
  const s = signal(store.get());
  destroyRef.onDestroy(store.subscribe((v) => s.set(v)));
  return s.asReadonly();
}

/**
 * The app's guard and its signals: `guard` (`null` until the module is loaded, and on a
 * server), `error` (a failed `init()`), `session`, `jobs`. Made once for the root injector
 * from `provideJobGuard`'s options; freed with it.
 */
export const JOB_GUARD = new InjectionToken("superset-job-guard", {
  providedIn: "root",
  factory: () => {
    const { guard: given, ...options } = inject(OPTIONS, { optional: true }) ?? {};
    const made = guardStore(init, JobGuard, given, options);
    const destroyRef = inject(DestroyRef);
    destroyRef.onDestroy(made.free);
    const b = bind(made.guard);
    return {
      guard: signalOf(made.guard, destroyRef),
      error: signalOf(made.error, destroyRef),
      session: signalOf(b.session, destroyRef),
      jobs: signalOf(b.jobs, destroyRef),
      stores: b,
    };
  },
});

/** The guard's options (read once), or `{ guard }`, one the app made (and frees). */
export function provideJobGuard(options = {}) {
  return makeEnvironmentProviders([{ provide: OPTIONS, useValue: options }]);
}

const read = (v) => (typeof v === "function" ? v() : v);

/**
 * Cancels one job: `{ pending, outcome, cancel, dismiss }` (signals and functions). `jobId` is
 * a string or a signal (followed). One request per job; the outcome is kept with the guard until
 * dismissed or the session ends; the cancels it started are aborted when the component goes.
 */
export function injectCancel(jobId) {
  const { stores } = inject(JOB_GUARD);
  const destroyRef = inject(DestroyRef);
  const state = signal({ pending: false, outcome: null });
  let store = null;
  let current = null;
  // Each job's store stays subscribed until the component goes (a cancel of the previous job
  // ends on its own); only the current one's values are shown.
  const offs = [];
  const follow = (id) => {
    if (current === id) return store;
    current = id;
    const mine = stores.cancel(id);
    store = mine;
    offs.push(mine.subscribe((v) => store === mine && state.set(v)));
    return mine;
  };
  effect(() => {
    const id = String(read(jobId));
    untracked(() => follow(id));
  });
  destroyRef.onDestroy(() => {
    for (const off of offs) off();
  });
  return {
    pending: computed(() => state().pending),
    outcome: computed(() => state().outcome),
    cancel: () => follow(String(untracked(() => read(jobId)))).cancel(),
    dismiss: () => store?.dismiss(),
  };
}

/** `store.run(input())` whenever the input signal changes (compared by its JSON). */
function running(store, input) {
  const destroyRef = inject(DestroyRef);
  const state = signalOf(store, destroyRef);
  effect(() => {
    const value = read(input);
    untracked(() => store.run(value));
  });
  destroyRef.onDestroy(() => store.stop());
  return state;
}

/**
 * Waits for a query with `guard.waitFor`: `input` (a signal or function of a 202 body or job
 * ids; `null` waits for nothing) is compared by its JSON; a new one aborts the previous wait,
 * and so does the component's end. `{ outcome, waiting }` signals.
 */
export function injectWaitFor(input, options) {
  const state = running(inject(JOB_GUARD).stores.waitFor(options), input);
  return { outcome: computed(() => state().outcome), waiting: computed(() => state().waiting) };
}

/**
 * A chart's data with `guard.query`: `body` (a signal or function of what the app would POST to
 * `/api/v1/chart/data`; `null` runs nothing) for the signed-in user. A new body, or another user
 * signing in, stops the last query on the server; so does the component's end.
 * `{ outcome, result, pending }` signals.
 */
export function injectChartData(body, options) {
  const state = running(inject(JOB_GUARD).stores.chartData(options), body);
  return {
    outcome: computed(() => state().outcome),
    result: computed(() => state().result),
    pending: computed(() => state().pending),
  };
}
