// A tiny app that uses the package by name, as an app would; bundled by webpack and by Vite.
import init, { JobGuard, isGuardError } from "superset-job-guard";

await init();
const guard = new JobGuard({ namespace: "consumer-check" });
guard.logout();
guard.login({ userId: 1 });
const record = guard.recordJob({
  channel_id: "chan-1",
  job_id: "10a0bd9a-03c8-4737-9345-f4234ba86512",
  user_id: "1",
  status: "pending",
  errors: [],
  result_url: null,
});
let error = null;
try {
  guard.recordJob({ ...record, job_id: "other", user_id: "2" });
} catch (e) {
  error = isGuardError(e) ? e.code : String(e);
}
const result = {
  storage: guard.storage.kind,
  allowed: guard.checkCancel(record.job_id).allowed,
  refused: guard.checkCancel("someone-elses-job").reason,
  error,
};
guard.logout();
// After free(), a call throws the guard's own error (the entry's JobGuard: js/freeable.js).
guard.free();
try {
  guard.jobs();
  result.afterFree = "no error";
} catch (e) {
  result.afterFree = isGuardError(e) ? e.code : String(e);
}
document.body.dataset.result = JSON.stringify(result);
