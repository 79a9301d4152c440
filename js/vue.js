// superset-job-guard/vue: the guard in a Vue 3 app (Nuxt included) as composables. The plugin
// (`app.use(createJobGuard(options))`) makes one guard for the app, in the browser once the
// module is loaded (on a server none: no fetch, no storage); each composable gives refs that
// follow the guard's stores (js/stores.js) and stops what it started when its component goes.
import { computed, getCurrentScope, inject, onScopeDispose, shallowRef, toValue, watch, watchEffect } from "vue";
import init, { JobGuard } from "superset-job-guard";
import { bind, guardStore } from "./stores.js";

const KEY = Symbol.for("superset-job-guard/vue");

/**
 * A Vue plugin with one guard for the app: `app.use(createJobGuard({ headers }))`, or
 * `createJobGuard({ guard })` with a guard the app made (and frees). The guard's options are
 * read once. Also usable without `app.use`: its `guard`, `session`, `jobs` stores.
 */
export function createJobGuard(options = {}) {
  const { guard: given, ...guardOptions } = options ?? {};
  const made = guardStore(init, JobGuard, given, guardOptions);
  const bound = { ...bind(made.guard), error: made.error, free: made.free };
  return {
    ...bound,
    install(app) {
      app.provide(KEY, bound);
      const unmount = app.unmount;
      // The app's unmount frees a guard the plugin made.
      app.unmount = function (...args) {
        made.free();
        return unmount.apply(this, args);
      };
    },
  };
}

function bound() {
  const b = inject(KEY, null);
  if (!b) throw new Error("superset-job-guard/vue: app.use(createJobGuard(…)) first");
  return b;
}

const dispose = (off) => {
  if (getCurrentScope()) onScopeDispose(off);
};

/** A ref of a store's value, unsubscribed when the current scope (component) goes. */
function refOf(store) {
  const ref = shallowRef(store.get());
  dispose(store.subscribe((v) => (ref.value = v)));
  return ref;
}

/** The guard: `null` until the module is loaded (and on a server). */
export const useJobGuard = () => refOf(bound().guard);
/** A failed `init()` (`wasm_not_found`, `wasm_blocked`), else `null`. */
export const useGuardError = () => refOf(bound().error);
/** `guard.session`, current on every change (this tab's and other tabs'). */
export const useSession = () => refOf(bound().session);
/** `guard.jobs()`, the session's records, oldest first. */
export const useJobs = () => refOf(bound().jobs);

/**
 * Cancels one job: `{ pending, outcome, cancel, dismiss }`; `jobId` may be a ref or a getter,
 * followed. One request per job; the outcome is kept with the guard until dismissed or the
 * session ends; the cancels it started are aborted when the component goes.
 */
export function useCancel(jobId) {
  const b = bound();
  const state = shallowRef({ pending: false, outcome: null });
  let store = null;
  // Each job's store stays subscribed until the component goes (a cancel of the previous job
  // ends on its own); only the current one's values are shown.
  const offs = [];
  const stopWatch = watch(
    () => String(toValue(jobId)),
    (id) => {
      const mine = b.cancel(id);
      store = mine;
      offs.push(mine.subscribe((v) => store === mine && (state.value = v)));
    },
    { immediate: true },
  );
  dispose(() => {
    stopWatch();
    for (const off of offs) off();
  });
  return {
    pending: computed(() => state.value.pending),
    outcome: computed(() => state.value.outcome),
    cancel: () => store.cancel(),
    dismiss: () => store.dismiss(),
  };
}

/** Runs `store.run(toValue(input))` on every change of the input's JSON (deep). */
function running(store, input) {
  const state = refOf(store);
  const stopEffect = watchEffect(() => store.run(toValue(input)));
  dispose(() => {
    stopEffect();
    store.stop();
  });
  return state;
}

/**
 * Waits for a query with `guard.waitFor`: `input` (a ref or getter: a 202 body or job ids;
 * `null` waits for nothing) is compared by its JSON; a new one aborts the previous wait (its
 * jobs cancelled unless another waiter awaits them), and so does the component's end.
 * `{ outcome, waiting }`.
 */
export function useWaitFor(input, options) {
  const state = running(bound().waitFor(options), input);
  return { outcome: computed(() => state.value.outcome), waiting: computed(() => state.value.waiting) };
}

/**
 * A chart's data with `guard.query`: `body` (a ref or getter: what the app would POST to
 * `/api/v1/chart/data`; `null` runs nothing) for the signed-in user. A new body, or another
 * user signing in, stops the last query on the server; so does the component's end.
 * `{ outcome, result, pending }`.
 */
export function useChartData(body, options) {
  const state = running(bound().chartData(options), body);
  return {
    outcome: computed(() => state.value.outcome),
    result: computed(() => state.value.result),
    pending: computed(() => state.value.pending),
  };
}
