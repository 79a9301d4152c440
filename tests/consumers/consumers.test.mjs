// The package as an app's bundler sees it: `npm pack` makes the tarball a registry would get,
// it is unpacked as tests/consumers/node_modules/superset-job-guard (or `npm install`ed into a
// fresh app), and tests/consumers/app.js imports "superset-job-guard" by name and is bundled by
// webpack 5 (the bundler Superset's frontend uses) and by Vite 7, and served by their dev
// servers, each with the app's default configuration; each is loaded in headless Chromium and
// records and checks one job. (So a file missing from `files` fails here.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile, copyFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import * as esbuild from "esbuild";
import webpack from "webpack";
import WebpackDevServer from "webpack-dev-server";
import { build as viteBuild, createServer as createViteServer } from "vite";

import { launch } from "../e2e/browser.mjs";
import { firefoxDataset } from "./firefox.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OUT = join(ROOT, "target", "consumers");
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

let browser;
let tarball;

before(async () => {
  // The app resolves the package by name, installed from the tarball `npm pack` makes.
  const installed = join(HERE, "node_modules", "superset-job-guard");
  const packs = join(OUT, "pack");
  await rm(installed, { force: true, recursive: true });
  await rm(packs, { force: true, recursive: true });
  await mkdir(installed, { recursive: true });
  await mkdir(packs, { recursive: true });
  const [{ filename }] = JSON.parse(
    execFileSync("npm", ["pack", "--json", "--pack-destination", packs], { cwd: ROOT, encoding: "utf8" }),
  );
  tarball = join(packs, filename);
  execFileSync("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"]);
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

/** Serves `dir` on a free loopback port while `fn` runs; with `api` (the reference server's
 * app), its routes answer `/api/`, `/login` and `/logout` on the same origin; `headers` are
 * added to every file's answer. */
async function serve(dir, fn, api, headers = {}) {
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://127.0.0.1").pathname;
    if (api && (path.startsWith("/api/") || path === "/login" || path === "/logout")) return api.handle(req, res);
    const file = normalize(join(dir, path === "/" ? "index.html" : decodeURIComponent(path)));
    if (!file.startsWith(dir + sep)) return res.writeHead(404).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", ...headers }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    return await fn(`http://127.0.0.1:${server.address().port}/`);
  } finally {
    server.close();
  }
}

async function runInChromium(dir) {
  return serve(dir, async (url) => {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(url);
    await page.waitForSelector("body[data-result]", { state: "attached", timeout: 15_000 });
    const result = JSON.parse(await page.getAttribute("body", "data-result"));
    await page.close();
    return { result, errors };
  });
}

const expected = {
  storage: "local",
  allowed: true,
  refused: "unknown_job",
  error: "not_job_owner",
  afterFree: "freed",
};

/** webpack 5 over app.js with the app's default configuration, plus `extra`. */
function webpackConfig(dir, extra = {}) {
  return { mode: "production", context: HERE, entry: "./app.js", output: { path: dir, filename: "main.js" }, ...extra };
}

for (const [name, extra] of [
  ["its default configuration", {}],
  ["asyncWebAssembly on", { experiments: { asyncWebAssembly: true } }],
]) {
  test(`webpack 5 with ${name} bundles the package, the .wasm as an asset`, async () => {
    const dir = join(OUT, `webpack-${extra.experiments ? "async" : "default"}`);
    await rm(dir, { recursive: true, force: true });
    const stats = await new Promise((resolve, reject) =>
      webpack(webpackConfig(dir, extra), (err, s) => (err ? reject(err) : resolve(s))),
    );
    assert.equal(stats.hasErrors(), false, stats.toString("errors-only"));
    const emitted = stats.toJson({ assets: true }).assets.map((a) => a.name);
    assert.ok(emitted.some((n) => n.endsWith(".wasm")), `a .wasm asset: ${emitted}`);
    await writeFile(join(dir, "index.html"), '<!doctype html><body><script src="main.js"></script></body>');
    const { result, errors } = await runInChromium(dir);
    assert.deepEqual(errors, []);
    assert.deepEqual(result, expected);
  });
}

// ---- before init(), and under Superset's Content-Security-Policy ----

// Superset 6.1.0's default TALISMAN_CONFIG as Flask-Talisman sends it (a nonce per request in
// script-src; shared/superset-frontend-notes.md), with `script` as its script-src.
const talisman = (script) =>
  [
    "base-uri 'self'",
    "default-src 'self'",
    "img-src 'self' blob: data: https://apachesuperset.gateway.scarf.sh https://static.scarf.sh/",
    "worker-src 'self' blob:",
    "connect-src 'self' https://api.mapbox.com https://events.mapbox.com",
    "object-src 'none'",
    "style-src 'self' 'unsafe-inline'",
    `script-src ${script}`,
  ].join("; ");

const NONCE = "r4nd0mN0nce";

/** tests/consumers/guarded.js bundled by webpack 5 with its defaults, its page's script tag
 * carrying the nonce, as Superset's templates write it. */
async function guardedBundle() {
  const dir = join(OUT, "webpack-guarded");
  await rm(dir, { recursive: true, force: true });
  const stats = await new Promise((resolve, reject) =>
    webpack(webpackConfig(dir, { entry: "./guarded.js" }), (err, s) => (err ? reject(err) : resolve(s))),
  );
  assert.equal(stats.hasErrors(), false, stats.toString("errors-only"));
  await writeFile(join(dir, "index.html"), `<!doctype html><body><script nonce="${NONCE}" src="main.js"></script></body>`);
  return dir;
}

