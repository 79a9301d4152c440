// The framework check page in Angular (standalone, server-rendered): the guard through
// superset-job-guard/angular's injectable and signals.
import { Component, computed, inject, signal } from "@angular/core";
import { JOB_GUARD, injectChartData, injectWaitFor } from "superset-job-guard/angular";
import type { QueryBody, WaitInput } from "superset-job-guard";
import { CHART, signIn, signOut, start202 } from "./actions.js";

export const TAB = "angular-tab";

@Component({
  selector: "app-root",
  template: `
    <main
      id="sjg"
      [attr.data-guard]="guard() ? 'yes' : 'no'"
      [attr.data-user]="session()?.userId ?? ''"
      [attr.data-waiting]="String(wait.waiting())"
      [attr.data-cancel]="cancelled()"
      [attr.data-rows]="rows()"
      [attr.data-error]="error() || loadError()"
    >
      <button id="signin" (click)="signin()">Sign in</button>
      <button id="record" (click)="record()">Run a query</button>
      <button id="abort" (click)="abort()">Abort it</button>
      <button id="chart" (click)="chart()">Chart</button>
      <button id="logout" (click)="logout()">Log out</button>
      <ul id="jobs">
        @for (job of jobs(); track job.job_id) {
          <li [attr.data-status]="job.status">{{ job.job_id }}</li>
        }
      </ul>
    </main>
  `,
})
export class App {
  private readonly sjg = inject(JOB_GUARD);
  readonly guard = this.sjg.guard;
  readonly jobs = this.sjg.jobs;
  readonly session = this.sjg.session;
  readonly waitInput = signal<WaitInput | null>(null);
  readonly wait = injectWaitFor(this.waitInput);
  readonly chartBody = signal<QueryBody | null>(null);
  readonly chartData = injectChartData(this.chartBody);
  readonly rows = computed(() => {
    const result = this.chartData.result() as { result?: { data?: unknown[] }[] } | null;
    return result?.result?.[0]?.data?.length ?? 0;
  });
  // A failed init(): a GuardError, typed so (its message read under the strict build).
  readonly loadError = computed(() => this.sjg.error()?.message ?? "");
  readonly cancelled = signal("");
  readonly error = signal("");
  protected readonly String = String;

  private act(f: () => Promise<unknown>) {
    f().catch((e: unknown) => this.error.set(String((e as Error)?.message ?? e)));
  }
  signin() {
    this.act(() => signIn(this.guard()!));
  }
  record() {
    this.act(async () => this.waitInput.set(await start202(TAB)));
  }
  abort() {
    this.act(async () => {
      const id = this.jobs()[0].job_id;
      this.waitInput.set(null); // the wait is aborted (its cancel sent) when the effect runs
      await new Promise((r) => setTimeout(r, 0));
      this.cancelled.set((await this.guard()!.cancel(id)).outcome); // that cancel, still running
    });
  }
  chart() {
    this.act(async () => this.chartBody.set(CHART));
  }
  logout() {
    this.act(() => signOut(this.guard()!));
  }
}
