// The app start-up bench's entry (bench/app-startup.mjs): www/react/main.jsx's mount of the
// React demo (its App and setup.js, unchanged), with a probe beside the App that reports when
// the job list (the demo's `#jobs`) is first committed, painted, and when the page is ready
// (the demo's sign-in effect sets `body[data-ready]`). Times are from the navigation's start.
// The figures go out as one console message, so that the bench asks the page nothing while it
// runs (bench/startup.js says why).
import { StrictMode, useLayoutEffect } from "react";
import { createRoot } from "react-dom/client";
import { JobGuardProvider } from "superset-job-guard/react";

import { App } from "../../www/react/App.jsx";
import { me, options } from "../../www/react/setup.js";

// `setup`: this line runs after the bundled modules before it, setup.js's `await init()` and
// its fetch of /api/v1/me/ included.
const times = { setup: performance.now() };
let sent = false;
function report() {
  if (sent || times.painted === undefined || times.ready === undefined) return;
  sent = true;
  // The chunk's and the .wasm's downloads (responseEnd; transferSize 0: from the cache).
  for (const r of performance.getEntriesByType("resource")) {
    const kind = r.name.endsWith(".wasm") ? "wasm" : /\/assets\/.*\.js$/.test(r.name) ? "chunk" : null;
    if (kind) times[kind] = { responseEnd: r.responseEnd, transferSize: r.transferSize };
  }
  console.log(`appstartup ${JSON.stringify(times)}`);
}

function listCommitted() {
  if (times.rendered !== undefined || !document.getElementById("jobs")) return;
  times.rendered = performance.now();
  // The frame that shows it: the next animation frame, then the task after it.
  requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      times.painted = performance.now();
      report();
    };
    channel.port2.postMessage(0);
  });
}

/** Rendered after the App: its layout effect runs once the App's first commit is in the DOM. */
function Probe() {
  useLayoutEffect(listCommitted);
  return null;
}
// In case the list is not in the first commit (it is, unless hidden).
new MutationObserver(listCommitted).observe(document.getElementById("root"), { childList: true, subtree: true });
new MutationObserver(() => {
  if (times.ready === undefined && document.body.dataset.ready === "true") {
    times.ready = performance.now();
    report();
  }
}).observe(document.body, { attributes: true, attributeFilter: ["data-ready"] });

const root = createRoot(document.getElementById("root"));
root.render(
  <StrictMode>
    <JobGuardProvider options={options}>
      <App me={me} />
      <Probe />
    </JobGuardProvider>
  </StrictMode>,
);
