// superset-job-guard/react: the guard in a React app (React >= 18, a peer dependency).
//
// One guard for the app (JobGuardProvider), its session and records as external stores
// (useSyncExternalStore: a snapshot stays the same object until the guard announces a change,
// this tab's or another tab's), and a cancel hook with its pending state and outcome.
// Plain JS (React.createElement): no JSX build step for the package.
import { createContext, createElement, useCallback, useContext, useEffect, useRef, useState, useSyncExternalStore } from "react";
import { JobGuard } from "superset-job-guard";

const GuardContext = createContext(null);
const freed = new WeakSet();

const pendingFree = new WeakMap();

/**
 * Makes one guard for the app from `options` (read once) and frees it on unmount. Call the
 * package's `init()` before rendering it (with webpack's build it does nothing). A `guard`
 * made by the app may be passed instead; the app frees that one.
 *
 * The free waits for the next task: React's StrictMode unmounts and mounts again at once in
 * development, and the guard must live through that (a remount cancels the pending free).
 */
export function JobGuardProvider({ options, guard: given, children }) {
  const [own] = useState(() => (given ? null : new JobGuard(options)));
  useEffect(() => {
    if (!own) return undefined;
    clearTimeout(pendingFree.get(own));
    pendingFree.delete(own);
    return () => {
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
  return createElement(GuardContext.Provider, { value: given ?? own }, children);
}

/** The provider's guard. */
export function useJobGuard() {
  const guard = useContext(GuardContext);
  if (!guard) throw new Error("useJobGuard: no JobGuardProvider above this component");
  return guard;
}

// One store per guard: a version bumped by every change the guard announces, and the last
// snapshot of each reading, kept until the version moves.
const stores = new WeakMap();

function storeOf(guard) {
  let store = stores.get(guard);
  if (store) return store;
  const listeners = new Set();
  const cache = new Map();
  let version = 0;
  let unsubscribe = null;
  store = {
    subscribe(listener) {
      listeners.add(listener);
      if (!unsubscribe && !freed.has(guard)) {
        unsubscribe = guard.subscribe(() => {
          version += 1;
          for (const l of [...listeners]) l();
        });
      }
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && unsubscribe) {
          if (!freed.has(guard)) unsubscribe();
          unsubscribe = null;
        }
      };
    },
    read(key, compute, empty) {
      const hit = cache.get(key);
      if (hit && hit.version === version) return hit.value;
      const value = freed.has(guard) ? empty : compute();
      cache.set(key, { version, value });
      return value;
    },
  };
  stores.set(guard, store);
  return store;
}

function useGuardValue(key, compute, empty) {
  const guard = useJobGuard();
  const store = storeOf(guard);
  const subscribe = useCallback((l) => store.subscribe(l), [store]);
  const snapshot = useCallback(() => store.read(key, () => compute(guard), empty), [store, guard, key]);
  return useSyncExternalStore(subscribe, snapshot, snapshot);
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
 * Cancels one job or task: `{ cancel, pending, outcome }`. One request at a time per job (a
 * second `cancel()` while one runs gets the same promise); `outcome` is the last
 * `CancelOutcome`, its `message` ready to show. The hook follows its current `jobId`: when it
 * changes, `cancel()` cancels the new job, and `pending`/`outcome` are the new job's (a cancel
 * of the previous job still ends on its own). Cancels are aborted when the component unmounts
 * and on a logout (in this tab or another).
 */
export function useCancel(jobId) {
  const guard = useJobGuard();
  const [state, setState] = useState({ jobId, pending: false, outcome: null });
  const running = useRef(new Map()); // jobId -> { controller, promise }
  const mounted = useRef(true);

  useEffect(() => {
    mounted.current = true;
    const inFlight = running.current;
    const off = storeOf(guard).subscribe(() => {
      // A logout ends the cancels at once. (Another user signing in ends them in the guard.)
      if (!guard.session) for (const { controller } of inFlight.values()) controller.abort();
    });
    return () => {
      mounted.current = false;
      off();
      for (const { controller } of inFlight.values()) controller.abort();
    };
  }, [guard]);

  const cancel = useCallback(() => {
    const inFlight = running.current;
    const current = inFlight.get(jobId);
    if (current) return current.promise;
    const controller = new AbortController();
    setState({ jobId, pending: true, outcome: null });
    const promise = guard.cancel(jobId, { signal: controller.signal }).then((outcome) => {
      if (inFlight.get(jobId)?.promise === promise) inFlight.delete(jobId);
      // Only the job the hook still follows shows its outcome.
      if (mounted.current) setState((s) => (s.jobId === jobId ? { jobId, pending: false, outcome } : s));
      return outcome;
    });
    inFlight.set(jobId, { controller, promise });
    return promise;
  }, [guard, jobId]);

  const current = state.jobId === jobId ? state : { pending: false, outcome: null };
  return { cancel, pending: current.pending, outcome: current.outcome };
}
