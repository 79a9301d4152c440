// superset-job-guard/react: the guard in a React app (React 16.8 to 19).
//
// One guard for the app (JobGuardProvider), its session and records as external stores
// (React's own useSyncExternalStore from React 18 on; on React 16.8 and 17 the app installs
// use-sync-external-store and hands its shim to the provider, so this entry imports nothing but
// React and a plain app installs no React: a snapshot stays the same object until the guard
// announces a change, this tab's or another tab's), and cancels with their pending state and
// outcome. The last outcome of each
// job's cancel is kept with the guard, not the component, so it outlives the row that showed
// the job (a `not_job_owner`, `left` or `already_finished` removes the record, and so the row),
// until the app dismisses it or the session ends.
// useWaitFor waits for one query (guard.waitFor) and useChartData runs one (guard.query); each
// stops it on the server when its input changes or the component unmounts (StrictMode's
// remount excepted).
// Plain JS (React.createElement): no JSX build step for the package.
import * as React from "react";
import { createContext, createElement, useCallback, useContext, useEffect, useMemo, useRef, useState } from "react";
import init, { JobGuard, isGuardError } from "superset-job-guard";
// What every binding shares (js/stores.js): each guard's hub (its version, session epoch,
// cancels running and outcomes kept), an input's key compared between renders, a chart query's
// key, what a cancel answers before the provider has its guard, and how a wait or a query is
// started with its signal.
import { dismissOutcome, hub, keyOf, notLoaded, queryKey, startCancel, startQuery, startWait } from "./stores.js";

// The provider's guard; `null` while it has none yet (a server render, or in the browser until
// init() has loaded the module); `undefined` outside any provider.
const GuardContext = createContext(undefined);
// How the provider's hooks read: `use`, the useSyncExternalStore they call (React's own, or
// the shim the app passed), and `ownGuard`, whether the provider makes its guard itself (then a
// server rendered it with none, and hydration reads the empty values the server rendered).
const StoreHookContext = createContext(null);

/** React's own useSyncExternalStore (React 18 and later), else the one the app passed, else
 * an Error that says what to install. */
function storeHook(given) {
  const own = React.useSyncExternalStore;
  if (typeof own === "function") return own;
  if (typeof given === "function") return given;
  throw new Error(
    `superset-job-guard/react: React ${React.version} has no useSyncExternalStore (React 18 and later have it). ` +
      "On React 16.8 or 17, npm install use-sync-external-store and pass its shim: " +
      'import { useSyncExternalStore } from "use-sync-external-store/shim"; ' +
      "<JobGuardProvider useSyncExternalStore={useSyncExternalStore} …>",
  );
}
const freed = new WeakSet();

// The guards providers made: how many mounted providers hold each, and its pending free.
const holders = new WeakMap();
const pendingFree = new WeakMap();

// The guard the current render made, with the options it was made from. StrictMode calls a
// state initializer twice in one render (React 19) or renders a component twice (React 16.8 to
// 18), and keeps one result: the second call, in the same turn with the same options, gets the
// same guard, so none is made and dropped without free().
let made = null;

function makeGuard(options) {
  if (made && made.options === options) return made.guard;
  const guard = new JobGuard(options);
  made = { options, guard };
  queueMicrotask(() => {
    if (made?.guard === guard) made = null;
  });
  return guard;
}

/** A guard now, or `null` while the module is not loaded (the GuardError `not_initialized`). */
function guardIfLoaded(options) {
  try {
    return makeGuard(options);
  } catch (e) {
    if (isGuardError(e) && e.code === "not_initialized") return null;
    throw e;
  }
}

// A server render (Next.js's, renderToString in Node): no window. There the provider makes no
// guard, so nothing is fetched and no storage is read; its children render with no records.
const onServer = () => typeof window === "undefined";

