// The stores under the Vue, Svelte and Angular entries (js/stores.js), through the Svelte entry
// (which imports no framework), over a real guard in Node: values that stay the same object
// until a change, one cancel request per job, a chart's query superseded, gated on the session
// and stopped when its last subscriber goes. The frameworks themselves: tests/frameworks/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import init, { JobGuard } from "superset-job-guard";
import { createJobGuard } from "superset-job-guard/svelte";

const wasm = await readFile(new URL("../../pkg/superset_job_guard_bg.wasm", import.meta.url));
await init({ module_or_path: wasm });

const tick = () => new Promise((r) => setTimeout(r, 0));
const meta = (job_id) => ({ channel_id: "chan-1", job_id, user_id: "1", status: "pending", errors: [], result_url: null });

/** A server: chart data answers after `ms` (200 with the body's filter), its requests kept
 * (each one `answered` once it is); no stop endpoint (its OPTIONS answers 404). */
function server(ms = 20) {
  const requests = [];
  const fetch = (url, init = {}) => {
    const request = { url: String(url), method: init.method ?? "GET", body: init.body, signal: init.signal };
    requests.push(request);
    if (request.method === "OPTIONS") return Promise.resolve(new Response(null, { status: 404 }));
    if (/\/cancel$/.test(request.url)) return new Promise((r) => setTimeout(() => r(new Response("{}", { status: 200, headers: { "content-type": "application/json" } })), ms));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const { filter } = JSON.parse(init.body);
        request.answered = true;
        resolve(new Response(JSON.stringify({ result: [{ data: [{ filter }] }] }), { status: 200, headers: { "content-type": "application/json" } }));
      }, ms);
      init.signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new DOMException("aborted", "AbortError"));
      });
    });
  };
  return { fetch, requests, charts: () => requests.filter((r) => r.url.endsWith("/api/v1/chart/data")) };
}

