"use client";
// The README's Next.js pattern: a client component with the provider, no `await init()` (a
// module-level await would run in the server render too): the provider renders its children
// with no guard on the server and loads the module in the browser.
import { useEffect } from "react";
import { JobGuardProvider, useJobGuard, useJobs } from "superset-job-guard/react";

const JOB = "10a0bd9a-03c8-4737-9345-f4234ba86512";

function List() {
  const guard = useJobGuard(); // null on the server and until the module has loaded
  const jobs = useJobs();
  useEffect(() => {
    if (!guard) return;
    guard.logout();
    guard.login({ userId: 1 });
    guard.recordJob({ channel_id: "chan-1", job_id: JOB, user_id: "1", status: "pending", errors: [], result_url: null });
  }, [guard]);
  return (
    <ul id="jobs" data-guard={guard ? "yes" : "no"}>
      {jobs.map((job) => (
        <li key={job.job_id} data-status={job.status}>
          {job.job_id}
        </li>
      ))}
    </ul>
  );
}

export function Jobs() {
  return (
    <JobGuardProvider options={{ namespace: "next-check" }} follow={false}>
      <List />
    </JobGuardProvider>
  );
}
