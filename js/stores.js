// The reactive core of the Vue, Svelte and Angular bindings (js/vue.js, js/svelte.js,
// js/angular.js), with no framework import: the guard's session and records, its cancels and
// one query superseded by the next, as stores. A store keeps Svelte's contract: `subscribe(run)`
// calls `run` at once with the value, then on every change, and returns the unsubscribe; `get()`
// reads it without subscribing. A value stays the same object until the guard announces a
// change (this tab's or another tab's).

// One hub per guard, for every binding (React's too): a version moved by every change the
// guard announces, a session epoch moved by each session's end (a result of an ended session is
// never the current one's, even for the same user signing in again), who listens, the cancels
// running (one request per job, whoever asks) and each job's last cancel outcome (a new Map
// whenever it changes, emptied when the session ends).
const hubs = new WeakMap();
const NO_OUTCOMES = new Map();

export function hub(guard) {
  let h = hubs.get(guard);
  if (h) return h;
  const listeners = new Set();
  h = {
    version: 0,
    epoch: 0,
    outcomes: NO_OUTCOMES,
    running: new Map(),
    listen(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    tell() {
      h.version += 1;
      for (const l of [...listeners]) l();
    },
  };
  try {
    guard.subscribe((change) => {
      // A session that ended (here or in another tab) takes its outcomes with it.
      if (change.type === "logout" || change.type === "user_changed") {
        h.epoch += 1;
        h.outcomes = NO_OUTCOMES;
      }
      h.tell();
    });
  } catch {
    // A freed guard: nothing will change; every reading is empty.
  }
  hubs.set(guard, h);
  return h;
}

/**
 * Cancels `jobId` on `guard`: the running cancel's promise if one runs (one request per job,
 * whoever asks), else a new one whose `AbortController` goes into `mine` (its starter aborts
 * those when it goes); its outcome is kept with the guard until dismissed or the session ends.
 */
export function startCancel(guard, jobId, mine) {
  const h = hub(guard);
  const current = h.running.get(jobId);
  if (current) return current;
  const controller = new AbortController();
  mine.add(controller);
  let promise;
  try {
    promise = guard.cancel(jobId, { signal: controller.signal });
  } catch (e) {
    return Promise.reject(e); // freed
  }
  promise = promise.then((outcome) => {
    mine.delete(controller);
    if (h.running.get(jobId) === promise) h.running.delete(jobId);
    h.outcomes = new Map(h.outcomes).set(jobId, outcome);
    h.tell();
    return outcome;
  });
  h.running.set(jobId, promise);
  h.tell();
  return promise;
}

/** Forgets `jobId`'s kept outcome (every job's without one). */
export function dismissOutcome(guard, jobId) {
  const h = hub(guard);
  if (jobId === undefined) {
    if (h.outcomes.size === 0) return;
    h.outcomes = NO_OUTCOMES;
  } else {
    if (!h.outcomes.has(jobId)) return;
    h.outcomes = new Map(h.outcomes);
    h.outcomes.delete(jobId);
  }
  h.tell();
}

/** A store of `read(guard)`, read again after each change; `empty` without a guard, or freed. */
export function reading(guard, read, empty) {
  let version = -1;
  let value = empty;
  const get = () => {
    if (!guard) return empty;
    const h = hub(guard);
    if (h.version !== version) {
      version = h.version;
      try {
        value = read(guard);
      } catch {
        value = empty; // freed
      }
    }
    return value;
  };
  return {
    get,
    subscribe(run) {
      let last = get();
      run(last);
      if (!guard) return () => {};
      return hub(guard).listen(() => {
        const now = get();
        if (now !== last) run((last = now));
      });
    },
  };
}

export const NO_JOBS = Object.freeze([]);
export const sessionOf = (guard) => reading(guard, (g) => g.session, null);
export const jobsOf = (guard) => reading(guard, (g) => g.jobs(), NO_JOBS);

/** What a cancel answers without a guard (a server render, before init()): refused, nothing sent. */
export function notLoaded(jobId) {
  return {
    outcome: "refused",
    reason: "no_session",
    jobId: String(jobId),
    message: "No session: the guard is not loaded yet (init() has not resolved)",
    retryable: false,
    httpStatus: null,
    attempts: 0,
  };
}

/**
 * One job's cancel as a store of `{ pending, outcome }`, with `cancel()` (the running cancel's
 * promise if one runs, for this job, from anywhere: one request per job) and `dismiss()`. The
 * outcome is kept with the guard until dismissed or the session ends. `abort()` aborts the
 * cancels this store started (a binding calls it when its component goes).
 */
export function cancelOf(guard, jobId) {
  const mine = new Set();
  const id = String(jobId);
  const state = reading(
    guard,
    () => {
      const h = hub(guard);
      return { pending: h.running.has(id), outcome: h.outcomes.get(id) ?? null };
    },
    { pending: false, outcome: null },
  );
  return {
    ...state,
    cancel: () => (guard ? startCancel(guard, id, mine) : Promise.resolve(notLoaded(id))),
    dismiss: () => guard && dismissOutcome(guard, id),
    abort() {
      for (const c of mine) c.abort();
      mine.clear();
    },
  };
}

// A key for an input, compared from one call to the next: its JSON (an inline literal, or the
// same body parsed again, is the same input), a BigInt written as its digits (the guard refuses
// one beyond the safe integers, and a re-render of the same value must not ask again), else the
// object itself (cyclic, a throwing getter: the guard refuses it, `invalid_input`).
const inputKeys = new WeakMap();
let inputCount = 0;
const bigints = (_key, value) => (typeof value === "bigint" ? `${value}n` : value);
export function keyOf(input) {
  if (input === null || input === undefined) return null;
  try {
    const json = JSON.stringify(input, bigints);
    if (json !== undefined) return typeof input === "bigint" ? `bigint:${json}` : json;
  } catch {
    // cyclic, a throwing getter: by identity.
  }
  if (typeof input !== "object" && typeof input !== "function") return `${typeof input}:${String(input)}`;
  let key = inputKeys.get(input);
  if (!key) {
    inputCount += 1;
    key = `#${inputCount}`;
    inputKeys.set(input, key);
  }
  return key;
}

/**
 * One run at a time, as a store of its settled value (`null` until the current run settles).
 * `set(key, start)`: a new key starts `start(signal)` (a promise that never rejects) and then
 * aborts the previous run, so a job both await runs on; the same key changes nothing; a `null`
 * key aborts what runs. `stop()` aborts too. A value of a run that is no longer current is never
 * handed out.
 */
export function latest() {
  let current = null; // { key, controller, settled }
  let value = null;
  const listeners = new Set();
  const tell = () => {
    for (const l of [...listeners]) l(value);
  };
  const stop = () => {
    const run = current;
    current = null;
    if (run && !run.settled) run.controller.abort();
    if (value !== null) {
      value = null;
      tell();
    }
  };
  return {
    get: () => value,
    key: () => current?.key ?? null,
    subscribe(run) {
      run(value);
      listeners.add(run);
      return () => listeners.delete(run);
    },
    set(key, start) {
      if (key === null) return stop();
      if (current && current.key === key) return undefined;
      const previous = current;
      const mine = { key, controller: new AbortController(), settled: false };
      current = mine;
      let promise;
      try {
        promise = start(mine.controller.signal);
      } catch (e) {
        current = previous; // the app's mistake (invalid_input): thrown to it, nothing changed
        throw e;
      }
      if (previous && !previous.settled) previous.controller.abort();
      if (value !== null) {
        value = null;
        tell();
      }
      promise.then((v) => {
        mine.settled = true;
        if (current !== mine) return;
        value = v;
        tell();
      });
      return undefined;
    },
    stop,
  };
}

/** `options` as the guard takes them, with `signal`: only the keys given. */
export function withSignal(signal, options, keys) {
  const out = { signal };
  for (const k of keys) if (options?.[k] !== undefined) out[k] = options[k];
  return out;
}

/**
 * The key of a chart's query: its body (by JSON), its `url`, who is signed in and the session's
 * `epoch` (the hub's), so a body runs once someone is, again for the next user or guest and
 * for the same one signing in again, and not at all while nobody is.
 * `null`: nothing to run.
 */
export function queryKey(session, body, options, epoch = 0) {
  const bodyKey = keyOf(body);
  if (bodyKey === null || !session) return null;
  return `${epoch} ${JSON.stringify([session.userId, session.guestKey])} ${options?.url ?? ""} ${bodyKey}`;
}

/** A wait: `guard.waitFor` for `input` under `signal`, with `options`' keys that waitFor reads. */
export const startWait = (guard, input, options) => (signal) =>
  guard.waitFor(input, withSignal(signal, options, ["staleTimeoutMs", "cancelOnClose"]));

/** A chart's query: `guard.query` for `body` under `signal`. */
export const startQuery = (guard, body, options) => (signal) =>
  guard.query(body, withSignal(signal, options, ["staleTimeoutMs", "cancelOnClose", "url"]));

/** A store of one value that `set` replaces. */
export function writable(value) {
  const listeners = new Set();
  return {
    get: () => value,
    set(next) {
      if (next === value) return;
      value = next;
      for (const l of [...listeners]) l(value);
    },
    subscribe(run) {
      run(value);
      listeners.add(run);
      return () => listeners.delete(run);
    },
  };
}

/**
 * The guard as a store: `guard` itself if the app made one, else made from `options` in a
 * browser once `init()` resolves (`null` until then, and for ever on a server: no fetch, no
 * storage there). A failed `init()` is in `error`. `free()` frees a guard made here.
 */
export function guardStore(init, JobGuard, given, options) {
  const store = writable(given ?? null);
  const error = writable(null);
  let freed = false;
  if (!given && typeof window !== "undefined") {
    init().then(
      () => {
        if (freed) return;
        try {
          store.set(new JobGuard(options));
        } catch (e) {
          error.set(e); // invalid_options
        }
      },
      (e) => error.set(e), // wasm_not_found, wasm_blocked
    );
  }
  return {
    guard: store,
    error,
    free() {
      freed = true;
      const guard = store.get();
      if (!given && guard) {
        store.set(null);
        guard.free();
      }
    },
  };
}

/**
 * A store that follows the guard store `guards`: for each guard (or `null`), `make(guard)`'s
 * store, its value handed on.
 */
export function following(guards, make) {
  let guard = guards.get();
  let inner = make(guard);
  const now = () => {
    const g = guards.get();
    if (g !== guard) {
      guard = g;
      inner = make(g);
    }
    return inner;
  };
  return {
    get: () => now().get(),
    subscribe(run) {
      let last;
      let first = true;
      let offInner = () => {};
      const push = () => {
        const v = now().get();
        if (first || v !== last) {
          first = false;
          run((last = v));
        }
      };
      const offGuard = guards.subscribe(() => {
        offInner();
        offInner = now().subscribe(push);
      });
      return () => {
        offGuard();
        offInner();
      };
    },
  };
}

/**
 * A store that counts its subscribers: `onFirst()` when the first comes, `onLast()` when the
 * last goes (a binding's component is gone: its runs stop).
 */
function counted(store, onFirst, onLast) {
  let count = 0;
  return {
    ...store,
    subscribe(run) {
      count += 1;
      if (count === 1) onFirst?.();
      const off = store.subscribe(run);
      let done = false;
      return () => {
        if (done) return;
        done = true;
        off();
        count -= 1;
        if (count === 0) onLast?.();
      };
    },
  };
}

/**
 * A waiter or a chart's query over the guard store: a store of `shape(outcome, input)` with
 * `run(input)`, which starts it for a new input (compared by `key`) and stops the previous
 * one. It starts once the guard is there (and, for a query, someone is signed in, again for
 * the next user); its last subscriber's leaving stops it, and so does `stop()`.
 */
function runner(guards, sessions, keyFor, start, shape) {
  const run = latest();
  let input = null;
  let offSession = null;
  const value = writable(shape(null, null));
  const update = () => {
    const guard = guards.get();
    const key = guard ? keyFor(sessions.get(), input) : null;
    run.set(key, start(guard, input));
    value.set(shape(run.get(), keyOf(input)));
  };
  const offRun = run.subscribe(() => value.set(shape(run.get(), keyOf(input))));
  void offRun; // the runner lives as long as its store
  const watch = () => {
    offSession ??= sessions.subscribe(update);
  };
  const stop = () => {
    offSession?.();
    offSession = null;
    input = null;
    run.stop();
    value.set(shape(null, null));
  };
  return {
    ...counted(value, watch, stop),
    run(next) {
      input = next ?? null;
      watch();
      update();
    },
    stop,
  };
}

const waitShape = (outcome, key) => ({ outcome, waiting: key !== null && outcome === null });
const queryShape = (outcome, key) => ({
  outcome,
  result: outcome?.outcome === "done" ? outcome.result : null,
  pending: key !== null && outcome === null,
});

/**
 * Everything a binding shows, over one guard store: `session` and `jobs` stores, and makers of
 * one job's cancel, a waiter and a chart's query.
 */
export function bind(guards) {
  const session = following(guards, sessionOf);
  const jobs = following(guards, jobsOf);
  return {
    guard: guards,
    session,
    jobs,
    cancel(jobId) {
      let mine = null;
      const store = following(guards, (g) => (mine = cancelOf(g, jobId)));
      return {
        ...counted(store, null, () => mine?.abort()),
        cancel: () => (guards.get(), store.get(), mine.cancel()),
        dismiss: () => (store.get(), mine.dismiss()),
      };
    },
    waitFor(options) {
      return runner(
        guards,
        session,
        (_session, input) => keyOf(input),
        (guard, input) => startWait(guard, input, options),
        waitShape,
      );
    },
    chartData(options) {
      return runner(
        guards,
        session,
        (s, body) => queryKey(s, body, options, guards.get() ? hub(guards.get()).epoch : 0),
        (guard, body) => startQuery(guard, body, options),
        queryShape,
      );
    },
  };
}
