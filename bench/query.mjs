// npm run bench:query: what a dashboard's superseded queries cost the server, in headless
// Chromium against the reference server (www/server.mjs) with a slow warehouse. One tab shows
// `charts=20` charts; their filter changes `changes=3` times, `every=1000` ms apart, while every
// query takes `duration=5000` ms on the server; the last filter's charts are awaited. Three
// clients, on each of the server's modes (`modes=sync,async_event,task`):
// - guard: `guard.query(body, { signal })`; a new filter aborts the old queries' signals.
// - waitFor: the README's pattern before query(): the app POSTs (its request never aborted) and
//   hands a 202 to `guard.waitFor(body, { signal })`; a new filter aborts the waits (a 202 that
//   comes after is recorded and cancelled at once); a 200 is the result.
// - superset: Superset's own frontend, in plain JS: a new filter aborts the request (no stop
//   for a synchronous query); its own poller (500 ms, doubling to 30 s while quiet) waits for a
//   202's job or tasks; on the task framework a superseded query's tasks are cancelled with the
//   tab's id, on async_event nothing is (6.1.0 has no cancel endpoint); a done job's
//   result_url is read, a task's result is the same POST again.
// Counted at the server (its 'request' listener and its own list of what runs, sampled every
// 50 ms): the requests by kind; the query-seconds the server spent (every running query,
// integrated, until nothing runs), and how many of them went to superseded filters; the
// superseded queries still running 0.5 s after the last change and when the last chart was
// drawn; the time from the last filter change to the last chart drawn. Before them, on each
// mode, the storm: `storm=50` supersedes of `stormCharts=4` charts in 0.3 s (`storm=0`: none).
// Writes target/bench/query.json.
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";

import { start } from "../www/server.mjs";
import { launch } from "../tests/e2e/browser.mjs";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split("=")));
const MODES = (args.modes ?? "sync,async_event,task").split(",");
const CLIENTS = (args.clients ?? "guard,waitFor,superset").split(",");
const CHARTS = Number(args.charts ?? 20);
const CHANGES = Number(args.changes ?? 3);
const EVERY_MS = Number(args.every ?? 1000);
const DURATION_MS = Number(args.duration ?? 5000);
const FILTERS = ["all", "emea", "apac", "americas"];
const machine = () => `${os.type()} ${os.release()} ${os.arch()}, ${os.cpus()[0]?.model ?? "cpu"} × ${os.cpus().length}`;

/** What kind of request a method and path are. */
function kind(method, pathname) {
  if (pathname === "/api/v1/chart/data" && method === "POST") return "chart data";
  if (pathname === "/api/v1/chart/data/stop") return "stop";
  if (/\/cancel$/.test(pathname)) return "cancel";
  if (pathname === "/api/v1/async_event/" || pathname === "/api/v1/task/status_changes") return "poll";
  if (/^\/api\/v1\/chart\/data\/qc-/.test(pathname)) return "result";
  if (pathname.startsWith("/api/v1/task/")) return "task read";
  return null;
}

/** In the page: signs in, reads the CSRF token, makes the guard. */
async function setUp({ contract }) {
  await fetch("/login", { method: "POST", headers: { "content-type": "application/json" }, body: '{"user":"1"}' });
  const csrf = (await (await fetch("/api/v1/security/csrf_token/")).json()).result;
  const { default: init, JobGuard } = await import("/js/index.js");
  await init();
  const guard = new JobGuard({ contract: contract === "task" ? "task" : "async_event", tabId: "bench-tab", headers: { "X-CSRFToken": csrf } });
  guard.login({ userId: 1 });
  window.bench = { guard, csrf, contract };
}

/** In the page: the dashboard, as `client` runs it; resolves when the last filter's charts are
 * drawn, with when the last change was made and when the last chart was drawn. */
