// The ES-module entry before init() (its own process: node --test runs each file apart, so
// nothing here has loaded the .wasm yet): isGuardError answers, every other export throws the
// GuardError `not_initialized`; then init() rejects clearly where no WebAssembly answers, and
// after a successful init() every export works.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";

import * as guardPackage from "superset-job-guard";
import init, { JobGuard, classifyCancelResponse, isGuardError } from "superset-job-guard";
import * as glue from "../../pkg/superset_job_guard.js";

const WASM = await readFile(new URL("../../pkg/superset_job_guard_bg.wasm", import.meta.url));

const isClass = (f) => /^class\b/.test(Function.prototype.toString.call(f));

test("before init(): isGuardError works, and every other export throws not_initialized", () => {
  assert.equal(isGuardError(Object.assign(new Error("x"), { name: "GuardError", code: "freed" })), true);
  assert.equal(isGuardError({ name: "GuardError", code: "no_session" }), true, "any object of the shape");
  assert.equal(isGuardError(new Error("x")), false);
  assert.equal(isGuardError({ name: "GuardError" }), false, "no code");
  assert.equal(isGuardError({ name: "GuardError", code: 1 }), false, "a code that is not a string");
  assert.equal(isGuardError(null), false);
  assert.equal(isGuardError("GuardError"), false);
  const hostile = new Proxy({}, { get: () => { throw new Error("trap"); } });
  assert.equal(isGuardError(hostile), false, "a throwing getter is not a GuardError");

  // Every function the entry exports, but init, initSync, isGuardError and the internal
  // (`__`) ones: a new export that is not guarded fails here.
  const names = Object.keys(guardPackage).filter(
    (n) => typeof guardPackage[n] === "function" && !["default", "initSync", "isGuardError"].includes(n) && !n.startsWith("__"),
  );
  assert.deepEqual(names.sort(), ["JobGuard", "classifyCancelResponse"]);
  for (const name of names) {
    const f = guardPackage[name];
    const e = (() => {
      try {
        if (isClass(f)) new f();
        else f(403);
      } catch (e) {
        return e;
      }
      assert.fail(`${name} did not throw before init()`);
    })();
    assert.ok(e instanceof Error, `${name}: an Error`);
    assert.equal(e.name, "GuardError", `${name}: ${e}`);
    assert.equal(e.code, "not_initialized", name);
    assert.match(e.message, /await init\(\)/, name);
    assert.equal(isGuardError(e), true);
  }
  assert.throws(() => new JobGuard({ storage: "memory" }), /new JobGuard\(\) was called before/);
  assert.throws(() => classifyCancelResponse(403), /classifyCancelResponse\(\) was called before/);
});

/** Serves `routes` (path -> [status, content-type, body]) on loopback while `fn` runs. */
async function serve(routes, fn) {
  const hits = [];
  const server = createServer((req, res) => {
    hits.push(req.url);
    const [status, type, body] = routes[req.url] ?? [404, "text/plain", "not found"];
    res.writeHead(status, type ? { "content-type": type } : {}).end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    return await fn(`http://127.0.0.1:${server.address().port}`, hits);
  } finally {
    server.close();
  }
}

const HTML = "<!doctype html><html><body>index.html</body></html>";

test("init() never compiles an answer that is not WebAssembly, and says what it fetched", async () => {
  await serve({ "/app.html": [200, "text/html", HTML], "/gone.wasm": [404, "text/plain", "nope"] }, async (base, hits) => {
    for (const [given, said] of [
      [`${base}/app.html`, /\/app\.html \(200 text\/html, not WebAssembly\)/],
      [new URL(`${base}/gone.wasm`), /\/gone\.wasm \(404\)/],
      [`${base}/app.html`, /200 text\/html/],
    ]) {
      const e = await init({ module_or_path: given }).then(
        () => assert.fail("init() resolved"),
        (e) => e,
      );
      assert.equal(isGuardError(e), true, String(e));
      assert.equal(e.code, "wasm_not_found");
      assert.match(e.message, said);
      assert.match(e.message, /init\(\{ module_or_path: url \}\)/);
      assert.match(e.message, /"output": "pkg" \} to angular\.json.s assets/);
    }
    assert.deepEqual(hits, ["/app.html", "/gone.wasm", "/app.html"], "each failed init() may be tried again");
    // A Response the app fetched itself is checked the same way.
    const e = await init({ module_or_path: fetch(`${base}/app.html`) }).catch((e) => e);
    assert.equal(e.code, "wasm_not_found");
  });
  // A server-side render's relative URL (no page to resolve it against) and an unreachable host.
  const relative = await init({ module_or_path: "/_next/static/media/superset_job_guard_bg.wasm" }).catch((e) => e);
  assert.equal(relative.code, "wasm_not_found");
  assert.match(relative.message, /\/_next\/static\/media\/superset_job_guard_bg\.wasm \(/);
  // Still not loaded: the exports still refuse.
  assert.throws(() => classifyCancelResponse(403), (e) => e.code === "not_initialized");
});

test("init() with bytes that are WebAssembly: application/wasm or not, then every export works", async () => {
  await serve({ "/octet.wasm": [200, "application/octet-stream", WASM] }, async (base) => {
    await init({ module_or_path: `${base}/octet.wasm` });
  });
  await init(); // once per page: the first load's promise
  const guard = new JobGuard({ storage: "memory" });
  guard.login({ userId: 1 });
  assert.equal(guard.session.userId, "1");
  assert.equal(classifyCancelResponse(403).outcome, "not_job_owner");
  guard.free();
  const freed = (() => {
    try {
      guard.jobs();
    } catch (e) {
      return e;
    }
  })();
  assert.equal(freed.code, "freed");
  // The JS isGuardError and the module's own agree. (The entry, pkg/index.js, holds its own copy
  // of the glue since issue #43; this one is loaded here to ask the module.)
  glue.initSync({ module: WASM });
  const samples = [freed, new Error("x"), { name: "GuardError", code: "x" }, { name: "GuardError", code: 2 }, null, 7, "s", () => {}];
  for (const s of samples) assert.equal(isGuardError(s), glue.isGuardError(s), String(s));
});
