import { useEffect, useRef, useState } from "react";
import { useCancel, useCancelOutcomes, useJobGuard, useJobs, useSession, useWaitFor } from "superset-job-guard/react";

/** The app's own requests: same-origin cookies and Superset's CSRF header. */
export const api = {
  csrf: null,
  contract: "task",
  tabId: null,
  headers() {
    return { "content-type": "application/json", ...(this.csrf ? { "X-CSRFToken": this.csrf } : {}) };
  },
  async call(method, path, body) {
    const response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: this.headers(),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, data: await response.json().catch(() => ({})) };
  },
  async refreshCsrf() {
    this.csrf = (await this.call("GET", "/api/v1/security/csrf_token/")).data.result ?? null;
  },
};

// For the tests: how many times the jobs list rendered.
window.renders = 0;

export function App({ me }) {
  const guard = useJobGuard();
  window.guard = guard; // for the tests and the curious: the provider's guard
  const session = useSession();
  const [showJobs, setShowJobs] = useState(true);
  const [showChart, setShowChart] = useState(true);
  const [user, setUser] = useState("1");
  const [note, setNote] = useState("");

  // Page load: sign the guard in as the server's session.
  useEffect(() => {
    // StrictMode (development) runs this twice with two guards: only the current one signs in.
    let current = true;
    if (!guard) return undefined; // not loaded yet (this app awaits init() first: never)
    (async () => {
      if (me.user) {
        await api.refreshCsrf();
        if (current) guard.login({ userId: me.user.id });
      } else if (guard.session) {
        guard.logout();
      }
      if (current) document.body.dataset.ready = "true";
    })();
    return () => {
      current = false;
    };
  }, [guard, me]);

  async function signIn(user) {
    const { status } = await api.call("POST", "/login", { user });
    if (status !== 200) return setNote(`Sign-in failed (HTTP ${status})`);
    await api.refreshCsrf();
    const { purged } = guard.login({ userId: Number(user) });
    setNote(purged ? `Removed ${purged} record(s) of the previous session` : "Signed in");
  }

  async function signOut() {
    // The guard first (it stops the session's queries while the session still is), then the
    // server's sign-out once those stops are answered.
    await guard.logout().stopped;
    await api.call("POST", "/logout");
    setNote("Signed out");
  }

  async function runChart(name) {
    const { status, data } = await api.call("POST", "/api/v1/chart/data", { chart: name, tab_id: api.tabId });
    if (status !== 202) return setNote(data.message ?? `Query failed (HTTP ${status})`);
    if (api.contract === "task") guard.recordTasks(data);
    else guard.recordJob(data);
  }

  return (
    <main>
      <header className="panel">
        <h1>Async jobs (React)</h1>
        <span id="session">
          {session ? `Signed in as user ${session.userId}` : "Signed out"}
        </span>
        <select id="user" aria-label="sign in as" value={user} onChange={(e) => setUser(e.target.value)}>
          <option value="1">alice</option>
          <option value="2">bob</option>
          <option value="3">carol</option>
        </select>
        <button id="login" type="button" onClick={() => signIn(user)}>Sign in</button>
        <button id="logout" type="button" className="secondary" onClick={signOut}>Sign out</button>
        <button type="button" className="chart" onClick={() => runChart("Revenue by region")}>Revenue by region</button>
        <button id="toggle" type="button" className="secondary" onClick={() => setShowJobs((v) => !v)}>
          {showJobs ? "Hide jobs" : "Show jobs"}
        </button>
        <p id="note">{note}</p>
      </header>
      {showChart && <Chart onHide={() => setShowChart(false)} />}
      {!showChart && (
        <p className="panel">
          <button id="show-chart" type="button" className="secondary" onClick={() => setShowChart(true)}>Show chart</button>
        </p>
      )}
      {showJobs && <Jobs />}
    </main>
  );
}

const REGIONS = ["EMEA", "Americas", "APAC"];

