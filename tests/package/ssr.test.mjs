// Server rendering in Node, as Next.js's server render runs a client component: importing the
// package and superset-job-guard/react (ES modules and `require`) and rendering the provider
// makes no guard: nothing is fetched, no storage is read, nothing throws, the children render
// with no records. (tests/consumers/ hydrates such HTML in Chromium, and renders the `require`
// build in the React 17 app, from the tarball: in this repository pkg/node/react.js cannot
// resolve the package by name.)
import { test } from "node:test";
import assert from "node:assert/strict";

/** Runs `fn` with fetch and a localStorage that record every use. */
async function watched(fn) {
  const touched = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (...args) => {
    touched.push(`fetch ${args[0]}`);
    return realFetch(...args);
  };
  globalThis.localStorage = new Proxy({}, { get: (_, key) => touched.push(`localStorage.${String(key)}`) && undefined });
  try {
    return { value: await fn(), touched };
  } finally {
    globalThis.fetch = realFetch;
    delete globalThis.localStorage;
  }
}

function app(React, hooks) {
  const h = React.createElement;
  function Jobs() {
    const guard = hooks.useJobGuard();
    const jobs = hooks.useJobs();
    const session = hooks.useSession();
    const { outcomes } = hooks.useCancelOutcomes();
    const { pending, outcome } = hooks.useCancel("job-1");
    return h("p", null, `guard:${guard} jobs:${jobs.length} session:${session} outcomes:${outcomes.size} pending:${pending} outcome:${outcome}`);
  }
  return h(hooks.JobGuardProvider, { options: { namespace: "ssr" } }, h(Jobs));
}

const rendered = "<p>guard:null jobs:0 session:null outcomes:0 pending:false outcome:null</p>";

test("the ES-module entries render the provider's children on a server with no guard, no fetch, no storage", async () => {
  const { value, touched } = await watched(async () => {
    const React = await import("react");
    const { renderToString } = await import("react-dom/server");
    const hooks = await import("superset-job-guard/react");
    return renderToString(app(React, hooks));
  });
  assert.equal(value, rendered);
  assert.deepEqual(touched, []);
});

test("a cancel before the provider has its guard sends nothing and answers refused", async () => {
  const React = await import("react");
  const { renderToString } = await import("react-dom/server");
  const hooks = await import("superset-job-guard/react");
  let cancel;
  function Grab() {
    ({ cancel } = hooks.useCancel("job-1"));
    return null;
  }
  const { touched } = await watched(() => renderToString(React.createElement(hooks.JobGuardProvider, null, React.createElement(Grab))));
  const outcome = await cancel();
  assert.deepEqual(
    { outcome: outcome.outcome, reason: outcome.reason, attempts: outcome.attempts, httpStatus: outcome.httpStatus, jobId: outcome.jobId },
    { outcome: "refused", reason: "no_session", attempts: 0, httpStatus: null, jobId: "job-1" },
  );
  assert.deepEqual(touched, []);
});
