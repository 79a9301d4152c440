// superset-job-guard/react's useWaitFor in a real browser, from the packed tarball: an app on
// React 17, 18 and 19 (each its own `npm install`), bundled by Vite in React's development build
// (StrictMode mounts every effect twice on 18 and 19), against the reference server's task
// contract on the same origin. The page (wait-for/wait.jsx) renders before the module is loaded.
// Asserted from the server's side: StrictMode's mount, unmount and mount again of a probe starts
// one wait and cancels nothing; a new input aborts the old
// wait and the old task's cancel is sent (with this tab's id); a settled wait is not cancelled;
// an input of the same JSON starts no second wait; unmounting, or a null input, cancels.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

import { build as viteBuild } from "vite";

import { launch } from "../e2e/browser.mjs";
import { createApp } from "../../www/server.mjs";
import { resultFor } from "../../www/charts.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OUT = join(ROOT, "target", "consumers", "wait-for");
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

let browser;
let tarball;

before(async () => {
  const packs = join(OUT, "pack");
  await rm(packs, { force: true, recursive: true });
  await mkdir(packs, { recursive: true });
  const [{ filename }] = JSON.parse(
    execFileSync("npm", ["pack", "--json", "--pack-destination", packs], { cwd: ROOT, encoding: "utf8" }),
  );
  tarball = join(packs, filename);
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

/** An app on React `version` with the tarball, installed as a user installs it; the page's
 * sources; Vite's development build of it. */
async function reactApp(version) {
  const dir = join(OUT, `react-${version}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const dependencies = {
    react: `^${version}.0.0`,
    "react-dom": `^${version}.0.0`,
    ...(version < 18 && { "use-sync-external-store": "^1.2.0" }),
    "superset-job-guard": `file:${tarball}`,
  };
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: `wait-for-react-${version}`, private: true, type: "module", dependencies }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, stdio: "pipe" });
  const installed = JSON.parse(await readFile(join(dir, "node_modules", "react", "package.json"), "utf8")).version;
  assert.equal(installed.split(".")[0], String(version), `React ${installed}`);
  for (const file of ["index.html", "wait.jsx"]) await copyFile(join(HERE, "wait-for", file), join(dir, file));
  await copyFile(join(HERE, "wait-for", version < 18 ? "mount-17.js" : "mount-18.js"), join(dir, "mount.js"));
  const out = join(dir, "dist");
  await viteBuild({
    root: dir,
    logLevel: "error",
    configFile: false,
    esbuild: { jsx: "automatic" },
    mode: "development",
    define: { "process.env.NODE_ENV": JSON.stringify("development") },
    build: { outDir: out, emptyOutDir: true, target: "es2022", minify: false },
  });
  return out;
}

/** Serves `dir` with the reference server's API on one origin while `fn` runs. */
async function serve(dir, fn, contract = "task") {
  const app = createApp({ jobDurationMs: 120_000, contract });
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://127.0.0.1").pathname;
    if (path.startsWith("/api/") || path === "/login" || path === "/logout") return app.handle(req, res);
    const file = normalize(join(dir, path === "/" ? "index.html" : decodeURIComponent(path)));
    if (!file.startsWith(dir + sep)) return res.writeHead(404).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    return await fn(`http://127.0.0.1:${server.address().port}/`, app);
  } finally {
    server.close();
    app.stop();
  }
}

/** The page at `url` in a new context, ready; `errors` collects the page's errors. */
async function openPage(url) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && !/^Failed to load resource/.test(m.text()) && errors.push(m.text()));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]", { state: "attached" });
  return { context, page, errors };
}

