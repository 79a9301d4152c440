// useWaitFor and useChartData in a real browser against the reference server (the task
// contract, and synchronous charts with their stop endpoint), bundled from the
// packed tarball in React's development build under StrictMode (React 18 and 19 mount every
// effect twice). The module is not loaded before the first render: the provider loads it, and
// the hook's wait starts when the guard comes. tests/consumers/wait-for.test.mjs drives
// window.harness and reads the server's requests.
import { StrictMode, useEffect } from "react";
import { JobGuardProvider, useChartData, useJobGuard, useWaitFor } from "superset-job-guard/react";
import { mount } from "./mount.js";

let csrf = null;
const headers = () => ({ "content-type": "application/json", ...(csrf ? { "X-CSRFToken": csrf } : {}) });
await fetch("/login", { method: "POST", headers: headers(), body: JSON.stringify({ user: "1" }) });
csrf = (await (await fetch("/api/v1/security/csrf_token/")).json()).result;

const tabId = "tab-wait";
const options = {
  contract: "task",
  tabId,
  namespace: "wait-for-test",
  fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, ...headers() } }),
};

// Every state the probe rendered, and the one it rendered before the guard existed.
window.states = [];
window.beforeGuard = null;
window.waitCalls = 0;
window.queryCalls = 0;
window.charts = [];

function Login() {
  const guard = useJobGuard();
  useEffect(() => {
    if (!guard) return;
    window.guard = guard;
    guard.login({ userId: 1 });
    // Counts the waits the hook starts (StrictMode must not start a second one).
    if (!guard.waitFor.counted) {
      const waitFor = guard.waitFor.bind(guard);
      guard.waitFor = (...args) => {
        window.waitCalls += 1;
        return waitFor(...args);
      };
      guard.waitFor.counted = true;
      const query = guard.query.bind(guard);
      guard.query = (...args) => {
        window.queryCalls += 1;
        return query(...args);
      };
    }
  }, [guard]);
  return null;
}

function Probe({ input }) {
  const guard = useJobGuard();
  const state = useWaitFor(input, { staleTimeoutMs: 600000 });
  const seen = { waiting: state.waiting, outcome: state.outcome && state.outcome.outcome, jobIds: state.outcome && state.outcome.jobIds };
  if (!guard && !window.beforeGuard) window.beforeGuard = seen;
  window.states.push(seen);
  window.state = seen;
  return <p id="probe">{state.waiting ? "waiting" : state.outcome ? state.outcome.message : "nothing"}</p>;
}

function ChartProbe({ body }) {
  const { outcome, result, pending } = useChartData(body, { staleTimeoutMs: 600000 });
  const seen = {
    pending,
    outcome: outcome && outcome.outcome,
    reason: outcome && outcome.reason,
    clientId: outcome && outcome.clientId,
    rows: result ? result.result[0].data : null,
  };
  window.charts.push(seen);
  window.chart = seen;
  return <p id="chart">{pending ? "loading" : outcome ? outcome.message : "nothing"}</p>;
}

window.harness = {
  async query(chart, durationMs) {
    const response = await fetch("/api/v1/chart/data", {
      method: "POST",
      headers: headers(),
      body: JSON.stringify({ chart, tab_id: tabId, durationMs }),
    });
    return { status: response.status, body: await response.json() };
  },
  /** Renders the chart probe with `body`, or no probe at all when `probe` is false. */
  chart(body, probe = true) {
    mount.render(
      <StrictMode>
        <JobGuardProvider options={options} useSyncExternalStore={mount.useSyncExternalStore}>
          <Login />
          {probe && <ChartProbe body={body} />}
        </JobGuardProvider>
      </StrictMode>,
    );
  },
  /** Renders the probe with `input`, or no probe at all when `probe` is false. */
  show(input, probe = true) {
    mount.render(
      <StrictMode>
        <JobGuardProvider options={options} useSyncExternalStore={mount.useSyncExternalStore}>
          <Login />
          {probe && <Probe input={input} />}
        </JobGuardProvider>
      </StrictMode>,
    );
  },
};
document.body.dataset.ready = "true";