/**
 * A chart whose query is awaited with useWaitFor. Its region filter supersedes the running
 * query, as Superset's own dashboards do: a new request, a new 202 body, and the hook aborts the
 * wait for the old one, which cancels it (the guard's cancel: this tab's id on the task
 * contract). Hiding the chart (unmounting it) cancels a query still running.
 */
function Chart({ onHide }) {
  const guard = useJobGuard();
  const [region, setRegion] = useState("");
  const [body, setBody] = useState(null); // the 202 body of the current query
  const [error, setError] = useState("");
  const latest = useRef(0);
  const { outcome, waiting } = useWaitFor(body);

  async function filter(next) {
    setRegion(next);
    setError("");
    const asked = ++latest.current;
    if (!next) return setBody(null); // no filter: no query (a running one is cancelled)
    const { status, data } = await api.call("POST", "/api/v1/chart/data", { chart: `Sales (${next})`, tab_id: api.tabId });
    if (asked !== latest.current) {
      // A later filter came first: this answer's query is not wanted. Waiting and aborting at
      // once records it and cancels it (unless the current query awaits the same job).
      if (status === 202 && guard) {
        const stop = new AbortController();
        guard.waitFor(data, { signal: stop.signal });
        stop.abort();
      }
      return undefined;
    }
    if (status !== 202) {
      setBody(null);
      return setError(data.message ?? `Query failed (HTTP ${status})`);
    }
    setBody(data);
  }

  const ids = outcome?.jobIds ?? (body ? (body.task_ids ?? (body.job_id ? [body.job_id] : [])) : []);
  const state = error ? "error" : (outcome?.outcome ?? (waiting ? "waiting" : ""));
  return (
    <section className="panel" id="chart">
      <h2>Sales by region</h2>
      <label>
        Region{" "}
        <select id="region" value={region} onChange={(e) => filter(e.target.value)}>
          <option value="">(choose one)</option>
          {REGIONS.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
      </label>{" "}
      <button id="hide-chart" type="button" className="secondary" onClick={onHide}>Hide chart</button>
      <p id="chart-status" data-state={state} data-job-ids={ids.join(" ")}>
        {error || (outcome ? outcome.message : waiting ? `Waiting for ${region}…` : "Pick a region to run the query.")}
      </p>
    </section>
  );
}

function Jobs() {
  const jobs = useJobs();
  window.renders += 1;
  return (
    <section className="panel">
      <table>
        <tbody id="jobs">
          {jobs.map((job) => <JobRow key={job.job_id} job={job} />)}
        </tbody>
      </table>
      {jobs.length === 0 && <p id="empty" className="hint">No jobs.</p>}
      <Gone jobs={jobs} />
    </section>
  );
}

/** Outcomes whose record is gone (not job owner, left, already finished): their rows are too. */
function Gone({ jobs }) {
  const { outcomes, dismiss } = useCancelOutcomes();
  const gone = [...outcomes.values()].filter((o) => !jobs.some((j) => j.job_id === o.jobId));
  return (
    <ul id="gone">
      {gone.map((o) => (
        <li key={o.jobId} data-job-id={o.jobId} data-outcome={o.outcome}>
          {o.jobId.slice(0, 8)}: {o.message}{" "}
          <button type="button" className="secondary dismiss" onClick={() => dismiss(o.jobId)}>Dismiss</button>
        </li>
      ))}
    </ul>
  );
}

function JobRow({ job }) {
  const { cancel, pending, outcome } = useCancel(job.job_id);
  const guard = useJobGuard();
  const allowed = guard?.checkCancel(job.job_id).allowed ?? false;
  return (
    <tr data-job-id={job.job_id}>
      <td>{job.job_id.slice(0, 8)}</td>
      <td><span className={`status ${job.status}`}>{job.status}</span></td>
      <td>
        <button type="button" className="secondary cancel" disabled={pending || !allowed} onClick={cancel}>
          {pending ? "Cancelling…" : "Cancel"}
        </button>
      </td>
      <td className="outcome" data-outcome={outcome?.outcome ?? ""}>{outcome?.message ?? ""}</td>
    </tr>
  );
}