async function dashboard({ client, charts, filters, everyMs, durationMs }) {
  const { guard, csrf, contract } = window.bench;
  const headers = { "content-type": "application/json", "X-CSRFToken": csrf };
  const TERMINAL = new Set(["success", "failure", "aborted", "timed_out", "done", "error", "cancelled"]);
  // Superset's own poller: one loop while anything waits.
  const loop = { waiters: new Map(), delay: 500, running: false, cursor: null, lastId: null };
  async function poll() {
    let changes = [];
    try {
      if (contract === "task") {
        const body = await (await fetch(`/api/v1/task/status_changes?cursor=${encodeURIComponent(loop.cursor ?? "")}`)).json();
        loop.cursor = body.cursor ?? loop.cursor;
        changes = Object.entries(body.statuses ?? {}).map(([id, s]) => [id, s.status, null]);
      } else {
        const body = await (await fetch(loop.lastId ? `/api/v1/async_event/?last_id=${loop.lastId}` : "/api/v1/async_event/")).json();
        if (body.result.length) loop.lastId = body.result.at(-1).id;
        changes = body.result.map((e) => [e.job_id, e.status, e.result_url]);
      }
    } catch {}
    let progress = false;
    for (const [id, status, resultUrl] of changes) {
      const waiter = loop.waiters.get(id);
      if (!waiter || !TERMINAL.has(status)) continue;
      progress = true;
      loop.waiters.delete(id);
      waiter({ status, resultUrl });
    }
    const wait = progress ? (loop.delay = 500) : loop.delay;
    if (!progress) loop.delay = Math.min(loop.delay * 2, 30_000);
    if (loop.waiters.size) setTimeout(poll, wait);
    else loop.running = false;
  }
  const awaitJob = (id, cursor) =>
    new Promise((resolve) => {
      if (contract === "task" && loop.cursor === null) loop.cursor = cursor;
      loop.waiters.set(id, resolve);
      if (!loop.running) {
        loop.running = true;
        loop.delay = 500;
        setTimeout(poll, 500);
      }
    });

  const post = (body, signal) => fetch("/api/v1/chart/data", { method: "POST", headers, body: JSON.stringify(body), signal });
  const drawn = [];
  /** One chart's query under `client`; settles when drawn (true) or superseded (false). */
  function run(body, signal) {
    if (client === "guard") return guard.query(body, { signal }).then((o) => o.outcome === "done");
    if (client === "waitFor") {
      return post(body).then(async (response) => {
        if (response.status === 200) return !signal.aborted;
        const outcome = await guard.waitFor(await response.json(), { signal });
        if (outcome.outcome !== "done") return false;
        if (contract === "task") return (await post(body)).status === 200 && !signal.aborted;
        const url = guard.job(outcome.jobIds[0])?.result_url;
        return (await fetch(url)).ok && !signal.aborted;
      });
    }
    // Superset's frontend.
    return post(body, signal).then(
      async (response) => {
        if (response.status === 200) return true;
        const accepted = await response.json();
        const ids = contract === "task" ? accepted.task_ids : [accepted.job_id];
        const done = Promise.all(ids.map((id) => awaitJob(id, accepted.cursor)));
        const superseded = new Promise((resolve) => signal.addEventListener("abort", () => resolve(null), { once: true }));
        const ended = await Promise.race([done, superseded]);
        if (ended === null) {
          for (const id of ids) loop.waiters.delete(id);
          if (contract === "task") {
            for (const id of ids) fetch(`/api/v1/task/${id}/cancel`, { method: "POST", headers, body: JSON.stringify({ tab_id: "bench-tab" }) });
          }
          return false;
        }
        if (ended.some((e) => !["success", "done"].includes(e.status))) return false;
        if (contract === "task") return (await post(body, signal)).status === 200;
        return (await fetch(ended[0].resultUrl, { signal })).ok;
      },
      () => false,
    ).catch(() => false); // a request its next filter aborted
  }

  let controllers = [];
  let current = [];
  let lastChange = 0;
  for (const [i, filter] of filters.entries()) {
    for (const c of controllers) c.abort();
    lastChange = Date.now();
    controllers = [];
    current = [];
    for (let n = 0; n < charts; n++) {
      const controller = new AbortController();
      controllers.push(controller);
      const body = { chart: `bench-${n}`, filter, durationMs, tab_id: "bench-tab" };
      current.push(run(body, controller.signal).then((ok) => ok && drawn.push(Date.now())));
    }
    if (i < filters.length - 1) await new Promise((r) => setTimeout(r, everyMs));
  }
  await Promise.all(current);
  return { lastChange, lastDrawn: Math.max(...drawn.slice(-charts)), drawn: drawn.length };
}

