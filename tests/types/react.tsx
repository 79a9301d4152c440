// Typed React usage of superset-job-guard/react, compiled with `tsc --strict` (JSX) by npm test.
import init, { type CancelOutcome, type JobRecord } from "superset-job-guard";
import {
  JobGuardProvider,
  useCancel,
  useCancelOutcomes,
  useJobGuard,
  useJobs,
  useSession,
  type CancelOutcomes,
  type CancelState,
  type JobGuardProviderProps,
} from "superset-job-guard/react";

function Row({ job }: { job: JobRecord }) {
  const state: CancelState = useCancel(job.job_id);
  const { cancel, pending, outcome } = state;
  const message: string | undefined = outcome?.message;
  const run: () => Promise<CancelOutcome> = cancel;
  return (
    <tr>
      <td>{job.channel_id === null ? `task ${job.status}` : job.status}</td>
      <td>
        <button disabled={pending} onClick={() => void run()}>
          Cancel
        </button>
        {message}
      </td>
    </tr>
  );
}

function Gone({ jobs }: { jobs: readonly JobRecord[] }) {
  // Outcomes whose record is gone (not_job_owner, left, already_finished) stay readable.
  const kept: CancelOutcomes = useCancelOutcomes();
  const { outcomes, dismiss } = kept;
  const gone = [...outcomes.values()].filter((o) => !jobs.some((j) => j.job_id === o.jobId));
  return (
    <ul>
      {gone.map((o) => (
        <li key={o.jobId}>
          {o.message} <button onClick={() => dismiss(o.jobId)}>Dismiss</button>
        </li>
      ))}
    </ul>
  );
}

function Jobs() {
  const jobs: readonly JobRecord[] = useJobs();
  const session = useSession();
  const guard = useJobGuard();
  const user: string | null = session ? session.userId : null;
  // @ts-expect-error null until the provider has its guard (a server render, or before init())
  guard.jobs();
  // @ts-expect-error the records are read-only: changes go through the guard
  jobs.push(guard?.jobs()[0]);
  return (
    <table data-user={user ?? ""}>
      <tbody>{jobs.map((job) => <Row key={job.job_id} job={job} />)}</tbody>
      <caption>
        <Gone jobs={jobs} />
      </caption>
    </table>
  );
}

export async function app() {
  await init();
  const element = (
    <JobGuardProvider options={{ contract: "task", tabId: "tab-1" }}>
      <Jobs />
    </JobGuardProvider>
  );
  const props: JobGuardProviderProps = { options: { contract: "task" }, follow: false };
  const quiet = <JobGuardProvider {...props} />;
  const slow = <JobGuardProvider options={{}} follow={{ intervalMs: 2000 }} />;
  // @ts-expect-error options are the guard's, typed
  const bad = <JobGuardProvider options={{ contract: "tasks" }} />;
  // @ts-expect-error follow is a boolean or follow's options
  const wrong = <JobGuardProvider follow="yes" />;
  // React 16.8 and 17: the shim of use-sync-external-store (its signature, declared here: the
  // types tests install no @types/use-sync-external-store).
  const shim = null as unknown as <T>(subscribe: (cb: () => void) => () => void, snapshot: () => T, server?: () => T) => T;
  const legacy = <JobGuardProvider options={{}} useSyncExternalStore={shim} />;
  // @ts-expect-error useSyncExternalStore is the hook, not a flag
  const flag = <JobGuardProvider useSyncExternalStore={true} />;
  // @ts-expect-error useCancel takes a job id
  useCancel(5);
  return [element, quiet, slow, bad, wrong, legacy, flag];
}
