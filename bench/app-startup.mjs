// Start-up as an app has it (issue #35): the React demo (www/react/'s App and setup.js, through
// js/react.js) bundled by Vite into one chunk (bench/app/build.mjs), with the package (the
// `.wasm` preloaded from the page's HTML, as the README says) against the same app with the
// plain-JS baseline in its place (bench/app/shim.js). The page (bench/app/main.jsx) reports,
// from the navigation's start: the job list's first commit ("rendered"), the frame after it
// ("painted"), and the demo's sign-in effect done ("ready": csrf fetched, login).
//
// - fresh: each load in a new browser context (no HTTP cache, no compiled-code cache, empty
//   storage), guard and baseline alternating;
// - repeat: a new browser profile on disk per sample (Chromium's disk cache and code cache,
//   which an incognito context, Playwright's newContext(), does not keep), the page loaded,
//   then again ("repeat") and a third time ("third"): the hashed assets are served
//   `Cache-Control: public, max-age=31536000, immutable`, so they come from the cache, and
//   the scripts' and the module's compiled code from Chromium's code cache where it kept it.
//
// node bench/app-startup.mjs [loads=31] [repeats=10] [build=0] [compare=<folder>]
//   (build=0: reuse target/bench-app; compare: another build's js/ and pkg/, measured beside)
// Prints medians side by side; writes target/bench/app-startup.json.
import { createServer } from "node:http";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import os from "node:os";
import { execSync } from "node:child_process";
import { chromium } from "playwright-core";

import { CHROMIUM, launch } from "../tests/e2e/browser.mjs";
import { buildApp, OUT } from "./app/build.mjs";
import { median } from "./median.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1) ?? fallback;
const LOADS = Number(arg("loads", 31));
const REPEATS = Number(arg("repeats", 10));
// Time left on a page before the next navigation in the repeat runs: Chromium writes a
// module's compiled code to its cache a while after it ran (V8's wasm caching timeout, 2 s).
const DWELL_MS = Number(arg("dwell", 2500));
const COMPARE = arg("compare", null);
const VARIANTS = ["guard", ...(COMPARE ? ["compare"] : []), "baseline"];

if (arg("build", "1") !== "0") for (const v of VARIANTS) await buildApp(v, v === "compare" ? resolve(COMPARE) : undefined);