async function one(browser, mode, client, { charts = CHARTS, filters = FILTERS.slice(0, CHANGES + 1), everyMs = EVERY_MS } = {}) {
  const { server, url, app } = await start({ port: 0, contract: mode });
  const requests = {};
  server.prependListener("request", (req) => {
    const k = kind(req.method, new URL(req.url, "http://x").pathname);
    if (k) requests[k] = (requests[k] ?? 0) + 1;
  });
  const final = filters.at(-1);
  const running = () => {
    const r = app.running();
    return r.sync + r.jobs + r.tasks;
  };
  // Every 50 ms: how many queries run, and how many of them are of a superseded filter.
  let busyMs = 0;
  let wastedMs = 0;
  let last = Date.now();
  const samples = [];
  const sampler = setInterval(() => {
    const now = Date.now();
    const { filters: running } = app.running();
    const superseded = running.filter((f) => f !== final).length;
    busyMs += running.length * (now - last);
    wastedMs += superseded * (now - last);
    samples.push([now, superseded]);
    last = now;
  }, 50);
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${url}bench-blank`);
    await page.evaluate(setUp, { contract: mode });
    for (const k of Object.keys(requests)) delete requests[k];
    busyMs = 0;
    wastedMs = 0;
    samples.length = 0;
    last = Date.now();
    const timing = await page.evaluate(dashboard, { client, charts, filters, everyMs, durationMs: DURATION_MS });
    const leftRunning = running();
    const t = Date.now();
    while (running() > 0 && Date.now() - t < 60_000) await new Promise((r) => setTimeout(r, 50));
    const ranOnMs = Date.now() - t;
    clearInterval(sampler);
    if (errors.length) throw new Error(errors.join("\n"));
    const after = samples.find(([t]) => t >= timing.lastChange + 500);
    return {
      mode,
      client,
      drawn: timing.drawn,
      lastChartAfterLastChangeMs: timing.lastDrawn - timing.lastChange,
      supersededRunning500msAfterLastChange: after ? after[1] : null,
      supersededStillRunningWhenDrawn: leftRunning,
      serverRanOnMs: ranOnMs,
      serverQuerySeconds: Math.round(busyMs / 100) / 10,
      supersededQuerySeconds: Math.round(wastedMs / 100) / 10,
      requests: { ...requests },
    };
  } finally {
    clearInterval(sampler);
    await context.close();
    server.close();
  }
}

// The storm: `stormCharts=4` charts whose filter changes `storm=50` times in 0.3 s (every 6 ms),
// the red team's; what is still running on the server after it is what nothing stopped.
const STORM = Number(args.storm ?? 50);
const STORM_CHARTS = Number(args.stormCharts ?? 4);
const stormFilters = Array.from({ length: STORM + 1 }, (_, i) => `storm-${i}`);

const browser = await launch();
const results = [];
const storms = [];
try {
  for (const mode of MODES) {
    for (const client of STORM ? CLIENTS.filter((c) => c !== "waitFor") : []) {
      const r = await one(browser, mode, client, { charts: STORM_CHARTS, filters: stormFilters, everyMs: Math.round(300 / STORM) });
      storms.push(r);
      const req = Object.entries(r.requests).map(([k, v]) => `${k} ${v}`).join(", ");
      console.log(
        `storm ${mode.padEnd(11)} ${client.padEnd(8)} ${STORM} supersedes of ${STORM_CHARTS} charts in 0.3 s: superseded still running ` +
          `0.5 s after the last change ${r.supersededRunning500msAfterLastChange}, when the last chart was drawn ${r.supersededStillRunningWhenDrawn}; ` +
          `query-seconds ${r.serverQuerySeconds} (superseded ${r.supersededQuerySeconds}); last chart ${r.lastChartAfterLastChangeMs} ms after the last change; requests: ${req}`,
      );
    }
    for (const client of CLIENTS) {
      const r = await one(browser, mode, client);
      results.push(r);
      const req = Object.entries(r.requests).map(([k, v]) => `${k} ${v}`).join(", ");
      console.log(
        `${mode.padEnd(11)} ${client.padEnd(8)} drawn ${r.drawn}/${CHARTS}; query-seconds ${r.serverQuerySeconds} ` +
          `(superseded ${r.supersededQuerySeconds}); superseded running 0.5 s after the last change ${r.supersededRunning500msAfterLastChange}, ` +
          `when the last chart was drawn ${r.supersededStillRunningWhenDrawn}; last chart ${r.lastChartAfterLastChangeMs} ms after the last change; requests: ${req}`,
      );
    }
  }
} finally {
  await browser.close();
}
const minimum = (CHARTS * DURATION_MS) / 1000;
console.log(`(the last filter's charts alone need ${minimum} query-seconds)`);
await mkdir("target/bench", { recursive: true });
await writeFile(
  "target/bench/query.json",
  JSON.stringify({ measured: new Date().toISOString(), machine: machine(), charts: CHARTS, changes: CHANGES, everyMs: EVERY_MS, durationMs: DURATION_MS, results, storms }, null, 1),
);