/**
 * Makes one guard for the app from `options` (read once) and frees it on unmount. A `guard`
 * made by the app may be passed instead; the app frees that one.
 *
 * Where the module is not loaded yet (the app did not await the package's `init()` before its
 * first render, or the page was rendered on a server and is hydrating), it renders its children
 * without a guard (no records, `useJobGuard()` is `null`), calls `init()` in an effect and makes
 * the guard once that resolves; a rejected `init()` is thrown to the app's error boundary. On a
 * server it makes no guard at all: it never fetches, never reads storage, never throws for it.
 *
 * While mounted it keeps the session's records current from Superset's event stream
 * (`guard.follow()`, one poller for all the tabs of the browser), so `useJobs()` rows move from
 * pending to done with no app code. `follow={false}` turns that off (an app that feeds
 * `applyEvent` itself); `follow={{ intervalMs, maxIntervalMs }}` sets its cadence (read once).
 *
 * The free waits for the next task: React's StrictMode unmounts and mounts again at once in
 * development, and the guard must live through that (a remount cancels the pending free).
 * Providers that share a guard (the same options object, rendered together) free it with the
 * last one.
 */
export function JobGuardProvider({ options, guard: given, follow = true, useSyncExternalStore, children }) {
  // Before any guard is made: without a useSyncExternalStore this throws, and nothing leaks.
  const [subscribeWith] = useState(() => storeHook(useSyncExternalStore));
  const ownGuard = !given;
  const reading = useMemo(() => ({ use: subscribeWith, ownGuard }), [subscribeWith, ownGuard]);
  const [madeFrom] = useState(() => options);
  const [own, setOwn] = useState(() => (given || onServer() ? null : guardIfLoaded(options)));
  const [failed, setFailed] = useState(null);
  if (failed) throw failed;
  // No guard yet, in the browser: load the module, then make it (effects never run on a
  // server). StrictMode's second run gets the same init() promise; only the current run makes
  // the guard.
  useEffect(() => {
    if (given || own) return undefined;
    let current = true;
    init().then(
      () => {
        if (!current) return;
        try {
          setOwn(makeGuard(madeFrom));
        } catch (e) {
          setFailed(e);
        }
      },
      (e) => {
        if (current) setFailed(e);
      },
    );
    return () => {
      current = false;
    };
  }, [given, own, madeFrom]);
  // follow(): on unless `follow={false}`; its options are read once, as `options` are.
  const [followOptions] = useState(() => (follow === true ? undefined : follow));
  const following = follow !== false && follow != null;
  const guard = given ?? own;
  useEffect(() => {
    if (!guard || !following || freed.has(guard)) return undefined;
    const stop = guard.follow(followOptions);
    return () => stop();
  }, [guard, following, followOptions]);
  useEffect(() => {
    if (!own) return undefined;
    clearTimeout(pendingFree.get(own));
    pendingFree.delete(own);
    holders.set(own, (holders.get(own) ?? 0) + 1);
    return () => {
      const left = holders.get(own) - 1;
      holders.set(own, left);
      if (left > 0) return;
      pendingFree.set(
        own,
        setTimeout(() => {
          pendingFree.delete(own);
          freed.add(own);
          own.free();
        }, 0),
      );
    };
  }, [own]);
  return createElement(
    StoreHookContext.Provider,
    { value: reading },
    createElement(GuardContext.Provider, { value: guard }, children),
  );
}

/** The provider's guard; `null` while it has none (a server render, or until init() loads). */
export function useJobGuard() {
  const guard = useContext(GuardContext);
  if (guard === undefined) throw new Error("useJobGuard: no JobGuardProvider above this component");
  return guard;
}

// React's view of a guard's hub (js/stores.js): its listeners, each reading's last snapshot
// (kept until the hub's version moves, so a snapshot stays the same object until the guard
// announces a change), its outcomes and the ids of its cancels running as snapshots.
const stores = new WeakMap();
const NO_OUTCOMES = new Map();
const NO_PENDING = new Set();
const noOutcomes = () => NO_OUTCOMES;
const noPending = () => NO_PENDING;
const nothing = () => {};

function storeOf(guard) {
  let store = stores.get(guard);
  if (store) return store;
  // The hub hears every change from the first reading on (until the guard is freed), so a
  // reading cached before a component subscribed is never stale: a change between a render and
  // its subscription (a login in a sibling's effect) moves the version too.
  const h = hub(guard);
  const cache = new Map();
  const read = (key, compute, empty) => {
    const hit = cache.get(key);
    if (hit && hit.version === h.version) return hit.value;
    const value = freed.has(guard) ? empty : compute();
    cache.set(key, { version: h.version, value });
    return value;
  };
  store = {
    hub: h,
    subscribe: (listener) => h.listen(listener),
    read,
    outcomes: () => h.outcomes,
    pending: () => read("pending", () => new Set(h.running.keys()), NO_PENDING),
  };
  stores.set(guard, store);
  return store;
}