/** Opens `dir` served with `headers` and reads what guarded.js leaves on the page. */
async function guardedResult(dir, headers) {
  return serve(
    dir,
    async (url) => {
      const page = await browser.newPage();
      const errors = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(url);
      await page.waitForSelector("body[data-result]", { state: "attached", timeout: 15_000 });
      const result = JSON.parse(await page.getAttribute("body", "data-result"));
      await page.close();
      return { result, errors };
    },
    undefined,
    headers,
  );
}

const flowed = {
  beforeInit: "not_initialized",
  classifyBeforeInit: "not_initialized",
  init: "loaded",
  jobs: ["10a0bd9a-03c8-4737-9345-f4234ba86512"],
  classify: "not_job_owner",
};

test("before init() every export throws not_initialized; under Superset's default CSP init() rejects wasm_blocked; with 'wasm-unsafe-eval' it all works (webpack 5, Chromium)", async () => {
  const dir = await guardedBundle();

  const plain = await guardedResult(dir, {});
  assert.deepEqual(plain.errors, []);
  assert.match(plain.result.beforeInitMessage, /new JobGuard\(\) was called before .*await init\(\)/);
  delete plain.result.beforeInitMessage;
  assert.deepEqual(plain.result, flowed);

  const blocked = await guardedResult(dir, {
    "content-security-policy": talisman(`'self' 'strict-dynamic' 'nonce-${NONCE}'`),
  });
  assert.deepEqual(blocked.errors, []);
  assert.equal(blocked.result.beforeInit, "not_initialized", "the page's script ran: its nonce matched");
  assert.equal(blocked.result.init, "wasm_blocked", blocked.result.initMessage);
  assert.match(blocked.result.initMessage, /'wasm-unsafe-eval'/);
  assert.match(
    blocked.result.initMessage,
    /TALISMAN_CONFIG\["content_security_policy"\]\["script-src"\] = \["'self'", "'strict-dynamic'", "'wasm-unsafe-eval'"\]/,
  );
  assert.match(blocked.result.initMessage, /Content Security Policy/, "the browser's own words");

  const allowed = await guardedResult(dir, {
    "content-security-policy": talisman(`'self' 'strict-dynamic' 'nonce-${NONCE}' 'wasm-unsafe-eval'`),
  });
  assert.deepEqual(allowed.errors, []);
  delete allowed.result.beforeInitMessage;
  assert.deepEqual(allowed.result, flowed);
});

test("in Firefox ESR too: Superset's default CSP makes init() reject wasm_blocked; with 'wasm-unsafe-eval' it all works", async () => {
  const dir = await guardedBundle();
  for (const [script, init] of [
    [`'self' 'strict-dynamic' 'nonce-${NONCE}'`, "wasm_blocked"],
    [`'self' 'strict-dynamic' 'nonce-${NONCE}' 'wasm-unsafe-eval'`, "loaded"],
  ]) {
    const result = await serve(
      dir,
      async (url) => JSON.parse(await firefoxDataset(url, "result")),
      undefined,
      { "content-security-policy": talisman(script) },
    );
    assert.equal(result.beforeInit, "not_initialized");
    assert.equal(result.init, init, result.initMessage);
    if (init === "wasm_blocked") {
      assert.match(result.initMessage, /'wasm-unsafe-eval'.*TALISMAN_CONFIG/);
      assert.match(result.initMessage, /blocked by CSP/, "Firefox's own words");
    } else {
      assert.deepEqual(result.jobs, flowed.jobs);
    }
  }
});

/** Opens `url` in Chromium and reads the result app.js leaves on the page; `watch(page)` may
 * add listeners first. */
async function resultAt(url, watch = () => {}) {
  const page = await browser.newPage();
  watch(page);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // wasm-bindgen's warning when the .wasm comes with the wrong MIME type, and failed requests
  // (but the browser's own favicon probe).
  page.on("console", (m) => m.type() !== "log" && /instantiateStreaming|Wasm/i.test(m.text()) && errors.push(m.text()));
  page.on("response", (r) => r.status() >= 400 && !r.url().endsWith("/favicon.ico") && errors.push(`${r.status()} ${r.url()}`));
  await page.goto(url);
  await page.waitForSelector("body[data-result]", { state: "attached", timeout: 30_000 });
  const result = JSON.parse(await page.getAttribute("body", "data-result"));
  await page.close();
  return { result, errors };
}

/** A fresh app folder: its own package.json, and `npm install` (no flags) of `dependencies`
 * and the tarball, as a user runs it. */
async function freshApp(name, dependencies = {}) {
  const dir = join(OUT, name);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const pkg = { name, private: true, type: "module", dependencies: { ...dependencies, "superset-job-guard": `file:${tarball}` } };
  await writeFile(join(dir, "package.json"), JSON.stringify(pkg, null, 2));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, stdio: "pipe" });
  return dir;
}

/** A fresh app of app.js alone. */
async function plainApp(name) {
  const dir = await freshApp(name);
  await copyFile(join(HERE, "app.js"), join(dir, "app.js"));
  await writeFile(join(dir, "index.html"), '<!doctype html><body><script type="module" src="./app.js"></script></body>');
  return dir;
}

