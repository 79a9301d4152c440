// useCancel(jobId) when jobId changes while a cancel of the previous job runs: the hook
// follows its current job. Bundled from the tarball by Vite; the result lands in
// document.body.dataset.result.
import init, { JobGuard } from "superset-job-guard";
import { JobGuardProvider, useCancel } from "superset-job-guard/react";
import { createRoot } from "react-dom/client";
import { flushSync } from "react-dom";

await init();
const calls = [];
// The first request never answers (whatever its signal says); the others answer 200. The
// provider does not follow the event stream here (follow={false}): only cancels are requested.
function fetch(url) {
  calls.push(String(url));
  if (calls.length === 1) return new Promise(() => {});
  return Promise.resolve(new Response(null, { status: 200 }));
}
const guard = new JobGuard({ namespace: "hooks-check", fetch, timeoutMs: 60000 });
guard.logout();
guard.login({ userId: 1 });
for (const job_id of ["job-a", "job-b"]) {
  guard.recordJob({ channel_id: "c", job_id, user_id: "1", status: "running", errors: [], result_url: null });
}

let hook;
function Probe({ jobId }) {
  hook = useCancel(jobId);
  return null;
}
const root = createRoot(document.getElementById("root"));
const show = (jobId) =>
  flushSync(() =>
    root.render(
      <JobGuardProvider guard={guard} follow={false}>
        <Probe jobId={jobId} />
      </JobGuardProvider>,
    ),
  );
const wait = (ms) => new Promise((resolve) => setTimeout(() => resolve(null), ms));

show("job-a");
let first;
flushSync(() => {
  first = hook.cancel();
});
const pendingA = hook.pending;
show("job-b");
const pendingBBefore = hook.pending;
let second;
flushSync(() => {
  second = hook.cancel();
});
const outcome = await Promise.race([second, wait(3000)]);
await wait(50);
const shown = hook.outcome;
// Back to job-a: its cancel still runs (the hook shares it, no second request).
show("job-a");
let again;
flushSync(() => {
  again = hook.cancel();
});
// Unmounting aborts the cancel still in flight.
root.unmount();
const firstOutcome = await Promise.race([first, wait(3000)]);
document.body.dataset.result = JSON.stringify({
  pendingA,
  pendingBBefore,
  sameAsFirst: first === second,
  outcome: outcome && { outcome: outcome.outcome, jobId: outcome.jobId },
  shown: shown && shown.jobId,
  sharedA: again === first,
  firstOutcome: firstOutcome && firstOutcome.outcome,
  calls,
});
