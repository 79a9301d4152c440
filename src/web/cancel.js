// The cancel loop; src/web/cancel.rs says what it does and why. It decides nothing: `step`
// (Rust) is told what happened and answers -1 (send), a number of ms (wait), or the outcome.

const NETWORK_ERROR = -1;
const NO_ANSWER = -2;

export async function driveCancel(step, fetchFn, url, init, appSignal, logoutSignal) {
  const sources = [appSignal, logoutSignal].filter(Boolean);
  const controller = typeof AbortController === "function" ? new AbortController() : undefined;
  const signal = controller && controller.signal;
  const abort = () => controller.abort();
  if (signal) {
    init.signal = signal;
    for (const s of sources) s.addEventListener("abort", abort);
  }
  const aborted = () => sources.some((s) => s.aborted) || (!!signal && signal.aborted);
  try {
    let next = step(NO_ANSWER, undefined, aborted());
    while (typeof next === "number") {
      if (next < 0) {
        const [status, retryAfter] = await send(fetchFn, url, init);
        next = step(status, retryAfter, aborted());
      } else {
        await sleep(next, signal);
        next = step(NO_ANSWER, undefined, aborted());
      }
    }
    return next;
  } finally {
    if (signal) for (const s of sources) s.removeEventListener("abort", abort);
  }
}

// One request: [status] or [status, Retry-After]; [NETWORK_ERROR] if it threw, rejected or
// resolved to something without an integer status in 0..=999.
async function send(fetchFn, url, init) {
  try {
    const response = await (fetchFn || globalThis.fetch).call(globalThis, url, init);
    const status = response.status;
    if (!Number.isInteger(status) || status < 0 || status > 999) return [NETWORK_ERROR];
    let retryAfter;
    try {
      const value = response.headers.get("Retry-After");
      if (typeof value === "string") retryAfter = value;
    } catch {
      // No readable header: as if there were none.
    }
    return [status, retryAfter];
  } catch {
    return [NETWORK_ERROR];
  }
}

// Waits `ms`, or less if `signal` aborts first; not at all without timers.
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (typeof setTimeout !== "function" || (signal && signal.aborted)) return resolve();
    const done = () => {
      clearTimeout(timer);
      if (signal) signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (signal) signal.addEventListener("abort", done);
  });
}
