// A React app rendered on a server first (renderToString in Node, as Next.js does) and
// hydrated in the browser: the provider has no guard on the server and until init() loads in
// the browser (the app never awaits it), then makes it. Plain createElement, so that Node runs
// it as it is.
import { Component, createElement as h, useEffect } from "react";
import { JobGuardProvider, useJobGuard, useJobs, useSession } from "superset-job-guard/react";

export const JOB = "10a0bd9a-03c8-4737-9345-f4234ba86512";

// What each render saw, for the test.
export const seen = [];

function Jobs() {
  const guard = useJobGuard();
  const jobs = useJobs();
  const session = useSession();
  seen.push({ guard: guard !== null, jobs: jobs.length, session: session?.userId ?? null });
  useEffect(() => {
    if (!guard) return;
    guard.logout();
    guard.login({ userId: 1 });
    guard.recordJob({ channel_id: "chan-1", job_id: JOB, user_id: "1", status: "pending", errors: [], result_url: null });
  }, [guard]);
  return h(
    "ul",
    { id: "jobs", "data-guard": guard ? "yes" : "no" },
    jobs.map((j) => h("li", { key: j.job_id }, j.job_id)),
  );
}

// The app's error boundary: where a rejected init() shows.
class Boundary extends Component {
  state = { error: null };
  static getDerivedStateFromError(error) {
    return { error };
  }
  render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    return h("p", { id: "failed", "data-code": error.code ?? "", "data-name": error.name }, error.message);
  }
}

export function App() {
  return h(
    Boundary,
    null,
    h(JobGuardProvider, { options: { namespace: "ssr-check" }, follow: false }, h("main", null, h("h1", null, "Jobs"), h(Jobs))),
  );
}
