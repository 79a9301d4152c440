// The React dashboard: what www/app.js does, with superset-job-guard/react. Served by
// `npm start` under /react/ (built by Vite); bundled by Vite and webpack 5 in `npm test`.
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import init from "superset-job-guard";
import { JobGuardProvider } from "superset-job-guard/react";

import { App, api } from "./App.jsx";

await init(); // fetches the .wasm (webpack's build: nothing to do)
const me = await (await fetch("/api/v1/me/", { credentials: "same-origin" })).json();
api.contract = me.contract === "async_event" ? "async_event" : "task";
let tabId = sessionStorage.getItem("dashboard-tab-id");
if (!tabId) {
  tabId = `tab-${crypto.randomUUID().slice(0, 8)}`;
  sessionStorage.setItem("dashboard-tab-id", tabId);
}
api.tabId = tabId;

const options = {
  contract: api.contract,
  tabId,
  // Through the app's fetch, so the cancel carries the current CSRF header.
  fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, ...api.headers() } }),
};
const root = createRoot(document.getElementById("root"));
// For the tests: unmounting the app frees its guard.
window.unmountApp = () => root.unmount();
root.render(
  <StrictMode>
    <JobGuardProvider options={options}>
      <App me={me} />
    </JobGuardProvider>
  </StrictMode>,
);
