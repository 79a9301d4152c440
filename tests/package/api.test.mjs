// The built package as an app sees it: imported by name, loaded with init(), driven through
// the README's dashboard flow. Node has no localStorage, so these guards use storage:
// "memory"; the localStorage rules are covered by the browser tests (tests/web.rs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import init, { JobGuard, classifyCancelResponse, isGuardError } from "superset-job-guard";

const wasm = await readFile(new URL("../../pkg/superset_job_guard_bg.wasm", import.meta.url));
await init({ module_or_path: wasm });

// Exactly the 202 body of Superset's chart-data call (see shared/superset-contract.md).
const created = {
  channel_id: "1095c1c9-b6b1-444d-aa83-8e323b32831f",
  job_id: "10a0bd9a-03c8-4737-9345-f4234ba86512",
  user_id: "1",
  status: "pending",
  errors: [],
  result_url: null,
};

function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail("expected a throw");
}

test("the dashboard flow: login, recordJob, checkCancel, logout", async () => {
  const guard = new JobGuard({ storage: "memory" });
  assert.deepEqual(guard.login({ userId: 1 }), { purged: 0 });
  assert.deepEqual(guard.session, { userId: "1", channelId: null, guestKey: null });

  const record = guard.recordJob(created);
  assert.equal(record.job_id, created.job_id);
  assert.equal(record.user_id, "1");
  assert.equal(record.result_url, null, "null, never undefined");
  assert.deepEqual(record.errors, []);
  assert.equal(typeof record.created_at, "number");
  assert.equal(record.created_at, record.updated_at);
  assert.deepEqual(guard.session, { userId: "1", channelId: created.channel_id, guestKey: null });

  const check = guard.checkCancel(created.job_id);
  assert.equal(check.allowed, true);
  assert.deepEqual(check.job, record);

  const done = guard.applyEvent({ ...created, status: "done", result_url: "/api/v1/chart/data/qc-1", id: "1-0" });
  assert.equal(done.status, "done");
  assert.deepEqual(guard.checkCancel(created.job_id), {
    allowed: false,
    reason: "already_finished",
    message: `Job ${created.job_id} has already finished (done)`,
  });

  const { purged, stopped, ...rest } = guard.logout();
  assert.deepEqual({ purged, ...rest }, { purged: 1 });
  // Nothing was running: nothing to stop, settled at once.
  assert.ok(stopped instanceof Promise);
  assert.equal(await stopped, undefined);
  assert.equal(guard.session, null);
  assert.deepEqual(guard.jobs(), []);
  const refused = guard.checkCancel(created.job_id);
  assert.equal(refused.allowed, false);
  assert.equal(refused.reason, "no_session");
});

test("another user's job id is refused without a record, and never stored", () => {
  const guard = new JobGuard({ storage: "memory" });
  guard.login({ userId: "2" });
  const refused = guard.checkCancel(created.job_id);
  assert.equal(refused.allowed, false);
  assert.equal(refused.reason, "unknown_job");
  const err = thrown(() => guard.recordJob(created));
  assert.equal(err.code, "not_job_owner");
  assert.match(err.message, /^Not job owner/);
  assert.equal(guard.job(created.job_id), null);
});

test("errors are Error objects named GuardError with a code", () => {
  const cases = [
    [() => new JobGuard({ ttlSeconds: -1 }), "invalid_options"],
    [() => new JobGuard({ storage: "memory", nameSpace: "x" }), "invalid_options"],
    [() => new JobGuard({ storage: "memory" }).login({ user: 1 }), "invalid_session"],
    [() => new JobGuard({ storage: "memory" }).recordJob(created), "no_session"],
    [
      () => {
        const g = new JobGuard({ storage: "memory" });
        g.login({ userId: 1 });
        g.recordJob({ ...created, status: "queued" });
      },
      "invalid_job",
    ],
  ];
  for (const [fn, code] of cases) {
    const err = thrown(fn);
    assert.ok(err instanceof Error, `${code}: an Error instance`);
    assert.equal(err.name, "GuardError");
    assert.equal(err.code, code, err.message);
    assert.ok(isGuardError(err));
    assert.ok(err.message.length > 0);
  }
  assert.equal(isGuardError(new Error("other")), false);
  assert.equal(isGuardError(null), false);
  assert.equal(isGuardError({ name: "GuardError" }), false);
});

