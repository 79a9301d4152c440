// The ES-module entry outside a browser (Node's ES modules, Vitest, server rendering): init()
// with no argument reads the .wasm from disk (fetch() cannot read files).
import { test } from "node:test";
import assert from "node:assert/strict";

import init, { JobGuard } from "superset-job-guard";

test("init() with no argument loads the module in Node's ES modules", async () => {
  await init();
  await init(); // once per page: a second call is the first one's
  const guard = new JobGuard({ storage: "memory" });
  guard.login({ userId: 1 });
  assert.equal(guard.session.userId, "1");
});
