// Runs in a fresh page (a new browser context: no HTTP cache, no code cache, empty storage):
// what an app does before its first render, timed step by step. `?impl=guard` imports the
// package's entry as an app does (`?impl=compare`: another build's, bench/serve.mjs);
// `?impl=baseline` the plain-JS guard of the bench.
const impl = new URLSearchParams(location.search).get("impl");
const meta = { channel_id: "chan-1", job_id: "job-1", user_id: "1", status: "pending", errors: [], result_url: null };

const marks = [["start", performance.now()]];
// console.timeStamp puts each step's end in a performance trace too (bench/profile-startup.mjs).
const mark = (name) => {
  marks.push([name, performance.now()]);
  console.timeStamp(name);
};
console.timeStamp("start");

let make;
if (impl === "guard" || impl === "compare") {
  const params = new URLSearchParams(location.search);
  // The package's entry as package.json names it (bench/serve.mjs).
  const mod = await import(params.get(impl === "guard" ? "guardEntry" : "compareEntry"));
  mark("import");
  await mod.default();
  mark("init");
  make = () => new mod.JobGuard();
} else {
  const { BaselineGuard } = await import("./baseline.js");
  mark("import");
  mark("init");
  make = () => new BaselineGuard();
}
const guard = make();
mark("construct");
guard.login({ userId: 1 });
mark("login");
guard.recordJob(meta);
mark("recordJob");
const jobs = guard.jobs();
mark("jobs");
if (jobs.length !== 1) throw new Error(`jobs() gave ${jobs.length} records`);
// The first query() to its result (bench/serve.mjs answers as Superset's main does a synchronous query:
// rows at once); the baseline's is one fetch.
const outcome = await guard.query({ queries: [{ columns: ["name"], row_limit: 100 }] });
mark("query");
if ((outcome.outcome ?? outcome.status) !== "done") throw new Error(`query() gave ${JSON.stringify(outcome).slice(0, 300)}`);

const steps = {};
for (let i = 1; i < marks.length; i++) steps[marks[i][0]] = marks[i][1] - marks[i - 1][1];
// From the navigation's start (the page's time origin) to the end of `login`: the page's
// own download and parse too, and whatever downloads overlap them.
steps.navigation = marks.find(([name]) => name === "login")[1];
window.startup = { steps };
document.getElementById("status").textContent = "done";
// The result as a console message: bench/startup.mjs listens for it instead of asking the page,
// since the first question Playwright asks a page compiles its injected script on the page's
// main thread (about 14 ms here), in the middle of the steps being timed.
console.log(`startup ${JSON.stringify(window.startup)}`);