test("without localStorage (Node) the guard falls back to memory and says why", () => {
  const guard = new JobGuard();
  assert.equal(guard.storage.kind, "memory");
  assert.match(guard.storage.reason, /no window/);
  guard.login({ userId: 1 });
  guard.recordJob(created);
  assert.equal(guard.checkCancel(created.job_id).allowed, true);
  assert.deepEqual(new JobGuard({ storage: "memory" }).storage, { kind: "memory", reason: null });
});

test("the module keeps working after every error (no panic poisons it)", () => {
  const guard = new JobGuard({ storage: "memory" });
  for (const bad of [undefined, null, 42, "x", [], {}, { job_id: "__proto__" }, { user_id: {} }]) {
    assert.equal(thrown(() => guard.recordJob(bad)).name, "GuardError");
    assert.equal(thrown(() => guard.applyEvent(bad)).name, "GuardError");
    assert.equal(thrown(() => guard.login(bad)).name, "GuardError");
    assert.equal(guard.checkCancel(bad).allowed, false);
    assert.equal(guard.job(bad), null);
  }
  guard.login({ userId: null, channelId: "guest-abc" });
  const rec = guard.recordJob({ ...created, user_id: null, channel_id: "guest-abc" });
  assert.equal(rec.user_id, null);
  assert.equal(guard.checkCancel(rec.job_id).allowed, true);
});

test("cancel sends one POST through the app's fetch and resolves to an outcome", async () => {
  const calls = [];
  const answers = [503, 200];
  const guard = new JobGuard({
    storage: "memory",
    headers: { "X-CSRFToken": "csrf" },
    retry: { baseDelayMs: 1 },
    fetch: async (url, init) => {
      calls.push({ url, init });
      return new Response(null, { status: answers.shift() ?? 500 });
    },
  });
  guard.login({ userId: 1 });
  guard.recordJob(created);

  const outcome = await guard.cancel(created.job_id);
  assert.deepEqual(outcome, {
    outcome: "cancelled",
    jobId: created.job_id,
    message: "Job cancelled",
    retryable: false,
    httpStatus: 200,
    attempts: 2,
  });
  assert.equal(calls.length, 2);
  assert.equal(calls[0].url, `/api/v1/async_event/${created.job_id}/cancel`);
  assert.equal(calls[0].init.method, "POST");
  assert.equal(calls[0].init.credentials, "same-origin");
  assert.deepEqual(calls[0].init.headers, { "X-CSRFToken": "csrf" });
  assert.equal(guard.job(created.job_id).status, "cancelled");

  // Another user's job id: decided locally, nothing sent.
  const refused = await guard.cancel("10a0bd9a-0000-4737-9345-f4234ba86512");
  assert.equal(refused.outcome, "refused");
  assert.equal(refused.reason, "unknown_job");
  assert.equal(refused.attempts, 0);
  assert.equal(calls.length, 2);
});

test("classifyCancelResponse is the cancel table as a pure function", () => {
  assert.deepEqual(
    [200, 401, 403, 404, 429, 503, 418].map((s) => classifyCancelResponse(s).outcome),
    ["cancelled", "unauthenticated", "not_job_owner", "not_found", "failed", "failed", "failed"],
  );
  assert.equal(classifyCancelResponse(403).retryable, false);
  assert.match(classifyCancelResponse(403).message, /^Not job owner/);
  // Anything that is not a whole number from 0 to 999 is a failure, never a thrown TypeError.
  for (const odd of [Symbol("s"), 10n, "403", null, undefined, NaN, 403.5, {}]) {
    assert.deepEqual(
      { ...classifyCancelResponse(odd), message: undefined },
      { outcome: "failed", retryable: false, message: undefined },
      String(typeof odd),
    );
  }
  assert.equal(classifyCancelResponse(503).retryable, true);
});