async function until(predicate, what) {
  const end = Date.now() + 5000;
  while (!predicate()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test("on a server (no window) it makes no guard: every store is empty, nothing runs", async () => {
  const g = createJobGuard({ storage: "memory" });
  await tick();
  assert.equal(g.guard.get(), null);
  assert.deepEqual(g.jobs.get(), []);
  assert.equal(g.session.get(), null);
  const chart = g.chartData();
  const seen = [];
  const off = chart.subscribe((v) => seen.push(v));
  chart.run({ filter: "all" });
  assert.deepEqual(seen.at(-1), { outcome: null, result: null, pending: true });
  const outcome = await g.cancel("job-1").cancel();
  assert.equal(outcome.reason, "no_session");
  off();
});

test("session and jobs: the same object until the guard announces a change, this guard's or another's", () => {
  const guard = new JobGuard({ storage: "memory" });
  const g = createJobGuard({ guard });
  const jobs = [];
  const sessions = [];
  const offJobs = g.jobs.subscribe((v) => jobs.push(v));
  const offSession = g.session.subscribe((v) => sessions.push(v));
  assert.deepEqual(jobs, [[]]);
  assert.equal(g.jobs.get(), g.jobs.get(), "the same array while nothing changed");
  guard.login({ userId: 1 });
  guard.recordJob(meta("job-1"));
  assert.deepEqual(jobs.at(-1).map((j) => j.job_id), ["job-1"]);
  assert.equal(sessions.at(-1).userId, "1");
  guard.logout();
  assert.deepEqual(jobs.at(-1), []);
  assert.equal(sessions.at(-1), null);
  offJobs();
  offSession();
  const count = jobs.length;
  guard.login({ userId: 1 });
  guard.recordJob(meta("job-2"));
  assert.equal(jobs.length, count, "nothing after the unsubscribe");
  g.free(); // a guard the app passed is the app's to free
  assert.deepEqual(guard.jobs().map((j) => j.job_id), ["job-2"]);
  guard.free();
});

test("cancel: one request per job whoever asks, the outcome kept until dismissed or the session ends", async () => {
  const s = server();
  const guard = new JobGuard({ storage: "memory", fetch: s.fetch, cancelUrl: "/api/v1/async_event/{job_id}/cancel" });
  const g = createJobGuard({ guard });
  guard.login({ userId: 1 });
  guard.recordJob(meta("job-1"));
  const a = g.cancel("job-1");
  const b = g.cancel("job-1");
  const values = [];
  const offA = a.subscribe((v) => values.push(v));
  const offB = b.subscribe(() => {});
  const first = a.cancel();
  assert.equal(b.cancel(), first, "the running cancel's promise");
  assert.equal(a.get().pending, true);
  const outcome = await first;
  assert.equal(s.requests.filter((r) => r.url.endsWith("/cancel")).length, 1);
  assert.equal(b.get().outcome, outcome, "kept with the guard, for every store of the job");
  assert.equal(a.get().pending, false);
  a.dismiss();
  assert.equal(b.get().outcome, null);
  guard.recordJob(meta("job-2"));
  const second = g.cancel("job-2");
  const offC = second.subscribe(() => {});
  await second.cancel();
  assert.notEqual(second.get().outcome, null);
  guard.logout();
  assert.equal(second.get().outcome, null, "a session's end takes its outcomes");
  offA();
  offB();
  offC();
  guard.free();
});

test("chartData: pending until a sign-in, a new body stops the last query, the last subscriber's leaving stops it", async () => {
  const s = server(50);
  const guard = new JobGuard({ storage: "memory", fetch: s.fetch });
  const g = createJobGuard({ guard });
  const chart = g.chartData();
  const values = [];
  const off = chart.subscribe((v) => values.push(v));
  chart.run({ filter: "all" });
  await tick();
  assert.deepEqual(chart.get(), { outcome: null, result: null, pending: true });
  assert.equal(s.charts().length, 0, "nothing runs while nobody is signed in");
  guard.login({ userId: 1 });
  await until(() => s.charts().length === 1, "the query at the sign-in");
  chart.run({ filter: "all" }); // the same body again: nothing new
  chart.run({ filter: "emea" }); // a new one: the last is stopped
  await until(() => chart.get().result !== null, "the new body's result");
  assert.equal(s.charts().length, 2);
  // Nothing can stop it on this server, which has not said yet whether it accepts queries
  // (a 202 would name a job to cancel): kept until it answers, and its answer dropped.
  await until(() => s.charts()[0].signal.aborted || s.charts()[0].answered, "the superseded request ended");
  assert.deepEqual(chart.get().result, { result: [{ data: [{ filter: "emea" }] }] });
  assert.equal(chart.get().outcome.outcome, "done");
  assert.ok(!values.some((v) => v.result?.result?.[0]?.data?.[0]?.filter === "all"), "nothing of the superseded body shown");
  chart.run({ filter: "apac" });
  await until(() => s.charts().length === 3, "the third query");
  off(); // the component is gone: its query stopped
  await until(() => s.charts()[2].signal.aborted || s.charts()[2].answered, "the request ended with its last subscriber");
  assert.deepEqual(chart.get(), { outcome: null, result: null, pending: false });
  guard.free();
});

test("chartData: another user's sign-in runs the body again for them; a logout shows nothing of the last", async () => {
  const s = server(10);
  const guard = new JobGuard({ storage: "memory", fetch: s.fetch });
  const g = createJobGuard({ guard });
  const chart = g.chartData();
  const off = chart.subscribe(() => {});
  guard.login({ userId: 1 });
  chart.run({ filter: "all" });
  await until(() => chart.get().result !== null, "user 1's result");
  guard.login({ userId: 2 });
  assert.equal(chart.get().result, null, "user 1's rows are gone at once");
  await until(() => chart.get().result !== null, "user 2's result");
  assert.equal(s.charts().length, 2);
  guard.logout();
  assert.deepEqual(chart.get(), { outcome: null, result: null, pending: true });
  off();
  guard.free();
});

test("waitFor: a store of the wait; a new input aborts the last (its job cancelled), null runs nothing", async () => {
  const s = server(10);
  const guard = new JobGuard({ storage: "memory", fetch: s.fetch });
  const g = createJobGuard({ guard });
  guard.login({ userId: 1 });
  const wait = g.waitFor();
  const off = wait.subscribe(() => {});
  wait.run(meta("job-1"));
  assert.equal(wait.get().waiting, true);
  assert.deepEqual(guard.jobs().map((j) => j.job_id), ["job-1"], "the 202 body recorded");
  wait.run(null);
  assert.deepEqual(wait.get(), { outcome: null, waiting: false });
  const outcome = await guard.cancel("job-1"); // the abort's cancel, still running
  assert.equal(s.requests.filter((r) => r.url.endsWith("/cancel")).length, 1, "one cancel request");
  assert.equal(outcome.jobId, "job-1");
  off();
  guard.free();
});
