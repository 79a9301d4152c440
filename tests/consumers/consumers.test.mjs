// The package as an app's bundler sees it: `npm pack` makes the tarball a registry would get,
// it is unpacked as tests/consumers/node_modules/superset-job-guard, and tests/consumers/app.js
// imports "superset-job-guard" by name and is bundled by webpack 5 (asyncWebAssembly, the
// bundler Superset's frontend uses) and by Vite 7; each bundle is loaded in headless Chromium and
// records and checks one job. (So a file missing from `files` fails here.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { mkdir, readFile, rm, writeFile, copyFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

import webpack from "webpack";
import { build as viteBuild } from "vite";

import { launch } from "../e2e/browser.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OUT = join(ROOT, "target", "consumers");
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

let browser;

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
  execFileSync("tar", ["-xzf", join(packs, filename), "-C", installed, "--strip-components=1"]);
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

/** Serves `dir` on a free loopback port while `fn` runs. */
async function serve(dir, fn) {
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://127.0.0.1").pathname;
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

test("webpack 5 (asyncWebAssembly) bundles the package's bundler build", async () => {
  const dir = join(OUT, "webpack");
  await rm(dir, { recursive: true, force: true });
  const stats = await new Promise((resolve, reject) =>
    webpack(
      {
        mode: "production",
        context: HERE,
        entry: "./app.js",
        output: { path: dir, filename: "main.js", publicPath: "auto" },
        experiments: { asyncWebAssembly: true, topLevelAwait: true },
        performance: { hints: false },
      },
      (err, s) => (err ? reject(err) : resolve(s)),
    ),
  );
  assert.equal(stats.hasErrors(), false, stats.toString("errors-only"));
  const json = stats.toJson({ assets: true, modules: true });
  const emitted = json.assets.map((a) => a.name);
  assert.ok(emitted.some((n) => n.endsWith(".wasm")), `a .wasm asset: ${emitted}`);
  const modules = json.modules.map((m) => m.name).join("\n");
  assert.match(modules, /js\/bundler\.js/, "the \"webpack\" export condition picked the bundler build");
  await writeFile(join(dir, "index.html"), '<!doctype html><body><script src="main.js"></script></body>');
  const { result, errors } = await runInChromium(dir);
  assert.deepEqual(errors, []);
  assert.deepEqual(result, expected);
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
