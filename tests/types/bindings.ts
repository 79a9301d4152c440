// The Svelte and Vue entries' types, as an app under NodeNext and --strict uses them.
import type { CancelOutcome, GuardError, JobRecord, QueryOutcome, SessionInfo, WaitOutcome } from "superset-job-guard";
import { createJobGuard as svelteGuard } from "superset-job-guard/svelte";
import type { ChartDataValue, JobGuardStores, WaitValue } from "superset-job-guard/svelte";
import { createJobGuard, useCancel, useChartData, useGuardError, useJobs, useSession, useWaitFor } from "superset-job-guard/vue";
import { ref } from "vue";

export function svelte(): string {
  const g: JobGuardStores = svelteGuard({ contract: "task", fetch: (input, init) => fetch(input, init) });
  const off = g.jobs.subscribe((jobs: readonly JobRecord[]) => void jobs.length);
  const session: SessionInfo | null = g.session.get();
  const chart = g.chartData({ url: "/api/v1/chart/data" });
  chart.run({ queries: [] });
  chart.run(null);
  const value: ChartDataValue = chart.get();
  const outcome: QueryOutcome | null = value.outcome;
  const wait = g.waitFor({ staleTimeoutMs: 1000 });
  wait.run(["10a0bd9a-03c8-4737-9345-f4234ba86512"]);
  const waited: WaitValue = wait.get();
  const cancel = g.cancel("job-1");
  const running: Promise<CancelOutcome> = cancel.cancel();
  // @ts-expect-error a chart body is an object
  chart.run("SELECT 1");
  // @ts-expect-error the store's signal is its own
  g.chartData({ signal: new AbortController().signal });
  off();
  void running;
  return `${session?.userId} ${outcome?.outcome} ${waited.waiting}`;
}

export function vue(): string {
  const plugin = createJobGuard({ headers: { "X-CSRFToken": "t" } });
  plugin.free();
  const jobs = useJobs();
  const session = useSession();
  const region = ref("emea");
  const { result, outcome, pending } = useChartData(() => ({ queries: [{ filters: [region.value] }] }));
  const { outcome: waited } = useWaitFor(ref<string[] | null>(null));
  const { cancel } = useCancel(() => "job-1");
  const out: QueryOutcome | null = outcome.value;
  const w: WaitOutcome | null = waited.value;
  const first: JobRecord | undefined = jobs.value[0];
  void cancel;
  return `${session.value?.userId} ${first?.job_id} ${String(result.value)} ${pending.value} ${out?.outcome} ${w?.outcome}`;
}

// A failed init() or bad options: a GuardError, its code and message typed.
export function errors(): string {
  const failed: GuardError | null = svelteGuard().error.get();
  const vueFailed = useGuardError().value;
  return `${failed?.code ?? ""} ${failed?.message ?? ""} ${vueFailed?.code ?? ""}`;
}
