// Runs in the page: the guard and the plain-JS baseline, same operations on the same data,
// interleaved (which goes first alternates each round), several rounds. Each storage size is
// seeded fresh for each implementation (two 10,000-job sets would not fit localStorage's quota).
import { BaselineGuard } from "./baseline.js";

const params = new URLSearchParams(location.search);
// The package's entry, as an app imports it (as package.json names it: bench/serve.mjs).
const { default: init, JobGuard } = await import(params.get("guardEntry"));
await init();

// 200 is the default maxJobs, where the targets are set; 10 and 1,000 show how it scales.
const SIZES = (params.get("sizes") ?? "10,200,1000").split(",").map(Number);
const ROUNDS = Number(params.get("rounds") ?? 5);
const NOW = Date.now();

const IMPLS = {
  guard: (ns) => new JobGuard({ namespace: ns, maxJobs: 10000 }),
  baseline: (ns) => new BaselineGuard({ namespace: ns, maxJobs: 10000 }),
};
// `compare`: another build of the package (bench/serve.mjs), measured beside this one.
if (params.get("compare")) {
  const other = await import(params.get("compareEntry"));
  await other.default();
  IMPLS.compare = (ns) => new other.JobGuard({ namespace: ns, maxJobs: 10000 });
}

const meta = (i, status = "running") => ({
  channel_id: "chan-1", job_id: `job-${i}`, user_id: "1", status, errors: [], result_url: null,
});

/** The same records for both: the guard's own key and JSON format. */
function seed(ns, n) {
  localStorage.clear();
  localStorage.setItem(`${ns}:v1:session`, JSON.stringify({ user_id: "1", channel_id: "chan-1" }));
  for (let i = 0; i < n; i++) {
    const t = NOW - (n - i);
    localStorage.setItem(`${ns}:v1:job:job-${i}`, JSON.stringify({ ...meta(i), created_at: t, updated_at: t }));
  }
}

// Two texts of each record, differing in `updated_at`: a read after the record was rewritten
// (by this tab's event, another tab, or the page) finds a text it has not read before.
const rewrites = new Map();
function rewritten(ns, n, i) {
  const j = i % n;
  let texts = rewrites.get(`${ns}:${n}:${j}`);
  if (!texts) {
    const t = NOW - (n - j);
    texts = [0, 1].map((k) => JSON.stringify({ ...meta(j), created_at: t, updated_at: t + 1 + k }));
    rewrites.set(`${ns}:${n}:${j}`, texts);
  }
  localStorage.setItem(`${ns}:v1:job:job-${j}`, texts[Math.floor(i / n) % 2]);
  return `job-${j}`;
}

const OPS = [
  { name: "recordJob", iters: () => 200, run: (g, i, n) => g.recordJob(meta(i % n)) },
  { name: "checkCancel (allowed)", iters: () => 500, run: (g, i, n) => g.checkCancel(`job-${i % n}`) },
  { name: "checkCancel (refused)", iters: () => 500, run: (g, i) => g.checkCancel(`other-${i}`) },
  { name: "job()", iters: () => 500, run: (g, i, n) => g.job(`job-${i % n}`) },
  // The same two after the record was rewritten (its setItem timed for both alike).
  { name: "checkCancel (rewritten)", iters: () => 500, run: (g, i, n, ns) => g.checkCancel(rewritten(ns, n, i)) },
  { name: "job() (rewritten)", iters: () => 500, run: (g, i, n, ns) => g.job(rewritten(ns, n, i)) },
  { name: "jobs()", iters: (n) => Math.max(3, Math.floor(20000 / n)), run: (g) => g.jobs() },
  { name: "applyEvent", iters: () => 200, run: (g, i, n) => g.applyEvent({ ...meta(i % n), id: `${i}-0` }) },
  {
    name: "construction+login",
    iters: () => 100,
    run: (g, i, n, ns, make) => {
      const page = make(ns);
      page.login({ userId: 1 });
      page.free();
    },
  },
];

// Each sample runs batches of `iters` calls until at least MIN_MS have passed: Chromium rounds
// performance.now() to 100 µs, so a 1 ms batch would carry a 10% rounding error.
const MIN_MS = Number(params.get("minMs") ?? 25);
// The rounds of checks and rewrites (issue #43's scenario) run in each sample.
const ROUND_TRIPS = Number(params.get("roundTrips") ?? 10);

function time(fn, iters) {
  let calls = 0;
  let elapsed = 0;
  const t0 = performance.now();
  do {
    for (let k = 0; k < iters; k++) fn(calls++);
    elapsed = performance.now() - t0;
  } while (elapsed < MIN_MS);
  return (elapsed / calls) * 1e6; // ns per op
}

const samples = {}; // samples[size][op][impl] = [ns, ...]
const add = (size, op, impl, ns) => {
  ((samples[size] ??= {})[op] ??= { guard: [], baseline: [], compare: [] })[impl].push(ns);
};

for (const n of SIZES) {
  for (let round = 0; round < ROUNDS; round++) {
    const impls = Object.keys(IMPLS);
    const order = round % 2 ? impls : [...impls].reverse();
    for (const impl of order) {
      const ns = `bench-${impl}`;
      const make = IMPLS[impl];
      seed(ns, n);
      const g = make(ns);
      for (const op of OPS) {
        add(n, op.name, impl, time((i) => op.run(g, i, n, ns, make), op.iters(n)));
      }
      // The scenario of issue #43: rounds of 2,000 checkCancels over the ids in a scattered
      // order, then 500 recordJobs rewriting scattered records (a status that changes each
      // round), each kind timed on its own across the rounds.
      const scattered = (k) => (k * 7919 + 13) % n; // 7919 is prime: every id, in a mixed order
      let checks = 0;
      let records = 0;
      for (let r = 0; r < ROUND_TRIPS; r++) {
        const t0 = performance.now();
        for (let k = 0; k < 2000; k++) g.checkCancel(`job-${scattered(k + r)}`);
        const t1 = performance.now();
        for (let k = 0; k < 500; k++) g.recordJob(meta(scattered(3 * k + r), r % 2 ? "running" : "pending"));
        const t2 = performance.now();
        checks += t1 - t0;
        records += t2 - t1;
      }
      add(n, "checkCancel (rounds)", impl, (checks / (ROUND_TRIPS * 2000)) * 1e6);
      add(n, "recordJob (rounds)", impl, (records / (ROUND_TRIPS * 500)) * 1e6);
      // logout: re-seed (untimed) before each one.
      const reps = Math.max(1, Math.floor(2000 / n));
      let total = 0;
      for (let r = 0; r < reps; r++) {
        seed(ns, n);
        const t0 = performance.now();
        g.logout();
        total += performance.now() - t0;
      }
      add(n, "logout", impl, (total / reps) * 1e6);
      g.free();
      localStorage.clear();
    }
    document.getElementById("status").textContent = `jobs ${n}, round ${round + 1}/${ROUNDS}`;
  }
}

window.benchResults = { sizes: SIZES, rounds: ROUNDS, userAgent: navigator.userAgent, samples };
document.getElementById("status").textContent = "done";
