// The reference server's task contract (today's Superset task framework,
// shared/superset-tasks-contract.md), over HTTP with a cookie-keeping client.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { start } from "../../www/server.mjs";
import { Client as BaseClient } from "./client.mjs";

let server, base, app;

before(async () => {
  ({ server, url: base, app } = await start({ port: 0, jobDurationMs: 60_000 }));
});

after(() => server.close());

/** The shared browser stand-in, on this file's server, with the task calls. */
class Client extends BaseClient {
  constructor() {
    super(base, app);
  }
  chart(chart, tab_id) {
    return this.request("POST", "/api/v1/chart/data", tab_id ? { chart, tab_id } : { chart });
  }
  cancel(uuid, body) {
    return this.request("POST", `/api/v1/task/${uuid}/cancel`, body, { "content-type": "application/json" });
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test("the default contract is the task framework's: 202 with task ids, /me says so", async () => {
  const alice = new Client();
  await alice.signIn(1);
  assert.equal((await alice.request("GET", "/api/v1/me/")).data.contract, "task");
  const { status, data } = await alice.chart("t-202", "tab-1");
  assert.equal(status, 202);
  assert.deepEqual(Object.keys(data).sort(), ["cursor", "tab_id", "task_ids"]);
  assert.match(data.task_ids[0], UUID);
  assert.equal(data.tab_id, "tab-1");
  assert.equal((await alice.request("POST", "/api/v1/async_event/x/cancel")).status, 404);
  assert.equal((await new Client().request("POST", "/api/v1/chart/data", {})).status, 400, "CSRF first");
});

test("two users share a task: the first to cancel leaves it, the last aborts it", async () => {
  const alice = new Client();
  const bob = new Client();
  await alice.signIn(1);
  await bob.signIn(2);
  const a = await alice.chart("t-shared");
  const b = await bob.chart("t-shared");
  const [uuid] = a.data.task_ids;
  assert.equal(b.data.task_ids[0], uuid, "one task for one query");
  const carol = new Client();
  await carol.signIn(3);
  assert.deepEqual((await carol.cancel(uuid, {})).status, 404, "not a subscriber: invisible");
  assert.equal((await carol.request("GET", `/api/v1/task/${uuid}/status`)).status, 404);
  const left = await alice.cancel(uuid, {});
  assert.equal(left.status, 200);
  assert.equal(left.data.action, "unsubscribed");
  assert.equal((await bob.request("GET", `/api/v1/task/${uuid}/status`)).data.status !== "aborted", true);
  assert.equal((await alice.cancel(uuid, {})).status, 404, "alice left: invisible to her now");
  const aborted = await bob.cancel(uuid, {});
  assert.equal(aborted.data.action, "aborted");
  assert.equal((await bob.cancel(uuid, {})).status, 422, "finished");
  assert.deepEqual((await bob.cancel(uuid, {})).data, { message: "Task could not be aborted." });
});

test("per-tab subscriptions detach one tab; unknown body fields are a 500; force is 403", async () => {
  const alice = new Client();
  await alice.signIn(1);
  const { data } = await alice.chart("t-tabs", "tab-a");
  await alice.chart("t-tabs", "tab-b");
  const [uuid] = data.task_ids;
  assert.equal((await alice.cancel(uuid, { tab_id: "tab-a", reason: "x" })).status, 500);
  assert.equal((await alice.cancel(uuid, "not json")).status, 500);
  assert.equal((await alice.cancel(uuid, { force: true })).status, 403);
  const detached = await alice.cancel(uuid, { tab_id: "tab-a" });
  assert.equal(detached.data.action, "detached");
  const aborted = await alice.cancel(uuid, { tab_id: "tab-b" });
  assert.equal(aborted.data.action, "aborted", "the last tab aborts");
  const body = app.cancelRequests(uuid).map((r) => r.body);
  assert.deepEqual(body.at(-1), { tab_id: "tab-b" });
});

test("status_changes: the caller's tasks since the cursor, floored to seconds", async () => {
  const alice = new Client();
  await alice.signIn(1);
  const first = await alice.request("GET", "/api/v1/task/status_changes");
  assert.deepEqual(first.data.statuses, {});
  assert.equal((await alice.request("GET", "/api/v1/task/status_changes?cursor=nope")).status, 400);
  const { data } = await alice.chart("t-poll");
  const [uuid] = data.task_ids;
  // A cursor a few hundred ms after the change still sees it: floored to the second.
  const cursor = new Date(Date.now() + 1).toISOString().replace("Z", "");
  const changes = await alice.request("GET", `/api/v1/task/status_changes?cursor=${cursor}`);
  assert.equal(changes.status, 200);
  assert.equal(changes.data.statuses[uuid].status, "pending");
  const bob = new Client();
  await bob.signIn(2);
  const his = await bob.request("GET", `/api/v1/task/status_changes?cursor=${data.cursor}`);
  assert.equal(his.data.statuses[uuid], undefined, "only the caller's tasks");
});
