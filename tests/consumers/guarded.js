// A tiny app that calls the package before init(), then loads it and runs the dashboard flow,
// leaving what it saw on the page: bundled by webpack 5 (Superset's bundler) and served with
// and without Superset's Content-Security-Policy.
import init, { JobGuard, classifyCancelResponse, isGuardError } from "superset-job-guard";

const result = {};
const code = (e) => (isGuardError(e) ? e.code : `${e?.name}: ${e?.message}`);
try {
  new JobGuard({ namespace: "guarded-check" });
  result.beforeInit = "no error";
} catch (e) {
  result.beforeInit = code(e);
  result.beforeInitMessage = e.message;
}
try {
  classifyCancelResponse(403);
  result.classifyBeforeInit = "no error";
} catch (e) {
  result.classifyBeforeInit = code(e);
}
try {
  await init();
  const guard = new JobGuard({ namespace: "guarded-check" });
  guard.logout();
  guard.login({ userId: 1 });
  guard.recordJob({
    channel_id: "chan-1",
    job_id: "10a0bd9a-03c8-4737-9345-f4234ba86512",
    user_id: "1",
    status: "pending",
    errors: [],
    result_url: null,
  });
  result.init = "loaded";
  result.jobs = guard.jobs().map((j) => j.job_id);
  result.classify = classifyCancelResponse(403).outcome;
  guard.logout();
  guard.free();
} catch (e) {
  result.init = code(e);
  result.initMessage = e.message;
}
document.body.dataset.result = JSON.stringify(result);
