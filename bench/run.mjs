// npm run bench: the release build in headless Chromium (Debian's), the guard against the
// plain-JS baseline; prints ns/op medians and their ratio, writes target/bench/results.json.
import { createServer } from "node:http";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import os from "node:os";

import { launch } from "../tests/e2e/browser.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

const server = createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, "http://127.0.0.1").pathname);
  const file = normalize(join(ROOT, path));
  const served = ["bench", "pkg", "js"].some((dir) => file.startsWith(join(ROOT, dir) + sep));
  if (!file.startsWith(ROOT) || !served) {
    return res.writeHead(404).end();
  }
  try {
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(await readFile(file));
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const query = process.argv.slice(2).join("&");
const url = `http://127.0.0.1:${server.address().port}/bench/index.html${query ? `?${query}` : ""}`;

const browser = await launch();
const page = await browser.newPage();
page.on("pageerror", (e) => console.error("page error:", e.message));
await page.goto(url);
await page.waitForFunction(() => window.benchResults, null, { timeout: 20 * 60_000, polling: 1000 });
const raw = await page.evaluate(() => window.benchResults);
const version = browser.version();
await browser.close();
server.close();

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const rows = [];
for (const n of raw.sizes) {
  for (const [op, { guard, baseline }] of Object.entries(raw.samples[n])) {
    const g = median(guard);
    const b = median(baseline);
    rows.push({ op, jobs: n, guardNs: Math.round(g), baselineNs: Math.round(b), ratio: b > 0 ? g / b : null });
  }
}
rows.sort((a, b) => a.op.localeCompare(b.op) || a.jobs - b.jobs);

const pad = (s, w) => String(s).padStart(w);
console.log(`${"operation".padEnd(22)} ${pad("jobs", 6)} ${pad("guard ns/op", 12)} ${pad("baseline ns/op", 15)} ${pad("guard/baseline", 15)}`);
for (const r of rows) {
  console.log(
    `${r.op.padEnd(22)} ${pad(r.jobs.toLocaleString("en-US"), 6)} ${pad(r.guardNs.toLocaleString("en-US"), 12)} ${pad(r.baselineNs.toLocaleString("en-US"), 15)} ${pad(r.ratio === null ? "-" : r.ratio.toFixed(2), 15)}`,
  );
}
// How checkCancel scales: the largest size against the smallest.
const [small, large] = [Math.min(...raw.sizes), Math.max(...raw.sizes)];
const at = (n) => rows.find((r) => r.op === "checkCancel (allowed)" && r.jobs === n);
if (small !== large && at(small) && at(large)) {
  const flat = at(large).guardNs / at(small).guardNs;
  console.log(`\ncheckCancel (allowed) ${large.toLocaleString("en-US")} jobs / ${small} jobs: ${flat.toFixed(2)}`);
}

const machine = `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`;
const results = {
  date: new Date().toISOString(),
  machine,
  browser: `Chromium ${version}`,
  rounds: raw.rounds,
  rows,
  samples: raw.samples,
};
await mkdir(join(ROOT, "target", "bench"), { recursive: true });
await writeFile(join(ROOT, "target", "bench", "results.json"), JSON.stringify(results, null, 2));
console.log(`\n${results.date} · ${machine} · ${results.browser} · medians of ${raw.rounds} rounds`);
console.log("written: target/bench/results.json");
