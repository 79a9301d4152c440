// npm run bench:memory: one long-lived guard (maxJobs: 10, storage "memory") and one app
// AbortSignal across every cancel, 100,000 record/cancel cycles, each cancel answered 200 by a
// fetch of the test's own; prints the wasm memory (pages of 64 KiB) as it goes (and writes
// target/bench/memory.json). Flat once warm
// means every table the machine keeps is bounded. Node, the built package (pkg/).
import { mkdir, readFile, writeFile } from "node:fs/promises";

import init, { JobGuard } from "superset-job-guard";

const CYCLES = Number(process.argv.find((a) => a.startsWith("cycles="))?.slice(7) ?? 100_000);
const wasm = await readFile(new URL("../pkg/superset_job_guard_bg.wasm", import.meta.url));
const { memory } = await init({ module_or_path: wasm });

const answer = () =>
  Promise.resolve(new Response('{"message":"OK"}', { status: 200, headers: { "Content-Type": "application/json" } }));
const guard = new JobGuard({ storage: "memory", maxJobs: 10, fetch: answer });
guard.login({ userId: 1 });
const app = new AbortController();

const id = (n) => `10a0bd9a-03c8-4737-9345-${n.toString(16).padStart(12, "0")}`;
const pages = () => memory.buffer.byteLength / 65536;
const marks = new Set([0, 1_000, 10_000, 20_000, 40_000, 60_000, 80_000, CYCLES]);
const seen = [];
const started = performance.now();
for (let n = 0; n <= CYCLES; n++) {
  if (marks.has(n)) {
    seen.push([n, pages()]);
    console.log(`${n.toLocaleString("en-US").padStart(8)} cycles: ${pages()} pages (${(memory.buffer.byteLength / 2 ** 20).toFixed(2)} MiB), ${guard.jobs().length} records`);
  }
  if (n === CYCLES) break;
  guard.recordJob({ channel_id: "1095c1c9-b6b1-444d-aa83-8e323b32831f", job_id: id(n), user_id: "1", status: "pending", errors: [], result_url: null });
  const outcome = await guard.cancel(id(n), { signal: app.signal });
  if (outcome.outcome !== "cancelled") throw new Error(`cycle ${n}: ${JSON.stringify(outcome)}`);
}
const warm = seen.find(([n]) => n === 10_000)?.[1];
const last = seen.at(-1)[1];
console.log(
  `\n${new Date().toISOString()} · node ${process.version} · ${CYCLES.toLocaleString("en-US")} cycles in ${((performance.now() - started) / 1000).toFixed(1)} s · ` +
    `from 10,000 cycles (warm) to the end: ${warm} → ${last} pages (${last === warm ? "flat" : `+${last - warm}`})`,
);
await mkdir(new URL("../target/bench/", import.meta.url), { recursive: true });
await writeFile(
  new URL("../target/bench/memory.json", import.meta.url),
  JSON.stringify({ date: new Date().toISOString(), node: process.version, cycles: CYCLES, marks: seen, warm, last }, null, 1),
);