// ---- the server: the two builds under /guard/ and /baseline/, the demo's stylesheet, and the
// three API answers the demo asks for at start-up (signed in as user 1, the task contract) ----
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css" };
const requests = [];
const server = createServer(async (req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  const path = decodeURIComponent(url.pathname);
  requests.push(path);
  const json = (status, body) =>
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
  if (path === "/api/v1/me/") return json(200, { user: { id: 1, name: "alice" }, guestToken: null, contract: "task" });
  if (path === "/api/v1/security/csrf_token/") return json(200, { result: "csrf-token" });
  if (path === "/api/v1/task/status_changes") return json(200, { statuses: {}, cursor: new Date().toISOString().slice(0, -1) });
  if (path.startsWith("/api/")) return json(404, { message: "Not found" });
  let file = null;
  if (path === "/style.css") file = join(ROOT, "www", "style.css");
  const variant = VARIANTS.find((v) => path.startsWith(`/${v}/`));
  if (variant) {
    const rest = path.slice(variant.length + 2) || "index.html";
    const candidate = normalize(join(OUT, variant, rest));
    if (candidate.startsWith(join(OUT, variant) + sep)) file = candidate;
  }
  try {
    if (!file || !(await stat(file)).isFile()) throw new Error("not served");
    const body = await readFile(file);
    // Hashed assets: cached for good. The page and the stylesheet: revalidated (ETag, 304).
    const hashed = /\/assets\//.test(path);
    const etag = `"${createHash("sha1").update(body).digest("hex").slice(0, 16)}"`;
    const headers = {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "cache-control": hashed ? "public, max-age=31536000, immutable" : "no-cache",
      etag,
    };
    if (!hashed && req.headers["if-none-match"] === etag) return res.writeHead(304, headers).end();
    res.writeHead(200, headers).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((done) => server.listen(0, "127.0.0.1", done));
const origin = `http://127.0.0.1:${server.address().port}`;

/** Loads the variant's page in `page` and resolves to what it reports. */
async function load(page, variant, label) {
  const errors = [];
  const reported = new Promise((resolve) => {
    const onConsole = (m) => {
      if (m.type() === "warning" || m.type() === "error") errors.push(m.text());
      if (m.text().startsWith("appstartup ")) {
        page.off("console", onConsole);
        resolve(JSON.parse(m.text().slice("appstartup ".length)));
      }
    };
    page.on("console", onConsole);
    page.once("pageerror", (e) => {
      errors.push(e.message);
      resolve(null);
    });
  });
  await page.goto(`${origin}/${variant}/`, { waitUntil: "commit" });
  const result = await Promise.race([reported, new Promise((resolve) => setTimeout(resolve, 30_000, null))]);
  if (!result || errors.length) throw new Error(`${variant} ${label}: ${errors.join("; ") || "no result"}`);
  return result;
}

const samples = Object.fromEntries(VARIANTS.map((v) => [v, { fresh: [], first: [], repeat: [], third: [] }]));
const started = Date.now();

// Fresh loads: a new incognito context each, alternating. Each asks for the .wasm once (the
// preload and init() share one request), checked below.
const browser = await launch();
const version = browser.version();
for (let i = 0; i < LOADS; i++) {
  for (const variant of i % 2 ? VARIANTS : [...VARIANTS].reverse()) {
    const context = await browser.newContext();
    const page = await context.newPage();
    samples[variant].fresh.push(await load(page, variant, `fresh load ${i}`));
    await context.close();
  }
}
await browser.close();
for (const v of VARIANTS.filter((v) => v !== "baseline")) {
  const wasmRequests = requests.filter((p) => p.startsWith(`/${v}/`) && p.endsWith(".wasm")).length;
  if (wasmRequests !== LOADS) throw new Error(`${wasmRequests} requests for the ${v} .wasm in ${LOADS} fresh loads`);
}

// Repeat visits: a new profile on disk per sample, the page three times in one tab.
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
for (let i = 0; i < REPEATS; i++) {
  for (const variant of i % 2 ? VARIANTS : [...VARIANTS].reverse()) {
    const dir = await mkdtemp(join(os.tmpdir(), "app-startup-"));
    const context = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM, args: ARGS });
    const page = context.pages()[0] ?? (await context.newPage());
    for (const visit of ["first", "repeat", "third"]) {
      samples[variant][visit].push(await load(page, variant, `${visit} visit ${i}`));
      await page.waitForTimeout(DWELL_MS);
    }
    await context.close();
    await rm(dir, { recursive: true, force: true });
  }
}
server.close();
const seconds = (Date.now() - started) / 1000;

// ---- the table ----
const COLUMNS = [
  ["fresh", `fresh context (${LOADS} loads)`],
  ["first", `new profile, 1st visit (${REPEATS})`],
  ["repeat", `repeat visit (${REPEATS})`],
  ["third", `3rd visit (${REPEATS})`],
];
const METRICS = [
  ["chunk", "JS chunk downloaded"],
  ["setup", "init() + /me/ done"],
  ["rendered", "job list rendered"],
  ["painted", "job list painted"],
  ["ready", "signed in (ready)"],
];
const rows = [];
for (const [visit, visitName] of COLUMNS) {
  for (const [metric, metricName] of METRICS) {
    const of = metric === "chunk" ? (s) => s.chunk.responseEnd : (s) => s[metric];
    const g = median(samples.guard[visit].map(of));
    const b = median(samples.baseline[visit].map(of));
    const c = COMPARE ? median(samples.compare[visit].map(of)) : undefined;
    rows.push({ visit: visitName, metric: metricName, guardMs: g, baselineMs: b, ratio: g / b, compareMs: c });
  }
}
const pad = (s, w) => String(s).padStart(w);
const more = (r) => (COMPARE ? ` ${pad(r.compareMs.toFixed(1), 8)} ${pad((r.compareMs / r.baselineMs).toFixed(2), 17)}` : "");
console.log(`\nReact demo bundled by Vite, navigation to …, medians, ms`);
console.log(
  `${"visit".padEnd(32)} ${"to".padEnd(20)} ${pad("guard", 8)} ${pad("baseline", 9)} ${pad("guard/baseline", 15)}` +
    (COMPARE ? ` ${pad("compare", 8)} ${pad("compare/baseline", 17)}` : ""),
);
for (const r of rows) {
  console.log(
    `${r.visit.padEnd(32)} ${r.metric.padEnd(20)} ${pad(r.guardMs.toFixed(1), 8)} ${pad(r.baselineMs.toFixed(1), 9)} ${pad(r.ratio.toFixed(2), 15)}${more(r)}`,
  );
}
const sizes = {};
for (const v of VARIANTS) {
  const { readdir } = await import("node:fs/promises");
  for (const f of await readdir(join(OUT, v, "assets"))) sizes[`${v}/${f}`] = (await stat(join(OUT, v, "assets", f))).size;
}
const machine = `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`;
const results = {
  date: new Date().toISOString(),
  machine,
  browser: `Chromium ${version}`,
  loads: LOADS,
  repeats: REPEATS,
  dwellMs: DWELL_MS,
  compare: COMPARE,
  seconds,
  sizes,
  targets: {
    freshRendered: { ratio: rows.find((r) => r.visit.startsWith("fresh") && r.metric === "job list rendered").ratio, target: 1.3 },
    repeatRendered: { ratio: rows.find((r) => r.visit.startsWith("repeat") && r.metric === "job list rendered").ratio, target: 1.2 },
  },
  // What was built: the commit, and whether the demo and js/react.js had changes not in it.
  commit: execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim(),
  uncommitted: execSync("git status --porcelain -- js www/react pkg", { cwd: ROOT }).toString().trim().split("\n").filter(Boolean),
  rows,
  samples,
};
await mkdir(join(ROOT, "target", "bench"), { recursive: true });
await writeFile(join(ROOT, "target", "bench", "app-startup.json"), JSON.stringify(results, null, 2));
const wasmSamples = samples.guard.fresh.map((s) => s.wasm.responseEnd);
console.log(`\nfresh, guard: the .wasm downloaded at ${median(wasmSamples).toFixed(1)} ms (median), one request per load`);
for (const visit of ["repeat", "third"]) {
  const cached = samples.guard[visit].filter((s) => s.wasm.transferSize === 0 && s.chunk.transferSize === 0).length;
  console.log(`${visit}: chunk and .wasm from the HTTP cache in ${cached} of ${samples.guard[visit].length} guard visits`);
}
console.log(`assets: ${Object.entries(sizes).map(([f, n]) => `${f} ${n} B`).join(", ")}`);
console.log(`${results.date} · ${machine} · ${results.browser} · ${seconds.toFixed(0)} s`);
console.log("written: target/bench/app-startup.json");
