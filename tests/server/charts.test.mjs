// The reference server's chart data in each of its three modes, over HTTP: synchronous with the
// stop endpoint (PR #44552), 6.1.0's async_event job read at its result_url, and the task
// framework's warm cache once its task succeeded. Rows are the same for the same chart and filter.
import { test } from "node:test";
import assert from "node:assert/strict";

import { start } from "../../www/server.mjs";
import { resultFor } from "../../www/charts.mjs";
import { Client } from "./client.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function serve(t, options) {
  const served = await start({ port: 0, ...options });
  t.after(() => served.server.close());
  return served;
}

test("rows depend only on the chart and the filter, in Superset's shape", () => {
  const a = resultFor({ chart: "Revenue", filter: "emea" });
  assert.deepEqual(a, resultFor({ chart: "Revenue", filter: "emea", client_id: "x" }));
  assert.equal(a.result[0].rowcount, 4);
  assert.ok(a.result[0].data.every((row) => row.region === "EMEA"));
  assert.equal(resultFor({ chart: "Revenue" }).result[0].rowcount, 12);
  assert.notDeepEqual(resultFor({ chart: "Other" }), resultFor({ chart: "Revenue" }));
});

test("sync: a chart query answers its rows after it ran; the stop endpoint stops the caller's own, by client_id", async (t) => {
  const { url, app } = await serve(t, { contract: "sync", jobDurationMs: 300 });
  const alice = new Client(url, app);
  const bob = new Client(url, app);
  await alice.signIn(1);
  await bob.signIn(2);
  const done = await alice.request("POST", "/api/v1/chart/data", { chart: "c", client_id: "q1" });
  assert.equal(done.status, 200);
  assert.deepEqual(done.data, resultFor({ chart: "c" }));

  app.state.jobDurationMs = 60_000;
  const running = alice.request("POST", "/api/v1/chart/data", { chart: "c", client_id: "q2" });
  await sleep(100);
  assert.equal(app.running().sync, 1);
  // Another user's stop finds nothing (a 400, never a 404): it cannot reach alice's query.
  assert.equal((await bob.request("POST", "/api/v1/chart/data/stop", { client_id: "q2" })).status, 400);
  assert.equal(app.running().sync, 1);
  assert.equal((await alice.request("POST", "/api/v1/chart/data/stop", { client_id: "q2" })).status, 200);
  const stopped = await running;
  assert.equal(stopped.status, 400);
  assert.equal(stopped.data.errors[0].error_type, "QUERY_CANCELLED");
  assert.equal(app.running().sync, 0);
  assert.equal((await alice.request("POST", "/api/v1/chart/data/stop", {})).status, 400);
  // Which methods the stop URL takes: POST here (main's), not on 6.1.0's async_event mode.
  const options = await fetch(new URL("/api/v1/chart/data/stop", url), { method: "OPTIONS" });
  assert.equal(options.status, 200);
  assert.match(options.headers.get("allow"), /\bPOST\b/);
  // The task framework is off here: its routes answer a JSON 404.
  const off = await alice.request("GET", "/api/v1/task/status_changes");
  assert.equal(off.status, 404);
  assert.match(off.headers.get("content-type"), /json/);
});

test("sync: a query whose client went away runs on until it is stopped or done", async (t) => {
  const { url, app } = await serve(t, { contract: "sync", jobDurationMs: 60_000 });
  const alice = new Client(url, app);
  await alice.signIn(1);
  const controller = new AbortController();
  const cookie = [...alice.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const gone = fetch(new URL("/api/v1/chart/data", url), {
    method: "POST",
    headers: { ...alice.headers, cookie },
    body: JSON.stringify({ chart: "c", client_id: "q3" }),
    signal: controller.signal,
  }).catch(() => null);
  await sleep(100);
  controller.abort();
  await gone;
  await sleep(100);
  assert.equal(app.running().sync, 1, "the warehouse query runs on");
  assert.equal((await alice.request("POST", "/api/v1/chart/data/stop", { client_id: "q3" })).status, 200);
  assert.equal(app.running().sync, 0);
});

test("async_event: a job's result_url answers its rows; 6.1.0 has no stop endpoint", async (t) => {
  const { url, app } = await serve(t, { contract: "async_event", jobDurationMs: 300 });
  const alice = new Client(url, app);
  await alice.signIn(1);
  const accepted = await alice.request("POST", "/api/v1/chart/data", { chart: "c", filter: "apac" });
  assert.equal(accepted.status, 202);
  await sleep(700);
  const { data } = await alice.request("GET", "/api/v1/async_event/");
  const done = data.result.find((e) => e.status === "done");
  assert.ok(done?.result_url, JSON.stringify(data));
  const rows = await alice.request("GET", done.result_url);
  assert.equal(rows.status, 200);
  assert.deepEqual(rows.data, resultFor({ chart: "c", filter: "apac" }));
  assert.equal((await alice.request("POST", "/api/v1/chart/data/stop", { client_id: "x" })).status, 404);
  // As 6.1.0 answers it: the URL takes GET (its cache-key route), not POST.
  const options = await fetch(new URL("/api/v1/chart/data/stop", url), { method: "OPTIONS" });
  assert.equal(options.status, 200);
  assert.doesNotMatch(options.headers.get("allow"), /\bPOST\b/);
  // A body with a client_id is a 400 there (6.1.0's schema), the query not run.
  assert.equal((await alice.request("POST", "/api/v1/chart/data", { chart: "c", client_id: "x" })).status, 400);
});

test("task: once the task succeeded, the same request is a cache hit with its rows", async (t) => {
  const { url, app } = await serve(t, { contract: "task", jobDurationMs: 400 });
  const alice = new Client(url, app);
  await alice.signIn(1);
  const first = await alice.request("POST", "/api/v1/chart/data", { chart: "c", filter: "emea" });
  assert.equal(first.status, 202);
  await sleep(700);
  const again = await alice.request("POST", "/api/v1/chart/data", { chart: "c", filter: "emea" });
  assert.equal(again.status, 200);
  assert.deepEqual(again.data, resultFor({ chart: "c", filter: "emea" }));
  const other = await alice.request("POST", "/api/v1/chart/data", { chart: "c", filter: "apac" });
  assert.equal(other.status, 202, "another filter is another query");
});
