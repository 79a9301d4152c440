// The reference server's own rules: it is what the end-to-end tests trust, so it is tested
// against the contract directly, over HTTP, with a small cookie-keeping client.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { start, resolveStatic, compareEventIds } from "../../www/server.mjs";
import { Client as BaseClient } from "./client.mjs";

let server, base, app, expiring;

before(async () => {
  ({ server, url: base, app } = await start({ port: 0, jobDurationMs: 60_000, contract: "async_event" }));
  expiring = await start({ port: 0, jwtExpirationSeconds: 0, contract: "async_event" });
});

after(() => {
  server.close();
  expiring.server.close();
});

/** The shared browser stand-in, on this file's server, with the async_event calls. */
class Client extends BaseClient {
  constructor(root = base) {
    super(root, app);
  }
  startJob(body = {}) {
    return this.request("POST", "/api/v1/chart/data", body);
  }
  cancel(jobId) {
    return this.request("POST", `/api/v1/async_event/${encodeURIComponent(jobId)}/cancel`);
  }
}

test("static files stay inside www/, pkg/ and js/", () => {
  assert.match(resolveStatic("/"), /www\/index\.html$/);
  assert.match(resolveStatic("/pkg/superset_job_guard.js"), /pkg\/superset_job_guard\.js$/);
  assert.match(resolveStatic("/js/index.js"), /js\/index\.js$/);
  for (const bad of ["/../Cargo.toml", "/pkg/../Cargo.toml", "/js/../Cargo.toml", "/js/../src/lib.rs", "/%2e%2e/Cargo.toml", "/%00", "/%E0%A4%A"]) {
    assert.equal(resolveStatic(bad), null, bad);
  }
});

test("event ids order as Redis stream ids", () => {
  assert.ok(compareEventIds("1607471525180-1", "1607471525180-0") > 0);
  assert.ok(compareEventIds("1607471525181-0", "1607471525180-9") > 0);
  assert.equal(compareEventIds("5-0", "5-0"), 0);
});

test("validate_session: a channel per cookie, a new one when the user changes", async () => {
  const c = new Client();
  await c.request("GET", "/");
  const anonymous = c.token();
  assert.ok(anonymous.channel);
  assert.equal(anonymous.sub, undefined, "no sub for anonymous users");
  assert.ok(anonymous.exp > Date.now() / 1000);

  await c.request("POST", "/login", { user: "1" });
  const alice = c.token();
  assert.equal(alice.sub, "1");
  assert.notEqual(alice.channel, anonymous.channel);
  await c.request("GET", "/api/v1/me/");
  assert.equal(c.channel(), alice.channel, "same user: same channel");

  await c.request("POST", "/logout");
  assert.notEqual(c.channel(), alice.channel);
  await c.request("POST", "/login", { user: "1" });
  assert.notEqual(c.channel(), alice.channel, "the same user after re-login gets a new channel");
});

test("chart data: 202 with exactly build_job_metadata's body; 401 and CSRF first", async () => {
  const stranger = new Client();
  assert.equal((await stranger.startJob()).status, 400, "no CSRF token");

  const c = new Client();
  await c.signIn("1");
  const res = await c.startJob();
  assert.equal(res.status, 202);
  assert.deepEqual(Object.keys(res.data), ["channel_id", "job_id", "user_id", "status", "errors", "result_url"]);
  assert.equal(res.data.channel_id, c.channel());
  assert.match(res.data.job_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(res.data.user_id, "1");
  assert.equal(res.data.status, "pending");
  assert.deepEqual(res.data.errors, []);
  assert.equal(res.data.result_url, null);

  c.cookies.delete("async-token");
  assert.equal((await c.startJob()).status, 401, "no async-token cookie");
});

test("the event stream is scoped to the caller's channel and reads after last_id", async () => {
  const alice = new Client();
  const bob = new Client();
  await alice.signIn("1");
  await bob.signIn("2");
  const { data: job } = await alice.startJob({ durationMs: 400 });
  let status, data, mine;
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    ({ status, data } = await alice.request("GET", "/api/v1/async_event/"));
    mine = data.result.filter((e) => e.job_id === job.job_id);
    if (mine.some((e) => e.status === "done")) break;
  }
  assert.equal(status, 200);
  assert.deepEqual(mine.map((e) => e.status), ["running", "done"]);
  assert.match(mine[1].result_url, /^\/api\/v1\/chart\/data\/qc-[0-9a-f]{32}$/);
  assert.match(mine[1].id, /^\d+-\d+$/);
  const after = await alice.request("GET", `/api/v1/async_event/?last_id=${mine[0].id}`);
  assert.deepEqual(after.data.result.map((e) => e.id), [mine[1].id]);
  const other = await bob.request("GET", "/api/v1/async_event/");
  assert.ok(other.data.result.every((e) => e.channel_id === bob.channel()));
  assert.ok(!other.data.result.some((e) => e.job_id === job.job_id));
  const { status: unauthenticated } = await new Client().request("GET", "/api/v1/async_event/");
  assert.equal(unauthenticated, 401);
});

