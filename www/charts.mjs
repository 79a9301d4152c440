// The reference server's chart data: the rows a chart query answers, and Superset's synchronous
// chart data with its stop endpoint (PR #44552), for www/server.mjs.
//
// - Rows: a chart-data body names its `chart` and may name a `filter` (the demo's region); the
//   answer is Superset's shape, `{ result: [{ data, colnames, rowcount, ... }] }`, with rows that
//   depend only on the chart and the filter, so a test can compare them byte for byte.
// - Synchronous queries (`contract: "sync"`, Superset without GLOBAL_ASYNC_QUERIES): the request
//   is answered with its rows after `jobDurationMs`. It runs on the server until then, whether
//   the client is still there or not (a closed tab, an aborted fetch), unless
//   `POST /api/v1/chart/data/stop {"client_id"}` stops it: only the caller's own query of that
//   `client_id` is found (anything else is a 400, never a 404); a stopped request is answered
//   400 with Superset's message for a cancelled query.

const REGIONS = ["EMEA", "APAC", "Americas"];

/** Superset's chart-data answer for `body` (its `chart` and `filter`). */
export function resultFor(body = {}) {
  const chart = String(body.chart ?? "default");
  const filter = typeof body.filter === "string" ? body.filter : "all";
  const regions = filter === "all" ? REGIONS : REGIONS.filter((r) => r.toLowerCase() === filter.toLowerCase());
  let seed = 0;
  for (const c of `${chart}|${filter}`) seed = (seed * 31 + c.charCodeAt(0)) >>> 0;
  const data = regions.flatMap((region, i) =>
    ["Q1", "Q2", "Q3", "Q4"].map((quarter, q) => ({
      region,
      quarter,
      revenue: ((seed >>> (i + q)) % 900) + 100 + q * 10,
    })),
  );
  return {
    result: [
      {
        cache_key: `qc-${seed.toString(16)}`,
        colnames: ["region", "quarter", "revenue"],
        coltypes: [1, 1, 0],
        data,
        rowcount: data.length,
        status: "success",
        stacktrace: null,
        applied_filters: filter === "all" ? [] : [{ column: "region" }],
        rejected_filters: [],
      },
    ],
  };
}

/** Synchronous chart data and its stop endpoint, over the server's state. */
export function syncCharts(state) {
  /** The queries running: `{ who, clientId, filter, timer, respond, started }`. */
  state.syncRunning = [];
  /** Every stop asked for: `{ who, clientId, found }`. */
  state.stops = [];

  /** `POST /api/v1/chart/data` in the synchronous mode: answered after `jobDurationMs`. */
  function run(who, body) {
    const clientId = typeof body.client_id === "string" ? body.client_id : null;
    return new Promise((resolve) => {
      const query = { who, clientId, filter: String(body.filter ?? "all"), started: Date.now(), respond: resolve, timer: null };
      const duration = Math.max(0, Number(body.durationMs) || state.jobDurationMs);
      query.timer = setTimeout(() => {
        finish(query);
        if (body.fail) resolve({ status: 400, body: { errors: [{ message: "relation \"foo\" does not exist", error_type: "GENERIC_DB_ENGINE_ERROR" }] } });
        else resolve({ status: 200, body: resultFor(body) });
      }, duration);
      state.syncRunning.push(query);
    });
  }

  function finish(query) {
    clearTimeout(query.timer);
    state.syncRunning = state.syncRunning.filter((q) => q !== query);
  }

  /** `POST /api/v1/chart/data/stop {client_id}`: the caller's own query of that id, or a 400. */
  function stop(who, body) {
    const clientId = body?.client_id;
    if (typeof clientId !== "string" || clientId.length < 1 || clientId.length > 64) {
      return { status: 400, body: { message: { client_id: ["Length must be between 1 and 64."] } } };
    }
    const query = state.syncRunning.find((q) => q.who === who && q.clientId === clientId);
    state.stops.push({ who, clientId, found: Boolean(query) });
    if (!query) return { status: 400, body: { message: "No running query of yours with this client_id" } };
    finish(query);
    query.respond({ status: 400, body: { errors: [{ message: "The query was canceled", error_type: "QUERY_CANCELLED" }] } });
    return { status: 200, body: { message: "OK" } };
  }

  function stopAll() {
    for (const query of state.syncRunning) clearTimeout(query.timer);
    state.syncRunning = [];
  }

  return { run, stop, stopAll };
}