function useStore() {
  const guard = useJobGuard();
  // The provider's choice, the same function for its whole life (so the hooks it calls are
  // called in the same order on every render).
  const { use: useSyncExternalStore, ownGuard } = useContext(StoreHookContext);
  // No guard yet: nothing to subscribe to, every reading empty (until the guard comes).
  const store = guard ? storeOf(guard) : null;
  const subscribe = useCallback((l) => (store ? store.subscribe(l) : nothing), [store]);
  return { guard, store, subscribe, useSyncExternalStore, ownGuard };
}

// A reading's value in a server render and while a server-rendered page hydrates: for the
// provider's own guard, the empty one (a server makes none, so that is what its HTML shows, and
// hydration matches), then the guard's; for a guard the app passed, the guard's.
function useGuardValue(key, compute, empty) {
  const { guard, store, subscribe, useSyncExternalStore, ownGuard } = useStore();
  const snapshot = useCallback(() => (store ? store.read(key, () => compute(guard), empty) : empty), [store, guard, key]);
  const server = useCallback(() => (ownGuard ? empty : snapshot()), [ownGuard, snapshot, empty]);
  return useSyncExternalStore(subscribe, snapshot, server);
}

const NO_JOBS = Object.freeze([]);

/** `guard.session`: `{ userId, channelId, guestKey }` or `null`, re-rendering on every change. */
export function useSession() {
  return useGuardValue("session", (g) => g.session, null);
}

/** `guard.jobs()`: the session's records (jobs and tasks), oldest first. */
export function useJobs() {
  return useGuardValue("jobs", (g) => g.jobs(), NO_JOBS);
}

/**
 * The last cancel outcome of every job that has one, by job id, including jobs whose record
 * the outcome removed (their rows are gone): `{ outcomes, dismiss }`. Kept until dismissed
 * (`dismiss(jobId)`, or `dismiss()` for all) or until the session ends.
 */
export function useCancelOutcomes() {
  const { guard, store, subscribe, useSyncExternalStore, ownGuard } = useStore();
  const outcomesNow = store ? store.outcomes : noOutcomes;
  const outcomes = useSyncExternalStore(subscribe, outcomesNow, ownGuard ? noOutcomes : outcomesNow);
  const dismiss = useCallback((jobId) => guard && dismissOutcome(guard, jobId), [guard]);
  return { outcomes, dismiss };
}

/**
 * Cancels one job or task: `{ cancel, pending, outcome, dismiss }`. One request at a time per
 * job (a second `cancel()` while one runs, from this component or another, gets the same
 * promise); `outcome` is the job's last `CancelOutcome`, its `message` ready to show, kept
 * with the guard (`useCancelOutcomes`) so that it outlives this component. The hook follows
 * its current `jobId`: when it changes, `cancel()` cancels the new job, and `pending` and
 * `outcome` are the new job's (a cancel of the previous job still ends on its own). The
 * cancels this component started are aborted when it unmounts and on a logout (in this tab or
 * another).
 */
export function useCancel(jobId) {
  const { guard, store, subscribe, useSyncExternalStore, ownGuard } = useStore();
  const outcomesNow = store ? store.outcomes : noOutcomes;
  const pendingNow = store ? store.pending : noPending;
  const outcomes = useSyncExternalStore(subscribe, outcomesNow, ownGuard ? noOutcomes : outcomesNow);
  const pending = useSyncExternalStore(subscribe, pendingNow, ownGuard ? noPending : pendingNow);
  const mine = useRef(new Set()); // the controllers of the cancels this component started

  useEffect(() => {
    if (!store) return undefined;
    const started = mine.current;
    const off = store.subscribe(() => {
      // A logout ends the cancels at once. (Another user signing in ends them in the guard.)
      if (!freed.has(guard) && !guard.session) for (const c of started) c.abort();
    });
    return () => {
      off();
      for (const c of started) c.abort();
    };
  }, [guard, store]);

  const cancel = useCallback(() => {
    // No guard yet: no session is known, nothing is sent.
    if (!store) return Promise.resolve(notLoaded(jobId));
    return startCancel(guard, jobId, mine.current);
  }, [guard, store, jobId]);

  const dismiss = useCallback(() => guard && dismissOutcome(guard, jobId), [guard, jobId]);
  return { cancel, pending: pending.has(jobId), outcome: outcomes.get(jobId) ?? null, dismiss };
}