test("cancel: 401 without cookie, 403 for another user or channel, 404 unknown, 200 owner", async () => {
  const alice = new Client();
  await alice.signIn("1");
  const { data: job } = await alice.startJob();

  const bob = new Client();
  await bob.signIn("2");
  const forbidden = await bob.cancel(job.job_id);
  assert.equal(forbidden.status, 403);
  assert.deepEqual(forbidden.data, { message: "Not authorized to cancel this job" });

  const nocookie = new Client();
  await nocookie.request("GET", "/");
  nocookie.headers["X-CSRFToken"] = (await nocookie.request("GET", "/api/v1/security/csrf_token/")).data.result;
  nocookie.cookies.delete("async-token");
  assert.equal((await nocookie.cancel(job.job_id)).status, 401);

  assert.deepEqual((await alice.cancel("no-such-job")).data, { message: "Job not found or already completed" });
  assert.equal((await alice.cancel("no-such-job")).status, 404);

  const ok = await alice.cancel(job.job_id);
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.data, { result: { job_id: job.job_id, status: "cancelled" } });
  const events = app.state.events.filter((e) => e.job_id === job.job_id);
  assert.deepEqual(events.map((e) => e.status).filter((s) => s !== "running"), ["cancelled"]);
  assert.equal((await alice.cancel(job.job_id)).status, 404, "terminal: the record is gone");
});

test("the same user in a new channel cannot cancel the old channel's job", async () => {
  const alice = new Client();
  await alice.signIn("1");
  const { data: job } = await alice.startJob();
  await alice.request("POST", "/logout");
  await alice.request("POST", "/login", { user: "1" });
  assert.notEqual(alice.channel(), job.channel_id);
  assert.equal((await alice.cancel(job.job_id)).status, 403);
});

test("guests: channel from the guest token, user_id null, no cookie needed", async () => {
  const guest = new Client();
  const { data } = await guest.signIn("guest");
  assert.ok(data.guestToken);
  const { status, data: job } = await guest.startJob();
  assert.equal(status, 202);
  assert.equal(job.user_id, null);
  assert.match(job.channel_id, /^guest-[0-9a-f]{32}$/);
  const again = await guest.startJob();
  assert.equal(again.data.channel_id, job.channel_id, "deterministic per token");

  const other = new Client();
  await other.signIn("guest");
  assert.equal((await other.cancel(job.job_id)).status, 403, "another guest token");
  const unknownToken = await new Client().request("POST", `/api/v1/async_event/${job.job_id}/cancel`, undefined, {
    "X-GuestToken": "forged",
  });
  assert.equal(unknownToken.status, 401);
  assert.equal((await guest.cancel(job.job_id)).status, 200);
});

test("an expired async-token is refused and re-minted", async () => {
  const c = new Client(expiring.url);
  await c.signIn("1");
  const before = c.cookies.get("async-token");
  assert.equal((await c.startJob()).status, 401);
  assert.notEqual(c.cookies.get("async-token"), before, "a new cookie after the request");
});

test("the test-only fault switch answers the next cancels, then the real table", async () => {
  const alice = new Client();
  await alice.signIn("1");
  const { data: job } = await alice.startJob();
  app.state.faults.cancel.push(503, { status: 429, retryAfter: 2 });
  const first = await alice.cancel(job.job_id);
  const second = await alice.cancel(job.job_id);
  assert.equal(first.status, 503);
  assert.equal(second.status, 429);
  assert.equal(second.headers.get("retry-after"), "2");
  assert.equal((await alice.cancel(job.job_id)).status, 200);
  assert.deepEqual(app.cancelRequests(job.job_id).map((r) => r.status), [503, 429, 200]);
});