for (const [name, cacheDir] of [
  ["the app's default configuration", undefined],
  // Nx's Vite plugin sets one per project.
  ["a cacheDir of its own (node_modules/.vite/apps/demo, as Nx sets)", "node_modules/.vite/apps/demo"],
]) {
  test(`Vite 7's dev server, with ${name} (it pre-bundles the package)`, async () => {
    const dir = await plainApp(cacheDir ? "vite-dev-cachedir-app" : "vite-dev-app");
    const server = await createViteServer({
      root: dir,
      logLevel: "error",
      ...(cacheDir && { cacheDir }),
      server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false },
    });
    await server.listen();
    try {
      const { port } = server.httpServer.address();
      const wasm = [];
      const { result, errors } = await resultAt(`http://127.0.0.1:${port}/`, (p) =>
        p.on("response", (r) => r.url().endsWith(".wasm") && wasm.push(`${r.status()} ${new URL(r.url()).pathname}`)),
      );
      assert.deepEqual(errors, []);
      assert.deepEqual(result, expected);
      // The package's folder first, from its cache folder: one request, no HTML fallback.
      assert.deepEqual(wasm, ["200 /node_modules/superset-job-guard/pkg/superset_job_guard_bg.wasm"]);
      // It did pre-bundle the package into its cache folder: what the fix is for.
      const deps = await readdir(join(dir, cacheDir ?? "node_modules/.vite", "deps"));
      assert.ok(deps.some((f) => f.startsWith("superset-job-guard")), `${deps}`);
    } finally {
      await server.close();
    }
  });
}

test("Vite 7's dev server in a monorepo (its root in apps/demo, node_modules above it: the pre-bundled package and its .wasm come through /@fs/)", async () => {
  const dir = await freshApp("vite-monorepo-app");
  const root = join(dir, "apps", "demo");
  await mkdir(root, { recursive: true });
  await copyFile(join(HERE, "app.js"), join(root, "app.js"));
  await writeFile(join(root, "index.html"), '<!doctype html><body><script type="module" src="./app.js"></script></body>');
  const server = await createViteServer({
    root,
    logLevel: "error",
    server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false },
  });
  await server.listen();
  const wasm = [];
  try {
    const { port } = server.httpServer.address();
    const { result, errors } = await resultAt(`http://127.0.0.1:${port}/`, (p) =>
      p.on("response", (r) => r.url().endsWith(".wasm") && wasm.push(`${r.status()} ${new URL(r.url()).pathname}`)),
    );
    assert.deepEqual(errors, []);
    assert.deepEqual(result, expected);
    // Vite's cache is the app's node_modules/.vite, outside its root: served under /@fs/.
    const deps = await readdir(join(dir, "node_modules", ".vite", "deps"));
    assert.ok(deps.some((f) => f.startsWith("superset-job-guard")), `${deps}`);
    assert.deepEqual(wasm, [`200 /@fs${dir}/node_modules/superset-job-guard/pkg/superset_job_guard_bg.wasm`]);
  } finally {
    await server.close();
  }
});

test("npm install of the tarball in a plain app (no React) installs no React and nothing else", async () => {
  const dir = await freshApp("plain-no-react-app");
  const installed = (await readdir(join(dir, "node_modules"))).filter((f) => !f.startsWith("."));
  assert.deepEqual(installed, ["superset-job-guard"]);
  await assert.rejects(readFile(join(dir, "node_modules", "react", "package.json")), { code: "ENOENT" });
});

test("esbuild's serve, bundling with its defaults (it copies no .wasm: the page's node_modules/ has it)", async () => {
  const dir = await plainApp("esbuild-serve-app");
  await writeFile(join(dir, "index.html"), '<!doctype html><body><script type="module" src="/dist/app.js"></script></body>');
  const context = await esbuild.context({ absWorkingDir: dir, entryPoints: ["app.js"], bundle: true, format: "esm", outdir: "dist", logLevel: "silent" });
  try {
    const { port } = await context.serve({ servedir: dir, host: "127.0.0.1" });
    const { result, errors } = await resultAt(`http://127.0.0.1:${port}/`);
    // The .wasm beside the bundle is missing (a 404 the browser reports); the next try finds it.
    assert.deepEqual(errors.filter((e) => !/^404 .*\/pkg\/superset_job_guard_bg\.wasm$/.test(e)), []);
    assert.deepEqual(result, expected);
  } finally {
    await context.dispose();
  }
});

test("webpack 5's dev server, with the app's default configuration", async () => {
  const dir = await plainApp("webpack-dev-app");
  const compiler = webpack({ mode: "development", context: dir, entry: "./app.js", output: { path: join(dir, "dist"), filename: "main.js" } });
  await writeFile(join(dir, "index.html"), '<!doctype html><body><script src="/main.js"></script></body>');
  const server = new WebpackDevServer({ host: "127.0.0.1", port: 0, hot: false, liveReload: false, client: false, static: { directory: dir, watch: false } }, compiler);
  await server.start();
  try {
    const { port } = server.server.address();
    const { result, errors } = await resultAt(`http://127.0.0.1:${port}/`);
    assert.deepEqual(errors, []);
    assert.deepEqual(result, expected);
  } finally {
    await server.stop();
  }
});

test("Vite 7 bundles the package's ES-module build", async () => {
  const dir = join(OUT, "vite");
  await viteBuild({
    root: HERE,
    logLevel: "error",
    configFile: false,
    build: { outDir: dir, emptyOutDir: true, target: "es2022" },
  });
  const { result, errors } = await runInChromium(dir);
  assert.deepEqual(errors, []);
  assert.deepEqual(result, expected);
});

