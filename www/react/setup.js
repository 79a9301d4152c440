// The React dashboard's start-up, shared by every React version's mount (main.jsx, and the
// tests' React 17 mount): the wasm module, the server's session, this tab's id and the
// guard's options.
import init from "superset-job-guard";

import { api } from "./App.jsx";

await init(); // fetches the .wasm, once per page
export const me = await (await fetch("/api/v1/me/", { credentials: "same-origin" })).json();
api.contract = me.contract === "async_event" ? "async_event" : "task";
// One tab id per tab, kept in sessionStorage (it survives a reload, and each tab has its own),
// as Superset's frontend does; the chart-data requests carry the same `tab_id`.
let tabId = sessionStorage.getItem("dashboard-tab-id");
if (!tabId) {
  tabId = `tab-${crypto.randomUUID().slice(0, 8)}`;
  sessionStorage.setItem("dashboard-tab-id", tabId);
}
api.tabId = tabId;

export const options = {
  contract: api.contract,
  tabId,
  // Through the app's fetch, so the cancel carries the current CSRF header.
  fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, ...api.headers() } }),
};
