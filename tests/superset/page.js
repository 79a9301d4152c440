// The dashboard flow on a real Superset 6.1.0, through the built package: who is signed in
// (GET /api/v1/me/), chart queries (202 + job metadata), the async event stream (polled, its
// position in Superset's own localStorage key), cancel, logout. Driven by superset.test.mjs.
// Served under Superset's Content-Security-Policy: where it forbids WebAssembly, init()'s
// rejection is left on the page (window.initFailure) and there is no flow.
import init, { JobGuard, isGuardError } from "/guard/js/index.js";

// What the page's policy refused, as the browser reports it.
const violations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, disposition: e.disposition }),
);
window.violations = () => violations;

let initError = null;
try {
  await init();
} catch (e) {
  initError = e;
}
if (initError) {
  window.initFailure = {
    isGuardError: isGuardError(initError),
    name: initError.name,
    code: initError.code,
    message: initError.message,
    cause: initError.cause ? `${initError.cause.name}: ${initError.cause.message}` : null,
  };
  document.body.dataset.init = "failed";
} else {
  window.flow = createFlow();
  document.body.dataset.init = "loaded";
}
document.body.dataset.ready = "true";

/** The flow the test drives, once the module is loaded. */
function createFlow() {
  let csrf = null;
  // Called as the guard's chart-data request leaves (a test aborts it there).
  let onChartPost = null;
  // Every request the guard made ("METHOD /path": its cancels, follow()'s polls, query()'s),
  // in order.
  const requested = [];
  const guard = new JobGuard({
    // Superset checks CSRF on every POST but chart data: the cancel carries the token.
    fetch: (url, init) => {
      const request = `${init?.method ?? "GET"} ${new URL(String(url), location.href).pathname}`;
      requested.push(request);
      const sent = fetch(url, { ...init, headers: { ...init.headers, "X-CSRFToken": csrf } });
      if (request === "POST /api/v1/chart/data") onChartPost?.();
      return sent;
    },
    retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 200 },
  });

  async function getJson(path) {
    const response = await fetch(path, { credentials: "same-origin" });
    return { status: response.status, body: await response.json().catch(() => null) };
  }

  const datasetId = Number(new URLSearchParams(location.search).get("dataset"));

  /** The chart's body: the test's dataset, counted by label. */
  const chartBody = ({ force = true, extra = {} } = {}) => ({
    datasource: { id: datasetId, type: "table" },
    force,
    queries: [{ columns: ["label"], metrics: ["count"], row_limit: 10 }],
    result_format: "json",
    result_type: "full",
    ...extra,
  });

  /** POST /api/v1/chart/data for the test's dataset: its status and JSON body. */
  async function chartQuery(options) {
    const response = await fetch("/api/v1/chart/data", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(chartBody(options)),
    });
    return { status: response.status, body: await response.json() };
  }

  /** guard.query() of the chart; `abortWhenRecorded` aborts it (or signs out, with
   * `logoutWhenRecorded`) as soon as its 202 is recorded, from the guard's own change, and
   * `abortWhenSent` as its chart-data request leaves. The
   * outcome without its result, the rows, what the guard requested meanwhile, for a
   * logout the time its `stopped` took, and for an abort whose stop is cancelling the job,
   * `cancel(id)` asked in the same task the outcome came in, while that stop's request is
   * still out: so it is that request's outcome, and the test does not race its answer. */
  async function query({ force = true, abortWhenRecorded = false, logoutWhenRecorded = false, abortWhenSent = false } = {}) {
    const controller = new AbortController();
    onChartPost = abortWhenSent ? () => controller.abort() : null;
    const before = requested.length;
    let stopped = null;
    const unsubscribe = guard.subscribe((change) => {
      if (change.type !== "jobs_changed" || change.source !== "local") return;
      if (abortWhenRecorded) controller.abort();
      if (logoutWhenRecorded && !stopped) {
        const start = performance.now();
        stopped = guard.logout().stopped.then(() => performance.now() - start);
      }
    });
    const outcome = await guard.query(chartBody({ force }), { signal: controller.signal });
    unsubscribe();
    onChartPost = null;
    const { result, ...rest } = outcome;
    const cancel = abortWhenRecorded && rest.cancelling?.length ? await guard.cancel(rest.cancelling[0]) : null;
    return {
      outcome: rest,
      cancel,
      rows: result?.result?.[0]?.data ?? null,
      requested: requested.slice(before),
      stoppedMs: stopped ? await stopped : null,
    };
  }

  return {
    guard,
    /** The page load: sign the guard in as Superset's user. */
    async signIn() {
      const me = await getJson("/api/v1/me/");
      if (me.status !== 200) return { status: me.status };
      csrf = (await getJson("/api/v1/security/csrf_token/")).body.result;
      return { status: 200, userId: me.body.result.id, ...guard.login({ userId: me.body.result.id }) };
    },
    /** An async chart query; its 202 body recorded as it is. */
    async runChart() {
      const { status, body } = await chartQuery();
      if (status !== 202) return { status, body };
      return { status: 202, body, record: guard.recordJob(body) };
    },
    /** An async chart query whose 202 body is handed to waitFor (which records it), aborted
     * after `abortAfterMs` if given; the app starts no follow() of its own. */
    async runAndWait({ abortAfterMs } = {}) {
      const { status, body } = await chartQuery();
      if (status !== 202) return { status, body };
      const controller = new AbortController();
      const waiting = guard.waitFor(body, { signal: controller.signal });
      if (abortAfterMs !== undefined) setTimeout(() => controller.abort(), abortAfterMs);
      const outcome = await waiting;
      const cancel = outcome.cancelling.length ? await guard.cancel(body.job_id) : null;
      return { status, body, outcome, cancel, record: guard.job(body.job_id) };
    },
    /** Polls the async event stream until the job's record is terminal (or time runs out). */
    async pollUntilFinished(jobId, timeoutMs = 60_000) {
      const events = [];
      const end = Date.now() + timeoutMs;
      while (Date.now() < end) {
        const lastId = localStorage.getItem("last_async_event_id") ?? "";
        const { status, body } = await getJson(`/api/v1/async_event/?last_id=${encodeURIComponent(lastId)}`);
        if (status === 200) {
          for (const event of body.result) {
            events.push({ event, applied: guard.applyEvent(event) });
            localStorage.setItem("last_async_event_id", event.id);
          }
        }
        const record = guard.job(jobId);
        if (record && ["done", "error", "cancelled"].includes(record.status)) return { record, events };
        await new Promise((r) => setTimeout(r, 250));
      }
      return { record: guard.job(jobId), events, timedOut: true };
    },
    query,
    /** The chart-data request with a field 6.1.0's schema does not know (a client_id). */
    chartWithClientId: () => chartQuery({ extra: { client_id: "sjg-test-1" } }),
    /** Starts follow() (Superset's own cadence unless told). */
    follow(options) {
      window.flow.stop = guard.follow(options);
    },
    stopFollowing: () => window.flow.stop?.(),
    /** Waits, without polling, until follow() has brought the job's record to a final status. */
    async waitUntilFinished(jobId, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      while (Date.now() < end) {
        const record = guard.job(jobId);
        if (record && ["done", "error", "cancelled"].includes(record.status)) {
          return { record };
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return { record: guard.job(jobId), timedOut: true };
    },
    /** The polls of the event stream this page's guard made. */
    polls: () => requested.filter((r) => r === "GET /api/v1/async_event/"),
    cancel: (jobId) => guard.cancel(jobId),
    checkCancel: (jobId) => guard.checkCancel(jobId),
    jobs: () => guard.jobs(),
    recordJob(body) {
      try {
        return { record: guard.recordJob(body) };
      } catch (e) {
        return { error: { name: e.name, code: e.code, message: e.message } };
      }
    },
    async logout() {
      await fetch("/logout/", { credentials: "same-origin" });
      return guard.logout();
    },
  };
}