// ---- the React example (www/react/) with superset-job-guard/react, from the tarball ----

import { createApp } from "../../www/server.mjs";

/** The example's sources beside the installed tarball, so both bundlers resolve it by name. */
async function reactSources() {
  const dir = join(HERE, ".react-app");
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const file of ["index.html", "main.jsx", "App.jsx", "setup.js"]) {
    await copyFile(join(ROOT, "www", "react", file), join(dir, file));
  }
  return dir;
}

/** The reference server's API (task contract) beside the bundle's files, on one origin. */
async function serveWithApi(dir, fn) {
  const app = createApp({ jobDurationMs: 120_000, contract: "task" });
  try {
    return await serve(dir, (url) => fn(url, app), app);
  } finally {
    app.stop();
  }
}

async function reactFlow(dir) {
  await serveWithApi(dir, async (url, app) => {
    const context = await browser.newContext();
    // Counts the BroadcastChannels the page opens, and those it has not closed.
    await context.addInitScript(() => {
      const Original = window.BroadcastChannel;
      const count = { opened: 0, live: 0 };
      window.channels = () => ({ ...count });
      window.BroadcastChannel = class extends Original {
        constructor(name) {
          super(name);
          count.opened += 1;
          count.live += 1;
        }
        close() {
          count.live -= 1;
          super.close();
        }
      };
    });
    const errors = [];
    const open = async () => {
      const page = await context.newPage();
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(url);
      await page.waitForSelector("body[data-ready=true]", { state: "attached" });
      return page;
    };
    const tab = await open();
    // StrictMode without leaks: one guard, so one BroadcastChannel ever opened (a guard made
    // and dropped without free() opens its own, and keeps it until the garbage collector finds
    // the guard, if ever).
    assert.deepEqual(await tab.evaluate(() => window.channels()), { opened: 1, live: 1 });
    await tab.click("#login");
    await tab.waitForSelector("#session:has-text('user 1')");
    // Record: the row appears.
    await tab.click("button.chart");
    await tab.waitForSelector("#jobs tr");
    const uuid = await tab.getAttribute("#jobs tr", "data-job-id");
    // No render loop: renders stop once nothing changes (polls that change nothing re-render nothing).
    await tab.waitForTimeout(1200);
    const settled = await tab.evaluate(() => window.renders);
    await tab.waitForTimeout(1500);
    assert.equal(await tab.evaluate(() => window.renders), settled, "no render without a change");
    assert.ok(settled < 30, `${settled} renders`);
    // Cancel: pending, then the outcome.
    app.state.faults.cancel.push({ status: 503, retryAfter: 1 });
    await tab.click(`#jobs tr[data-job-id="${uuid}"] button.cancel`);
    await tab.waitForSelector(`#jobs tr[data-job-id="${uuid}"] button.cancel:has-text("Cancelling")`);
    await tab.waitForSelector(`#jobs tr[data-job-id="${uuid}"] .outcome[data-outcome="cancelled"]`, { timeout: 10_000 });
    assert.equal(app.state.tasks.get(uuid).status, "aborted");
    assert.equal(app.cancelRequests(uuid).length, 2, "503, then 200");
    // An outcome that removes the record outlives its row: the server no longer shows the
    // task to alice (404), the row goes, the outcome stays until dismissed.
    await tab.click("button.chart");
    await tab.waitForFunction(() => document.querySelectorAll("#jobs tr").length === 2);
    const gone = await tab.getAttribute("#jobs tr:nth-child(2)", "data-job-id");
    app.state.tasks.get(gone).subscribers.delete("user:1");
    await tab.click(`#jobs tr[data-job-id="${gone}"] button.cancel`);
    await tab.waitForSelector(`#gone li[data-job-id="${gone}"][data-outcome="not_job_owner"]`);
    assert.equal(await tab.locator(`#jobs tr[data-job-id="${gone}"]`).count(), 0, "the row is gone");
    await tab.click(`#gone li[data-job-id="${gone}"] button.dismiss`);
    await tab.waitForSelector(`#gone li[data-job-id="${gone}"]`, { state: "detached" });
    app.state.tasks.get(gone).status = "failure"; // the next query is a new task
    // Unmount aborts a cancel in flight: a cancel that hangs on retries, then the table hides.
    await tab.click("button.chart");
    await tab.waitForFunction(() => document.querySelectorAll("#jobs tr").length === 2);
    const second = await tab.getAttribute("#jobs tr:nth-child(2)", "data-job-id");
    app.state.faults.cancel.push({ status: 503, retryAfter: 3 });
    await tab.click(`#jobs tr[data-job-id="${second}"] button.cancel`);
    await tab.waitForFunction((id) => document.querySelector(`tr[data-job-id="${id}"] button.cancel`)?.disabled, second);
    await tab.click("#toggle");
    await tab.waitForTimeout(3500);
    assert.equal(app.cancelRequests(second).length, 1, "no retry after the unmount");
    assert.notEqual(app.state.tasks.get(second).status, "aborted");
    await tab.click("#toggle");
    await tab.waitForSelector(`#jobs tr[data-job-id="${second}"]`);
    // Logout in a second tab: the list empties in the first, without a reload.
    const other = await open();
    await other.waitForSelector(`#jobs tr[data-job-id="${second}"]`);
    await other.click("#logout");
    await tab.waitForSelector("#empty");
    await tab.waitForSelector("#session:has-text('Signed out')");
    // Unmounting the app frees the provider's guard.
    const afterUnmount = await tab.evaluate(async () => {
      window.unmountApp();
      await new Promise((r) => setTimeout(r, 20));
      try {
        window.guard.jobs();
        return "still usable";
      } catch (e) {
        return e.code;
      }
    });
    assert.equal(afterUnmount, "freed");
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test("the React example bundled by Vite 7: record, cancel, unmount, logout in another tab", async () => {
  const src = await reactSources();
  const dir = join(OUT, "react-vite");
  await viteJsxBuild(src, dir);
  await reactFlow(dir);
});

/** Vite's build of JSX sources in `root` into `outDir`; `development`: React's development
 * build, whose StrictMode mounts everything twice. */
function viteJsxBuild(root, outDir, development = false) {
  return viteBuild({
    root,
    logLevel: "error",
    configFile: false,
    esbuild: { jsx: "automatic" },
    ...(development && { mode: "development", define: { "process.env.NODE_ENV": JSON.stringify("development") } }),
    build: { outDir, emptyOutDir: true, target: "es2022", minify: !development },
  });
}

test("the React example in React's development build (StrictMode mounts everything twice)", async () => {
  const src = await reactSources();
  const dir = join(OUT, "react-vite-dev");
  await viteJsxBuild(src, dir, true);
  const bundle = await readFile(join(dir, "assets", (await readdir(join(dir, "assets"))).find((f) => f.endsWith(".js"))), "utf8");
  assert.match(bundle, /StrictMode/);
  assert.match(bundle, /react-dom\.development|Warning: |checkPropTypes|__REACT_DEVTOOLS_GLOBAL_HOOK__/, "React's development build");
  await reactFlow(dir);
});

test("the React example bundled by webpack 5: record, cancel, unmount, logout in another tab", async () => {
  const src = await reactSources();
  const dir = join(OUT, "react-webpack");
  await rm(dir, { recursive: true, force: true });
  const stats = await new Promise((resolve, reject) =>
    webpack(
      {
        mode: "production",
        context: src,
        entry: "./main.jsx",
        output: { path: dir, filename: "main.js", publicPath: "auto" },
        module: { rules: [{ test: /\.jsx$/, loader: join(HERE, "jsx-loader.cjs") }] },
        performance: { hints: false },
      },
      (err, s) => (err ? reject(err) : resolve(s)),
    ),
  );
  assert.equal(stats.hasErrors(), false, stats.toString("errors-only"));
  const modules = stats.toJson({ modules: true }).modules.map((m) => m.name).join("\n");
  assert.match(modules, /superset-job-guard\/js\/react\.js/, "superset-job-guard/react from the tarball");
  await writeFile(join(dir, "index.html"), '<!doctype html><body><div id="root"></div><script src="main.js"></script></body>');
  await reactFlow(dir);
});

/**
 * A fresh app on React `version`: its own package.json, `npm install` of React and the
 * tarball as a user runs it (no flags), the example's sources, bundled by Vite.
 */
async function reactVersionApp(version, main, extra = {}) {
  const dir = await freshApp(`react-${version}-app`, { react: `^${version}.0.0`, "react-dom": `^${version}.0.0`, ...extra });
  const installed = JSON.parse(await readFile(join(dir, "node_modules", "react", "package.json"), "utf8")).version;
  assert.equal(installed.split(".")[0], String(version), `React ${installed}`);
  for (const file of ["index.html", "App.jsx", "setup.js", "main.jsx"]) {
    await copyFile(join(ROOT, "www", "react", file), join(dir, file));
  }
  if (main) await copyFile(main, join(dir, "main.jsx"));
  const out = join(dir, "dist");
  await viteJsxBuild(dir, out, true);
  return out;
}

test("a React 17 app installs the tarball and use-sync-external-store with plain npm install; the hooks work, StrictMode included", async () => {
  await reactFlow(
    await reactVersionApp(17, join(HERE, "react17", "main.jsx"), {
      "@types/react": "^17.0.0",
      "use-sync-external-store": "^1.2.0",
    }),
  );
  const dir = join(OUT, "react-17-app");
  // Without the shim, the provider says what to install (React 17 has no useSyncExternalStore),
  // before it makes a guard.
  const script = `
    const touched = [];
    globalThis.fetch = (url) => { touched.push("fetch " + url); return new Promise(() => {}); };
    globalThis.localStorage = new Proxy({}, { get: (_, key) => { touched.push("localStorage." + String(key)); } });
    const React = require("react");
    const { renderToString } = require("react-dom/server");
    const { JobGuardProvider } = require("superset-job-guard/react");
    try {
      renderToString(React.createElement(JobGuardProvider, { options: { storage: "memory" } }, "x"));
      console.log("rendered");
    } catch (e) {
      console.log(e.message);
    }
    console.log(renderToString(React.createElement(JobGuardProvider, {
      options: { storage: "memory" },
      follow: false,
      useSyncExternalStore: require("use-sync-external-store/shim").useSyncExternalStore,
    }, "child")));
    console.log(JSON.stringify(touched));`;
  const said = execFileSync(process.execPath, ["-e", script], { cwd: dir, encoding: "utf8" });
  assert.match(said, /^superset-job-guard\/react: React 17\.[0-9.]+ has no useSyncExternalStore .*npm install use-sync-external-store .*useSyncExternalStore=\{useSyncExternalStore\}/);
  assert.match(said, /\nchild\n\[\]\n$/, "with the shim it renders its children: no guard on a server, no fetch, no storage");
  // Its types too: React 17's @types/react takes the provider as a JSX component.
  await copyFile(join(ROOT, "tests", "types", "react.tsx"), join(dir, "react.tsx"));
  const compilerOptions = { target: "es2020", module: "esnext", moduleResolution: "node", strict: true, noEmit: true, skipLibCheck: false, jsx: "react-jsx", types: [] };
  await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["react.tsx"] }));
  tsc(dir, "React 17's types");
});

