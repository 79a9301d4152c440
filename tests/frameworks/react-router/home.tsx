// The framework check page in React Router's framework mode (server-rendered): the guard
// through superset-job-guard/react. The provider renders no guard on the server and loads the
// module in the browser.
import { useState } from "react";
import type { QueryBody, WaitInput } from "superset-job-guard";
import { JobGuardProvider, useChartData, useJobGuard, useJobs, useSession, useWaitFor } from "superset-job-guard/react";
import { CHART, csrfFetch, signIn, signOut, start202 } from "../actions.js";

const TAB = "rr-tab";
const options = { contract: "task" as const, tabId: TAB, fetch: csrfFetch };

export default function Home() {
  return (
    <JobGuardProvider options={options}>
      <Checks />
    </JobGuardProvider>
  );
}

function Checks() {
  const guard = useJobGuard();
  const jobs = useJobs();
  const session = useSession();
  const [waitInput, setWaitInput] = useState<WaitInput | null>(null);
  const { waiting } = useWaitFor(waitInput);
  const [body, setBody] = useState<QueryBody | null>(null);
  const { result } = useChartData(body);
  const rows = (result as { result?: { data?: unknown[] }[] } | null)?.result?.[0]?.data?.length ?? 0;
  const [cancelled, setCancelled] = useState("");
  const [error, setError] = useState("");
  const act = (f: () => Promise<unknown>) => () => {
    f().catch((e: unknown) => setError(String((e as Error)?.message ?? e)));
  };
  const abort = act(async () => {
    const id = jobs[0].job_id;
    setWaitInput(null); // the wait is aborted (its cancel sent) when React commits
    await new Promise((r) => setTimeout(r, 0));
    setCancelled((await guard!.cancel(id)).outcome); // that cancel, still running
  });
  return (
    <main
      id="sjg"
      data-guard={guard ? "yes" : "no"}
      data-user={session?.userId ?? ""}
      data-waiting={String(waiting)}
      data-cancel={cancelled}
      data-rows={rows}
      data-error={error}
    >
      <button id="signin" onClick={act(() => signIn(guard!))}>Sign in</button>
      <button id="record" onClick={act(async () => setWaitInput(await start202(TAB)))}>Run a query</button>
      <button id="abort" onClick={abort}>Abort it</button>
      <button id="chart" onClick={act(async () => setBody(CHART))}>Chart</button>
      <button id="logout" onClick={act(() => signOut(guard!))}>Log out</button>
      <ul id="jobs">
        {jobs.map((job) => (
          <li key={job.job_id} data-status={job.status}>
            {job.job_id}
          </li>
        ))}
      </ul>
    </main>
  );
}
