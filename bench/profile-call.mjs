// A CPU profile of one guard operation in a loop (Chromium's sampling profiler through the
// DevTools protocol): self time by function, the top of it printed.
// `node bench/profile-call.mjs [job|checkCancel|applyEvent|recordJob|construct] [jobs] [who=<function>]`
import { launch } from "../tests/e2e/browser.mjs";
import { serve } from "./serve.mjs";

const [op = "job", jobs = "200"] = process.argv.slice(2).filter((a) => !a.includes("="));

const server = await serve();
const browser = await launch();
const page = await browser.newPage();
await page.goto(`${server.origin}/bench/profile.html?op=${op}&jobs=${jobs}`);
await page.waitForFunction(() => window.run);
await page.evaluate(() => window.run(1000)); // warm: tier-up
const cdp = await page.context().newCDPSession(page);
await cdp.send("Profiler.enable");
await cdp.send("Profiler.setSamplingInterval", { interval: 50 });
await cdp.send("Profiler.start");
const ns = await page.evaluate(() => window.run(3000));
const { profile } = await cdp.send("Profiler.stop");
await browser.close();
server.close();

const self = new Map();
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const counts = new Map();
for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
let total = 0;
for (const [id, c] of counts) {
  const { callFrame } = byId.get(id);
  const name = `${callFrame.functionName || "(anonymous)"} ${callFrame.url.split("/").pop()}`;
  self.set(name, (self.get(name) ?? 0) + c);
  total += c;
}
console.log(`${op} at ${jobs} jobs: ${Math.round(ns)} ns/op; self time by function (% of samples)`);
for (const [name, c] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`${((100 * c) / total).toFixed(1).padStart(6)}%  ${name}`);
}
// `who=<function name>`: the callers of that function, by the samples under it.
const who = process.argv.find((a) => a.startsWith("who="))?.slice(4);
if (who) {
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const chains = new Map();
  for (const [id, c] of counts) {
    if (!byId.get(id).callFrame.functionName.includes(who)) continue;
    const names = [];
    for (let p = parent.get(id); p !== undefined && names.length < 4; p = parent.get(p)) {
      names.push(byId.get(p).callFrame.functionName.replace(/::h[0-9a-f]{16}$/, "").slice(-90));
    }
    const key = names.join("  <-  ");
    chains.set(key, (chains.get(key) ?? 0) + c);
  }
  console.log(`\ncallers of ${who}:`);
  for (const [k, c] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`${((100 * c) / total).toFixed(1).padStart(6)}%  ${k}`);
}
