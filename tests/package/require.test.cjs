// The package under `require`, as Node, Jest and ts-jest load it: the CommonJS build (its
// `require` export condition), ready once required, the same guard.
const { test } = require("node:test");
const assert = require("node:assert/strict");

const guardPackage = require("superset-job-guard");
const { JobGuard, classifyCancelResponse, isGuardError } = guardPackage;

test("require() gives the real guard, ready at once, with the ES entry's API", async () => {
  assert.equal(require.resolve("superset-job-guard").endsWith("js/node.cjs"), true);
  // Code written for the ES entry (`await init()`, or a transpiler's `.default`) runs unchanged.
  assert.equal(guardPackage.__esModule, true);
  await guardPackage.default();
  const guard = new JobGuard({ namespace: "require-check" });
  assert.equal(guard.storage.kind, "memory", "no localStorage in Node");
  guard.login({ userId: 1 });
  const record = guard.recordJob({
    channel_id: "chan-1",
    job_id: "job-1",
    user_id: "1",
    status: "running",
    errors: [],
    result_url: null,
  });
  assert.equal(guard.checkCancel(record.job_id).allowed, true);
  assert.equal(guard.checkCancel("someone-elses").reason, "unknown_job");
  assert.throws(() => guard.recordJob({ ...record, job_id: "other", user_id: "2" }), (e) => isGuardError(e) && e.code === "not_job_owner");
  assert.equal(classifyCancelResponse(403).outcome, "not_job_owner");
  // A cancel through an app's fetch, as in a test suite with a mocked server.
  const calls = [];
  const mocked = new JobGuard({
    storage: "memory",
    fetch: async (url) => {
      calls.push(url);
      return new Response(null, { status: 200 });
    },
  });
  mocked.login({ userId: 1 });
  mocked.recordJob(record);
  assert.equal((await mocked.cancel("job-1")).outcome, "cancelled");
  assert.deepEqual(calls, ["/api/v1/async_event/job-1/cancel"]);
  guard.free();
  assert.throws(() => guard.jobs(), (e) => isGuardError(e) && e.code === "freed");
});