async function waitForHook(dir) {
  await serve(dir, async (url, app) => {
    const { context, page, errors } = await openPage(url);
    const cancels = (uuid) => app.cancelRequests(uuid).map((r) => r.body);
    const query = (chart, durationMs) => page.evaluate(([c, d]) => window.harness.query(c, d), [chart, durationMs]);
    const show = (input, probe = true) => page.evaluate(([i, p]) => window.harness.show(i, p), [input, probe]);
    const state = () => page.evaluate(() => window.state);
    const settle = () => page.waitForTimeout(600);

    // A: rendered before the module is loaded (waiting, no guard); the wait starts with the guard.
    const a = await query("A");
    assert.equal(a.status, 202);
    const [taskA] = a.body.task_ids;
    await show(a.body);
    await page.waitForFunction(() => window.guard && window.waitCalls > 0);
    await settle();
    assert.deepEqual(await page.evaluate(() => window.beforeGuard), { waiting: true, outcome: null, jobIds: null }, "before the guard: waiting");
    assert.equal(await page.evaluate(() => window.waitCalls), 1, "one wait");
    assert.deepEqual(cancels(taskA), [], "nothing cancelled");
    assert.equal(app.state.tasks.get(taskA).status, "in_progress");
    assert.deepEqual(await state(), { waiting: true, outcome: null, jobIds: null });
    assert.equal((await page.evaluate(() => window.guard.job(window.guard.jobs()[0].job_id))).job_id, taskA, "the 202 body was recorded");

    // The same body as a new object (its JSON the same): no second wait, nothing cancelled.
    await show(JSON.parse(JSON.stringify(a.body)));
    await settle();
    assert.equal(await page.evaluate(() => window.waitCalls), 1);
    assert.deepEqual(cancels(taskA), []);

    // B supersedes A: A's wait is aborted and its task cancelled with this tab's id; A's late
    // `aborted` outcome is never shown; B ends `done`.
    const b = await query("B", 1500);
    const [taskB] = b.body.task_ids;
    await page.evaluate(() => {
      window.states = [];
    });
    await show(b.body);
    await page.waitForFunction(() => window.state.outcome === "done", null, { timeout: 15_000 });
    assert.deepEqual(cancels(taskA), [{ tab_id: "tab-wait" }], "the old task's cancel");
    assert.equal(app.state.tasks.get(taskA).status, "aborted");
    assert.deepEqual(await state(), { waiting: false, outcome: "done", jobIds: [taskB] });
    const shown = await page.evaluate(() => window.states.map((s) => s.outcome));
    assert.ok(!shown.includes("aborted"), `A's aborted outcome is not shown: ${JSON.stringify(shown)}`);
    assert.deepEqual(cancels(taskB), []);

    // C after a settled B: B is not cancelled (it ended); C waits.
    const c = await query("C");
    const [taskC] = c.body.task_ids;
    await show(c.body);
    await page.waitForFunction(() => window.state.waiting === true && window.state.outcome === null);
    await settle();
    assert.deepEqual(cancels(taskB), []);
    assert.deepEqual(cancels(taskC), []);

    // Unmounting the probe (the provider stays) aborts C's wait: its task is cancelled.
    await show(null, false);
    for (let i = 0; i < 50 && cancels(taskC).length === 0; i += 1) await page.waitForTimeout(100);
    assert.deepEqual(cancels(taskC), [{ tab_id: "tab-wait" }], "unmount cancels");
    assert.equal(app.state.tasks.get(taskC).status, "aborted");

    // D: a fresh probe mounted while the guard exists, so StrictMode (React 18 and 19) runs its
    // effect, its cleanup and its effect again: one wait, nothing cancelled, the task runs on.
    const d = await query("D");
    const [taskD] = d.body.task_ids;
    const calls = await page.evaluate(() => window.waitCalls);
    await show(d.body);
    await page.waitForFunction(() => window.state.waiting === true);
    await settle();
    assert.equal(await page.evaluate(() => window.waitCalls), calls + 1, "StrictMode starts one wait");
    assert.deepEqual(cancels(taskD), [], "StrictMode's unmount and mount again cancel nothing");
    assert.equal(app.state.tasks.get(taskD).status, "in_progress");

    // A null input aborts it.
    await show(null);
    for (let i = 0; i < 50 && cancels(taskD).length === 0; i += 1) await page.waitForTimeout(100);
    assert.deepEqual(cancels(taskD), [{ tab_id: "tab-wait" }], "a null input cancels");
    assert.deepEqual(await state(), { waiting: false, outcome: null, jobIds: null });

    assert.deepEqual(errors, []);
    await context.close();
  });
}

