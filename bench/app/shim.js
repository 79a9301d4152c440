// The plain-JS stand-in for "superset-job-guard" in the app start-up bench (bench/app-startup.mjs):
// a Vite alias points the package's name here, so the same React app (www/react/ through
// js/react.js) is built without the WebAssembly module. `init()` resolves at once; `JobGuard`
// wraps bench/baseline.js's BaselineGuard (the same localStorage keys and JSON, parsed on every
// call) with the methods the demo and js/react.js call, as plain-JS stand-ins: enough for the
// page to start and render, not the guard's contract (no follow() poller, no cancel request).
import { BaselineGuard } from "../baseline.js";

export default function init() {
  return Promise.resolve({});
}

export function isGuardError(error) {
  return typeof error === "object" && error !== null && error.name === "GuardError" && typeof error.code === "string";
}

export class JobGuard {
  constructor(options = {}) {
    this.base = new BaselineGuard(options);
    this.listeners = new Set();
  }

  tell(type) {
    for (const l of [...this.listeners]) l({ type });
  }

  get session() {
    const s = this.base.session;
    return s ? { userId: s.user_id, channelId: s.channel_id, guestKey: null } : null;
  }

  login(input) {
    const before = this.base.session;
    const out = this.base.login(input);
    this.tell(before && before.user_id !== String(input.userId) ? "user_changed" : "login");
    return out;
  }

  logout() {
    const out = this.base.logout();
    this.tell("logout");
    return out;
  }

  recordJob(meta) {
    const out = this.base.recordJob(meta);
    this.tell("records");
    return out;
  }

  recordTasks(body) {
    const session = this.base.session;
    const out = (body.task_ids ?? []).map((id) =>
      this.base.recordJob({ channel_id: session?.channel_id ?? null, job_id: id, user_id: session?.user_id ?? null, status: "pending" }),
    );
    this.tell("records");
    return out;
  }

  applyEvent(event) {
    const out = this.base.applyEvent(event);
    if (out) this.tell("records");
    return out;
  }

  job(jobId) {
    return this.base.job(jobId);
  }

  jobs() {
    return this.base.jobs();
  }

  checkCancel(jobId) {
    return this.base.checkCancel(jobId);
  }

  async cancel(jobId) {
    const check = this.base.checkCancel(jobId);
    return { outcome: check.allowed ? "cancelled" : "refused", jobId: String(jobId), message: check.message ?? "cancelled", retryable: false, httpStatus: null, attempts: 0 };
  }

  waitFor(_input, { signal } = {}) {
    return new Promise((resolve) => signal?.addEventListener("abort", () => resolve({ outcome: "aborted", jobIds: [], message: "aborted" })));
  }

  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onChange(listener) {
    return this.subscribe(listener);
  }

  follow() {
    return () => {};
  }

  free() {
    this.listeners.clear();
  }
}