test("an argument whose getter throws is a GuardError and leaves the guard whole", () => {
  const guard = new JobGuard({ storage: "memory" });
  guard.login({ userId: 1 });
  const hostile = { channel_id: "c", get job_id() { throw new Error("getter broke"); }, user_id: "1", status: "running" };
  assert.throws(() => guard.recordJob(hostile), (e) => isGuardError(e) && e.code === "invalid_job");
  assert.throws(() => guard.login(new Proxy({}, { get() { throw 7; } })), (e) => isGuardError(e) && e.code === "invalid_session");
  // Only the options may hold `fetch`: anywhere else it is an unknown key, refused as such.
  const err = thrown(() => guard.login({ userId: 1, fetch: 1 }));
  assert.equal(err.code, "invalid_session");
  assert.match(err.message, /unknown field `fetch`/);
  guard.recordJob({ channel_id: "c", job_id: "j", user_id: "1", status: "running" });
  assert.equal(guard.jobs().length, 1);
  // wasm-bindgen's free() takes the object back: it fails if an exception left it borrowed.
  guard.free();
});

test("after free(), every call throws a GuardError with code freed; free() again is fine", () => {
  const guard = new JobGuard({ storage: "memory" });
  guard.login({ userId: 1 });
  guard.free();
  for (const call of [
    () => guard.login({ userId: 1 }),
    () => guard.checkCancel("j"),
    () => guard.jobs(),
    () => guard.session,
    () => guard.storage,
    () => guard.cancel("j"),
  ]) {
    const err = thrown(call);
    assert.ok(isGuardError(err), String(err));
    assert.equal(err.code, "freed");
  }
  guard.free();
  assert.ok(new JobGuard({ storage: "memory" }) instanceof JobGuard);
});

test("the task contract: recordTasks, status changes, and a cancel through the app's fetch", async () => {
  const sent = [];
  const fetch = async (url, init) => {
    sent.push({ url, body: init.body, type: init.headers["Content-Type"] });
    return new Response(JSON.stringify({ message: "ok", action: "unsubscribed", task: {} }), {
      status: 200,
      headers: { "Content-Type": "application/json" },
    });
  };
  const guard = new JobGuard({ storage: "memory", contract: "task", fetch });
  assert.equal(thrown(() => guard.recordTasks({ task_ids: ["x"] })).code, "invalid_job");
  assert.equal(thrown(() => guard.recordTasks({ task_ids: [created.job_id] })).code, "no_session");
  guard.login({ userId: 1 });
  const [task] = guard.recordTasks({ task_ids: [created.job_id], cursor: "2026-09-01T10:00:00", tab_id: "tab-1" });
  assert.deepEqual(
    { channel_id: task.channel_id, status: task.status, tab_ids: task.tab_ids, user_id: task.user_id },
    { channel_id: null, status: "pending", tab_ids: ["tab-1"], user_id: "1" },
  );
  assert.equal(guard.applyTaskStatus({ task_id: created.job_id, status: "in_progress" }).status, "in_progress");
  const outcome = await guard.cancel(created.job_id);
  assert.equal(outcome.outcome, "left");
  assert.equal(outcome.action, "unsubscribed");
  assert.deepEqual(sent, [
    { url: `/api/v1/task/${created.job_id}/cancel`, body: '{"tab_id":"tab-1"}', type: "application/json" },
  ]);
  assert.equal(guard.job(created.job_id), null, "left: the record is gone");
  assert.equal(classifyCancelResponse(404, "task", { message: "Not found" }).outcome, "not_job_owner");
  assert.equal(classifyCancelResponse(404, "async_event", "<!DOCTYPE html>").outcome, "unsupported");
  assert.equal(thrown(() => classifyCancelResponse(200, "tasks")).code, "invalid_options");
  guard.free();
});

test("guests: a guest key at login, and another guest inherits nothing", () => {
  const guard = new JobGuard({ storage: "memory" });
  guard.login({ userId: null, guestKey: "guest-a" });
  assert.deepEqual(guard.session, { userId: null, channelId: null, guestKey: "guest-a" });
  guard.recordJob({ ...created, user_id: null });
  assert.equal(guard.jobs().length, 1);
  assert.equal(guard.jobs()[0].guest_key, "guest-a");
  assert.deepEqual(guard.login({ userId: null, guestKey: "guest-b" }), { purged: 1 });
  assert.deepEqual(guard.jobs(), []);
  assert.equal(thrown(() => guard.login({ userId: 1, guestKey: "k" })).code, "invalid_session");
  guard.free();
});
