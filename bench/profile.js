// One operation of the bench in a loop, for a CPU profile (bench/profile-call.mjs).
import init, { JobGuard } from "/js/index.js";

await init();
const params = new URLSearchParams(location.search);
const op = params.get("op") ?? "job";
const n = Number(params.get("jobs") ?? 200);
const ns = "profile";
localStorage.clear();
localStorage.setItem(`${ns}:v1:session`, JSON.stringify({ user_id: "1", channel_id: "chan-1" }));
const meta = (i, status = "running") => ({
  channel_id: "chan-1", job_id: `job-${i}`, user_id: "1", status, errors: [], result_url: null,
});
for (let i = 0; i < n; i++) {
  const t = Date.now() - (n - i);
  localStorage.setItem(`${ns}:v1:job:job-${i}`, JSON.stringify({ ...meta(i), created_at: t, updated_at: t }));
}
const g = new JobGuard({ namespace: ns, maxJobs: 10000 });
const OPS = {
  job: (i) => g.job(`job-${i % n}`),
  checkCancel: (i) => g.checkCancel(`job-${i % n}`),
  applyEvent: (i) => g.applyEvent({ ...meta(i % n), id: `${i}-0` }),
  recordJob: (i) => g.recordJob(meta(i % n)),
  construct: () => {
    const page = new JobGuard({ namespace: ns, maxJobs: 10000 });
    page.login({ userId: 1 });
    page.free();
  },
};
window.run = (ms) => {
  const t0 = performance.now();
  let i = 0;
  while (performance.now() - t0 < ms) for (let k = 0; k < 100; k++) OPS[op](i++);
  return ((performance.now() - t0) / i) * 1e6;
};
document.getElementById("status").textContent = "ready";