test("a React 18 app installs the tarball with plain npm install; the hooks work, StrictMode included", async () => {
  await reactFlow(await reactVersionApp(18));
});

test("a React 19 app installs the tarball with plain npm install; the hooks work, StrictMode included", async () => {
  await reactFlow(await reactVersionApp(19));
});

test("React's useCancel follows its current jobId while a cancel of the previous job runs", async () => {
  const src = join(HERE, ".hooks-app");
  await rm(src, { recursive: true, force: true });
  await mkdir(src, { recursive: true });
  for (const file of ["index.html", "hooks.jsx"]) await copyFile(join(HERE, "hooks", file), join(src, file));
  const dir = join(OUT, "hooks");
  await viteJsxBuild(src, dir);
  const { result, errors } = await runInChromium(dir);
  assert.deepEqual(errors, []);
  assert.deepEqual(result, {
    pendingA: true,
    pendingBBefore: false,
    sameAsFirst: false,
    outcome: { outcome: "cancelled", jobId: "job-b" },
    shown: "job-b",
    sharedA: true,
    firstOutcome: "aborted",
    calls: ["/api/v1/async_event/job-a/cancel", "/api/v1/async_event/job-b/cancel"],
  });
});

test("server rendering: in Node the provider renders its children with no guard (no fetch, no storage, no throw); the browser hydrates that HTML, loads the module and makes the guard", async () => {
  const src = join(HERE, ".ssr-app");
  await rm(src, { recursive: true, force: true });
  await mkdir(src, { recursive: true });
  for (const file of ["app.js", "client.js"]) await copyFile(join(HERE, "ssr", file), join(src, file));
  // The server's half, in this process, with fetch and localStorage watched.
  const touched = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (...args) => {
    touched.push(`fetch ${args[0]}`);
    return realFetch(...args);
  };
  globalThis.localStorage = new Proxy({}, { get: (_, key) => touched.push(`localStorage.${String(key)}`) && undefined });
  let html;
  try {
    const { renderToString } = await import("react-dom/server");
    const { createElement } = await import("react");
    const { App, seen } = await import(pathToFileURL(join(src, "app.js")).href);
    html = renderToString(createElement(App));
    assert.deepEqual(seen, [{ guard: false, jobs: 0, session: null }]);
  } finally {
    globalThis.fetch = realFetch;
    delete globalThis.localStorage;
  }
  assert.deepEqual(touched, []);
  assert.match(html, /<main><h1>Jobs<\/h1><ul id="jobs" data-guard="no"><\/ul><\/main>/);
  await writeFile(join(src, "index.html"), `<!doctype html><body><div id="root">${html}</div><script type="module" src="./client.js"></script></body>`);
  const dir = join(OUT, "ssr");
  // React's production build, whatever NODE_ENV an earlier build in this process left set.
  await viteBuild({
    root: src,
    logLevel: "error",
    configFile: false,
    mode: "production",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    build: { outDir: dir, emptyOutDir: true, target: "es2022" },
  });
  const load = () => serve(dir, async (url) => {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    // React's hydration warnings are console errors; failed requests are counted by their
    // answers (but the browser's own favicon probe).
    page.on("console", (m) => m.type() === "error" && !/^Failed to load resource/.test(m.text()) && errors.push(m.text()));
    page.on("response", (r) => r.status() >= 400 && !r.url().endsWith("/favicon.ico") && errors.push(`${r.status()} ${r.url()}`));
    await page.goto(url);
    await page.waitForSelector("body[data-result]", { state: "attached", timeout: 15_000 });
    const result = JSON.parse(await page.getAttribute("body", "data-result"));
    await page.close();
    return { result, errors };
  });
  const { result, errors } = await load();
  assert.deepEqual(errors, []);
  assert.deepEqual(result, {
    first: { guard: false, jobs: 0, session: null },
    last: { guard: true, jobs: 1, session: "1" },
    errors: [],
  });
  // Without the .wasm on the server, the provider's init() rejection reaches the app's error
  // boundary: wasm_not_found, naming what was fetched.
  const assets = join(dir, "assets");
  for (const f of await readdir(assets)) if (f.endsWith(".wasm")) await rm(join(assets, f));
  const missing = await load();
  assert.equal(missing.result.failed.code, "wasm_not_found");
  assert.equal(missing.result.failed.name, "GuardError");
  assert.match(missing.result.failed.message, /\/assets\/superset_job_guard_bg-[^ ]+\.wasm \(404\); http:[^ ]+\/node_modules\/superset-job-guard\/pkg\/superset_job_guard_bg\.wasm \(404\)/);
  assert.deepEqual(missing.result.first, { guard: false, jobs: 0, session: null });
  // What the browser logged: the three 404s (the last, pkg/ under the page's base, where the
  // README's Angular step puts it), and React's report of the error the boundary caught.
  assert.equal(missing.errors.length, 4, missing.errors.join("\n"));
  assert.match(missing.errors[0], /^404 .*\/assets\/superset_job_guard_bg-[^/]+\.wasm$/);
  assert.match(missing.errors[1], /^404 .*\/node_modules\/superset-job-guard\/pkg\/superset_job_guard_bg\.wasm$/);
  assert.match(missing.errors[2], /^404 http:\/\/127\.0\.0\.1:\d+\/pkg\/superset_job_guard_bg\.wasm$/);
  assert.match(missing.errors[3], /GuardError: superset-job-guard could not load its WebAssembly module/);
});