async function chartDataHook(dir) {
  await serve(
    dir,
    async (url, app) => {
      const { context, page, errors } = await openPage(url);
      const chart = (body, probe = true) => page.evaluate(([b, p]) => window.harness.chart(b, p), [body, probe]);
      const state = () => page.evaluate(() => window.chart);
      const until = async (what, check) => {
        for (let i = 0; i < 150; i += 1) {
          if (await check()) return;
          await page.waitForTimeout(100);
        }
        assert.fail(`timed out waiting for ${what}`);
      };
      const found = () => app.state.stops.filter((s) => s.found).map((s) => s.clientId);

      // A: pending before the guard; one query once it comes (StrictMode starts one), running.
      const a = { chart: "Revenue by region", filter: "emea" };
      await chart(a);
      await until("A's query running", () => app.running().sync === 1);
      await page.waitForTimeout(500);
      assert.equal(await page.evaluate(() => window.queryCalls), 1, "StrictMode starts one query");
      assert.equal(app.running().sync, 1);
      assert.deepEqual(found(), []);
      assert.equal((await state()).pending, true);

      // B supersedes A: A stopped on the server by its client_id; B's rows, byte for byte; A's
      // aborted outcome never shown.
      await page.evaluate(() => {
        window.charts = [];
      });
      app.state.jobDurationMs = 300;
      const b = { chart: "Revenue by region", filter: "apac" };
      await chart(b);
      await until("B done", async () => (await state()).outcome === "done");
      assert.equal(found().length, 1, JSON.stringify(app.state.stops));
      assert.deepEqual((await state()).rows, resultFor(b).result[0].data);
      const shown = await page.evaluate(() => window.charts.map((c) => c.outcome));
      assert.ok(!shown.includes("aborted"), `A's outcome is not shown: ${JSON.stringify(shown)}`);
      await until("nothing running", () => app.running().sync === 0);

      // The same body as a new object: nothing sent again.
      const calls = await page.evaluate(() => window.queryCalls);
      await chart(JSON.parse(JSON.stringify(b)));
      await page.waitForTimeout(300);
      assert.equal(await page.evaluate(() => window.queryCalls), calls);

      // null runs nothing, and shows nothing.
      await chart(null);
      await page.waitForTimeout(200);
      assert.deepEqual(await state(), { pending: false, outcome: null, reason: null, clientId: null, rows: null });

      // C, then the probe unmounted: C stopped on the server.
      app.state.jobDurationMs = 60_000;
      await chart({ chart: "Orders per quarter", filter: "all" });
      await until("C running", () => app.running().sync === 1);
      await chart(null, false);
      await until("C stopped", () => found().length === 2 && app.running().sync === 0);

      // D before anyone is signed in: pending, nothing sent; it runs at the sign-in.
      app.state.jobDurationMs = 200;
      await page.evaluate(() => window.guard.logout().stopped);
      const before = await page.evaluate(() => window.queryCalls);
      const d = { chart: "Margin by region", filter: "emea" };
      await chart(d);
      await page.waitForTimeout(300);
      assert.equal(await page.evaluate(() => window.queryCalls), before, "nothing sent without a session");
      assert.deepEqual(await state(), { pending: true, outcome: null, reason: null, clientId: null, rows: null });
      await page.evaluate(() => window.guard.login({ userId: 1 }));
      await until("D done", async () => (await state()).outcome === "done");
      assert.deepEqual((await state()).rows, resultFor(d).result[0].data);
      const first = (await state()).clientId;

      // Another user signs in, the body the same: it runs again as them, and the first user's
      // outcome is not shown meanwhile.
      await page.evaluate(() => {
        window.charts = [];
      });
      await page.evaluate(async () => {
        await fetch("/login", { method: "POST", headers: { "content-type": "application/json" }, body: '{"user":"2"}' });
        window.guard.login({ userId: 2 });
      });
      await until("D done for user 2", async () => (await state()).outcome === "done" && (await state()).clientId !== first);
      assert.equal(await page.evaluate(() => window.queryCalls), before + 2);
      const seen = await page.evaluate(() => window.charts.map((c) => c.clientId));
      assert.ok(seen.every((id) => id !== first), `user 1's outcome not shown to user 2: ${JSON.stringify(seen)}`);

      assert.deepEqual(errors, []);
      await context.close();
    },
    "sync",
  );
}

const builds = new Map();
const appFor = async (version) => {
  if (!builds.has(version)) builds.set(version, await reactApp(version));
  return builds.get(version);
};

for (const version of [17, 18, 19]) {
  test(`useWaitFor on React ${version} (development build, StrictMode): starts once, a new input cancels the old query, unmount and null cancel`, async () => {
    await waitForHook(await appFor(version));
  });
  test(`useChartData on React ${version} (development build, StrictMode): one query per body, a new body stops the old one on the server and shows the new rows, unmount stops it, null runs nothing`, async () => {
    await chartDataHook(await appFor(version));
  });
}
