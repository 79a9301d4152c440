/**
 * A Jest suite as Superset's frontend runs them (jsdom), loading the real guard through
 * `require` (the package's CommonJS build), not a mock.
 * @jest-environment jsdom
 */
const { JobGuard, isGuardError } = require("superset-job-guard");

const meta = (job_id, user_id) => ({ channel_id: "chan-1", job_id, user_id, status: "running", errors: [], result_url: null });

test("the real guard, on jsdom's localStorage", () => {
  const guard = new JobGuard({ namespace: "jest-check" });
  expect(guard.storage.kind).toBe("local");
  guard.login({ userId: 1 });
  const record = guard.recordJob(meta("job-1", "1"));
  expect(guard.checkCancel(record.job_id).allowed).toBe(true);
  expect(guard.checkCancel("someone-elses").reason).toBe("unknown_job");
  expect(Object.keys(localStorage).sort()).toEqual(["jest-check:v1:job:job-1", "jest-check:v1:session"]);
  let code = null;
  try {
    guard.recordJob(meta("other", "2"));
  } catch (e) {
    code = isGuardError(e) ? e.code : String(e);
  }
  expect(code).toBe("not_job_owner");
  // Arguments are read as JSON.stringify writes them, proxies too.
  guard.login(new Proxy({ userId: 1 }, {}));
  const out = guard.logout();
  expect(out.purged).toBe(1);
  // No query ran, so nothing was stopped, and `stopped` settles at once.
  expect(typeof out.stopped.then).toBe("function");
  return out.stopped.then(() => {
    expect(localStorage.length).toBe(0);
  });
});

test("a cancel through a mocked fetch resolves to its outcome", async () => {
  const calls = [];
  const fetch = async (url) => {
    calls.push(url);
    return { status: 403, headers: { get: () => null } };
  };
  const guard = new JobGuard({ namespace: "jest-cancel", fetch });
  guard.login({ userId: 1 });
  guard.recordJob(meta("job-2", "1"));
  const outcome = await guard.cancel("job-2");
  expect(outcome.outcome).toBe("not_job_owner");
  expect(calls).toEqual(["/api/v1/async_event/job-2/cancel"]);
  guard.free();
});

test("superset-job-guard/react under require: the provider and hooks render", () => {
  const { createElement } = require("react");
  const { renderToString } = require("react-dom/server");
  const { JobGuardProvider, useJobs, useSession } = require("superset-job-guard/react");
  const guard = new JobGuard({ namespace: "jest-react" });
  guard.login({ userId: 7 });
  guard.recordJob(meta("job-3", "7"));
  function Jobs() {
    const session = useSession();
    const jobs = useJobs();
    return createElement("p", null, `${session.userId}: ${jobs.map((j) => j.job_id).join(",")}`);
  }
  const html = renderToString(createElement(JobGuardProvider, { guard }, createElement(Jobs)));
  expect(html).toBe("<p>7: job-3</p>");
  guard.logout();
});
