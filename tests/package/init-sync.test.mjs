// initSync(), as docs/api.md gives it (its own process: nothing here has loaded the .wasm
// before): from the file's bytes, the exports work at once, with no await; a second call, here
// with a compiled WebAssembly.Module, is the first one's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import init, { initSync, JobGuard, classifyCancelResponse, isGuardError } from "superset-job-guard";

const WASM = readFileSync(new URL("../../pkg/superset_job_guard_bg.wasm", import.meta.url));

test("initSync({ module }) with the .wasm's bytes: every export works at once", async () => {
  assert.throws(() => new JobGuard({ storage: "memory" }), (e) => isGuardError(e) && e.code === "not_initialized");
  const first = initSync({ module: WASM });
  const guard = new JobGuard({ storage: "memory" });
  assert.deepEqual(guard.login({ userId: 7 }), { purged: 0 });
  assert.equal(guard.session.userId, "7");
  assert.equal(classifyCancelResponse(403).outcome, "not_job_owner");
  assert.equal(initSync({ module: new WebAssembly.Module(WASM) }), first, "loaded once");
  // init() after it answers with the same exports, reading no file: with a URL that does
  // not exist, it still resolves.
  assert.equal(await init({ module_or_path: new URL("file:///nowhere/missing.wasm") }), first);
  guard.free();
});