// ---- useWaitFor and useChartData: one query, superseded by the next ----

/**
 * Runs `start(signal)` (a promise that never rejects: `waitFor`, `query`) for the current
 * `key`; the value of the current key's, once settled, else `null`. A new key starts a new run
 * and then aborts the previous one (so a job both await runs on); the same key again changes
 * nothing; `null` runs nothing (and aborts what ran). Unmounting aborts after a microtask:
 * StrictMode's unmount and mount again at once keep the run. A late value of a superseded or
 * unmounted run is never shown.
 */
function useLatest(guard, key, start) {
  const [settled, setSettled] = useState(null); // { key, value } of the last run that settled
  const current = useRef(null); // { guard, key, controller, settled, detached }
  const stop = (run) => run.settled || run.controller.abort();

  useEffect(() => {
    if (!guard || key === null || freed.has(guard)) return undefined;
    let run = current.current;
    if (run && run.guard === guard && run.key === key && run.detached) {
      // StrictMode's unmount and mount again (or a re-run for nothing new): the same run.
      run.detached = false;
    } else {
      const previous = run;
      const controller = new AbortController();
      const mine = { guard, key, controller, settled: false, detached: false };
      run = mine;
      current.current = mine;
      const promise = start(controller.signal);
      if (previous) stop(previous);
      setSettled((s) => (s === null ? s : null));
      promise.then((value) => {
        mine.settled = true;
        if (current.current === mine && !mine.detached) setSettled({ key, value });
      });
    }
    const held = run;
    return () => {
      held.detached = true;
      queueMicrotask(() => {
        if (!held.detached || current.current !== held) return;
        current.current = null;
        stop(held);
      });
    };
    // What `key` names is what `start` reads; the options are read when a run starts.
  }, [guard, key]);

  return settled !== null && settled.key === key ? settled.value : null;
}

/**
 * Waits for a query: `guard.waitFor(input, { signal, staleTimeoutMs, cancelOnClose })` for the
 * current `input` (a 202 body, which the guard records first, or job ids), `{ outcome,
 * waiting }`. `input` is compared by its JSON: a new 202 body starts a new wait and aborts the
 * previous one (its jobs cancelled unless another waiter awaits them); unmounting aborts it;
 * before the provider has its guard (a server render, until `init()`), `waiting` is true and
 * the wait starts when the guard comes, so a server's HTML and hydration agree.
 */
export function useWaitFor(input, options) {
  const guard = useJobGuard();
  const key = keyOf(input);
  const outcome = useLatest(guard, key, startWait(guard, input, options));
  return { outcome, waiting: key !== null && outcome === null };
}

/**
 * A chart's data: `guard.query(body, { signal, staleTimeoutMs, cancelOnClose, url })` for the
 * current `body` (what the app would POST to `/api/v1/chart/data`) and the signed-in user,
 * `{ outcome, result, pending }`. A new body (compared by its JSON, with `url`), or another
 * user or guest signing in, supersedes the last query, which is stopped on the server;
 * unmounting stops it (StrictMode's remount does not); `null` runs nothing, and so does a body
 * while nobody is signed in (it runs at the sign-in: `pending` until then). `result` is the
 * server's chart-data JSON once `outcome` is `done`, else `null`; nothing of a superseded body,
 * or of a session that ended, is ever shown.
 */
export function useChartData(body, options) {
  const guard = useJobGuard();
  // The signed-in identity and the session's epoch are part of what is compared: a body runs
  // once someone is signed in, again for the next user or guest and for the same one signing
  // in again (nothing of the session that ended is shown, in any render), and not at all while
  // nobody is.
  const session = useSession();
  const epoch = guard ? hub(guard).epoch : 0;
  const bodyKey = keyOf(body);
  const key = queryKey(session, body, options, epoch);
  const outcome = useLatest(guard, key, startQuery(guard, body, options));
  const result = outcome?.outcome === "done" ? outcome.result : null;
  return { outcome, result, pending: bodyKey !== null && outcome === null };
}