// ---- Next.js (App Router), where embedded dashboards often live ----

// create-next-app's own version: it installs the Next.js it was released with.
const CREATE_NEXT_APP = "16.4.3";

/** The environment a user's shell gives Next.js: without the NODE_ENV that bundlers run in
 * this process set (Next.js then mixes React's builds), no telemetry. */
function nextEnv() {
  const { NODE_ENV, ...env } = process.env;
  return { ...env, CI: "1", NEXT_TELEMETRY_DISABLED: "1" };
}

/** Runs `next <args>` in `dir` until it prints that it is ready, then `fn(url)`; stops it. */
async function nextServer(dir, args, fn) {
  const { spawn } = await import("node:child_process");
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const child = spawn(join(dir, "node_modules", ".bin", "next"), [...args, "-p", String(port), "-H", "127.0.0.1"], {
    cwd: dir,
    env: nextEnv(),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  try {
    const deadline = Date.now() + 60_000;
    while (!/Ready in/.test(output)) {
      if (Date.now() > deadline || child.exitCode !== null) assert.fail(`next ${args.join(" ")} did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return await fn(`http://127.0.0.1:${port}/`);
  } catch (e) {
    e.message += `\n--- next ${args.join(" ")} said:\n${output.slice(-3000)}`;
    throw e;
  } finally {
    process.kill(-child.pid);
  }
}

/** Loads the page: the server's HTML has the list with no guard; the browser makes the guard
 * and the recorded job shows. */
async function nextPage(url) {
  const context = await browser.newContext();
  // Counts the BroadcastChannels the page opens (one per guard), and those still open.
  await context.addInitScript(() => {
    const Original = window.BroadcastChannel;
    const count = { opened: 0, live: 0 };
    window.channels = () => ({ ...count });
    window.BroadcastChannel = class extends Original {
      constructor(name) {
        super(name);
        count.opened += 1;
        count.live += 1;
      }
      close() {
        count.live -= 1;
        super.close();
      }
    };
  });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && !/^Failed to load resource/.test(m.text()) && errors.push(m.text()));
  page.on("response", (r) => r.status() >= 400 && !r.url().endsWith("/favicon.ico") && errors.push(`${r.status()} ${r.url()}`));
  const response = await page.goto(url);
  assert.equal(response.status(), 200);
  assert.match(await response.text(), /<ul id="jobs" data-guard="no"><\/ul>/, "server-rendered, with no guard");
  await page.waitForSelector('#jobs[data-guard="yes"] li[data-status="pending"]', { timeout: 60_000 });
  assert.equal(await page.textContent("#jobs li"), "10a0bd9a-03c8-4737-9345-f4234ba86512");
  // One guard made after init(), none dropped without free() (Next.js turns React's Strict Mode
  // on for the App Router when next.config has no reactStrictMode: next dev mounts twice).
  assert.deepEqual(await page.evaluate(() => window.channels()), { opened: 1, live: 1 });
  await context.close();
  assert.deepEqual(errors, []);
}

test(`Next.js (create-next-app ${CREATE_NEXT_APP}'s defaults, App Router): next dev, and next build && next start, render the provider on the server and load the guard in the browser`, async () => {
  // Outside this repository, as an app is (inside it, Next.js takes the repository's lockfile
  // for its workspace root).
  const parent = await mkdtemp(join(tmpdir(), "sjg-next-"));
  const dir = join(parent, "next-app");
  const env = nextEnv();
  execFileSync("npx", ["--yes", `create-next-app@${CREATE_NEXT_APP}`, "next-app", "--yes", "--use-npm", "--disable-git"], { cwd: parent, env, stdio: "pipe" });
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: dir, env, stdio: "pipe" });
  // The README's pattern (Jobs.tsx, a client component) on the app's page; the layout without
  // next/font/google (its fonts download from Google at build time).
  for (const file of ["Jobs.tsx", "page.tsx", "layout.tsx"]) await copyFile(join(HERE, "next", file), join(dir, "app", file));
  await nextServer(dir, ["dev"], nextPage);
  try {
    execFileSync(join(dir, "node_modules", ".bin", "next"), ["build"], { cwd: dir, env, stdio: "pipe", encoding: "utf8" });
  } catch (e) {
    assert.fail(`next build failed:\n${e.stdout}${e.stderr}`);
  }
  await nextServer(dir, ["start"], nextPage);
  await rm(parent, { recursive: true, force: true });
});

// ---- Jest, as Superset's frontend tests run (jsdom) ----

test("Jest 28 with jsdom requires the real guard (the CommonJS build), from the tarball", async () => {
  // Jest 29 and 30 do not install from this machine's registry (@babel packages it lacks):
  // 28 is the newest that does; its jsdom environment has no TextDecoder or structuredClone.
  const dir = await freshApp("jest-app", {
    jest: "28.1.3",
    "jest-environment-jsdom": "28.1.3",
    react: "^18.0.0",
    "react-dom": "^18.0.0",
  });
  await copyFile(join(HERE, "jest", "guard.jest.js"), join(dir, "guard.test.js"));
  let output;
  try {
    output = execFileSync(join(dir, "node_modules", ".bin", "jest"), ["--ci", "--colors=false"], {
      cwd: dir,
      encoding: "utf8",
      stdio: "pipe",
    });
  } catch (e) {
    assert.fail(`jest failed:\n${e.stdout}${e.stderr}`);
  }
  assert.equal(typeof output, "string");
});

// ---- TypeScript, as apps configure it ----

/**
 * `tsc --strict` over tests/types/usage.ts (and react.tsx, in an ES-module app) in an app beside
 * the installed tarball, under `moduleResolution` `resolution`, with the default `lib` and
 * `skipLibCheck` off. Superset's own tsconfig uses `"moduleResolution": "node"`. A CommonJS app
 * under node16 gets the `require` build's types.
 */
async function typecheck(resolution, type = "module") {
  const dir = join(HERE, `.types-${resolution}-${type}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const files = type === "module" ? ["usage.ts", "react.tsx"] : ["usage.ts"];
  for (const file of files) await copyFile(join(ROOT, "tests", "types", file), join(dir, file));
  const module = { node: "esnext", node16: "node16", bundler: "esnext" }[resolution];
  const compilerOptions = {
    target: "es2020",
    module,
    moduleResolution: resolution,
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    jsx: "react-jsx",
    types: [],
  };
  await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files }));
  // node16 reads the app's own package.json for its module type.
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: `types-${resolution}`, private: true, type }));
  tsc(dir, `moduleResolution ${resolution} (${type})`);
}

/** `tsc -p dir`; fails the test with the compiler's output, saying `what` was checked. */
function tsc(dir, what) {
  try {
    execFileSync(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", dir], { encoding: "utf8", stdio: "pipe" });
  } catch (e) {
    assert.fail(`tsc, ${what}:\n${e.stdout}${e.stderr}`);
  }
}

for (const resolution of ["node", "node16", "bundler"]) {
  test(`the types resolve under moduleResolution "${resolution}", default lib, skipLibCheck off (plain and React)`, async () => {
    await typecheck(resolution);
  });
}

test(`a CommonJS app under moduleResolution "node16" gets the require build's types`, async () => {
  await typecheck("node16", "commonjs");
});

test("the tarball carries the React, Vue, Svelte and Angular entries, their types, LICENSE and CHANGELOG.md; no invented URLs", async () => {
  const installed = join(HERE, "node_modules", "superset-job-guard");
  const entries = ["react", "vue", "svelte", "angular", "stores"].flatMap((e) => [`js/${e}.js`, `js/${e}.d.ts`]);
  for (const file of [...entries, "pkg/node/stores.js", "LICENSE", "CHANGELOG.md"]) {
    await readFile(join(installed, file)); // throws when missing
  }
  assert.match(await readFile(join(installed, "LICENSE"), "utf8"), /Apache License\s+Version 2\.0/);
  assert.match(await readFile(join(installed, "CHANGELOG.md"), "utf8"), /^# Changelog\n\n## 0\.1\.0/);
  const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8"));
  assert.equal(manifest.license, "Apache-2.0");
  // React 16.8 to 19, both optional peers: React's own useSyncExternalStore from 18 on, the
  // shim of use-sync-external-store (installed by the app) on 16.8 and 17; Vue and Angular's
  // core for their entries, optional too (Svelte's stores need no import); no dependency.
  assert.deepEqual(manifest.peerDependencies, {
    react: "^16.8.0 || ^17.0.0 || ^18.0.0 || ^19.0.0",
    "use-sync-external-store": "^1.2.0",
    vue: "^3.3.0",
    "@angular/core": ">=17.0.0",
  });
  assert.deepEqual(manifest.peerDependenciesMeta, {
    react: { optional: true },
    "use-sync-external-store": { optional: true },
    vue: { optional: true },
    "@angular/core": { optional: true },
  });
  for (const entry of ["vue", "svelte", "angular"]) assert.equal(manifest.exports[`./${entry}`].default, `./js/${entry}.js`);
  assert.equal(manifest.dependencies, undefined);
  assert.equal(manifest.exports["./react"].default, "./js/react.js");
  for (const field of ["repository", "homepage", "bugs"]) assert.equal(manifest[field], undefined, field);
});

test("every file the README links to is in the tarball", async () => {
  const installed = join(HERE, "node_modules", "superset-job-guard");
  const readme = await readFile(join(installed, "README.md"), "utf8");
  const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]).filter((l) => !/^[a-z]+:/.test(l));
  assert.ok(links.includes("docs/api.md") && links.includes("docs/superset.md"), links.join(", "));
  for (const link of links) {
    await readFile(join(installed, link)); // throws when the tarball lacks it
    // and the linked page's own relative links, one level down
    if (link.endsWith(".md")) {
      const page = await readFile(join(installed, link), "utf8");
      for (const [, inner] of page.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (!/^[a-z]+:/.test(inner)) await readFile(join(installed, link, "..", inner));
      }
    }
  }
});
