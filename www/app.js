// The dashboard: sign in, run chart queries, watch their status live, cancel them. Every job
// record and every cancel goes through the guard. It speaks the contract the server names in
// /api/v1/me/: "task" (today's Superset: 202 with task ids, status_changes, per-tab cancel) or
// "async_event" (202 with job metadata, the async event stream).
//
// Queries are awaited with guard.waitFor: the filtered query (a select of regions) is awaited
// with an AbortController, and a new filter supersedes it (the old waiter is aborted, so the
// guard cancels its task); the tab's end cancels what it still awaits (cancelOnClose). The chart
// buttons' queries are awaited with `cancelOnClose: false`: they run on when the page reloads or
// closes, and warm the dashboard's cache for the next visit.
// `?follow=0` leaves follow() to the guard (it runs it while anything waits).
import init, { JobGuard, isGuardError } from "/js/index.js"; // the package's entry

await init();

const $ = (id) => document.getElementById(id);
const api = { csrf: null, guestToken: null, userName: null };

// Page load: who the server says is signed in (Superset's bootstrap data), and its contract.
const me = await (await fetch("/api/v1/me/", { credentials: "same-origin" })).json();
const contract = me.contract === "async_event" ? "async_event" : "task";
document.body.dataset.contract = contract;
// This tab's id, as Superset's frontend keeps one: it survives a reload, not a new tab.
let tabId = sessionStorage.getItem("dashboard-tab-id");
if (!tabId) {
  tabId = `tab-${crypto.randomUUID().slice(0, 8)}`;
  sessionStorage.setItem("dashboard-tab-id", tabId);
}
window.tabId = tabId;

/** A guest's key, derived from the guest token: one guest's records are never another's. */
async function guestKey(token) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return [...new Uint8Array(digest).slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The app's own requests: same-origin cookies, Superset's CSRF header, a guest token. */
function headers() {
  const h = { "content-type": "application/json" };
  if (api.csrf) h["X-CSRFToken"] = api.csrf;
  if (api.guestToken) h["X-GuestToken"] = api.guestToken;
  return h;
}

/** The guard's requests through the app's: the current CSRF and guest headers go with them. */
function appFetch(url, init = {}) {
  const h = new Headers(init.headers);
  for (const [k, v] of Object.entries(headers())) h.set(k, v);
  return fetch(url, { ...init, headers: h });
}

const options = {
  contract,
  tabId,
  retry: { attempts: 3, baseDelayMs: 200, maxDelayMs: 2000 },
  // Through the app's fetch, so the cancel carries the current CSRF and guest headers (the
  // keepalive cancel sent when the page closes too).
  fetch: appFetch,
};
const guard = new JobGuard(options);
// For the end-to-end tests and the curious: the guard in the console.
window.dashboard = { guard };
if (guard.storage.kind !== "local") {
  log(`Job metadata is kept in this page's memory only: ${guard.storage.reason ?? "storage off"}`, "refused");
}

const labels = new Map(); // job_id -> chart name, this tab only
const cancelling = new Set();

async function call(method, path, body) {
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: headers(),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  return { status: response.status, data };
}

function log(text, kind, detail = {}) {
  const li = document.createElement("li");
  li.className = kind;
  li.textContent = text;
  for (const [k, v] of Object.entries(detail)) li.dataset[k] = String(v);
  $("log").prepend(li);
}

function describe(outcome) {
  const sent = outcome.attempts === 0
    ? "no request sent"
    : `${outcome.attempts} request${outcome.attempts === 1 ? "" : "s"} sent`;
  return `${outcome.message} (${sent})`;
}

function render() {
  const session = guard.session;
  $("session").textContent = session
    ? session.userId === null
      ? "Signed in as guest"
      : `Signed in as ${api.userName ?? "user"} (user ${session.userId})`
    : "Signed out";
  document.body.dataset.signedIn = String(Boolean(session));
  const rows = guard.jobs().map((job) => {
    const tr = document.createElement("tr");
    tr.dataset.jobId = job.job_id;
    const cell = (text, cls) => {
      const td = document.createElement("td");
      if (cls) {
        const span = document.createElement("span");
        span.className = cls;
        span.textContent = text;
        td.append(span);
      } else td.textContent = text;
      return td;
    };
    const name = labels.get(job.job_id);
    const jobCell = cell(name ? `${name} · ${job.job_id.slice(0, 8)}` : job.job_id.slice(0, 8));
    jobCell.title = job.job_id;
    const actions = document.createElement("td");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary cancel";
    const busy = cancelling.has(job.job_id);
    button.textContent = busy ? "Cancelling…" : "Cancel";
    button.disabled = busy || !guard.checkCancel(job.job_id).allowed;
    button.addEventListener("click", () => cancel(job.job_id));
    actions.append(button);
    tr.append(
      jobCell,
      cell(job.user_id === null ? "guest" : `user ${job.user_id}`),
      cell(job.status, `status ${job.status}`),
      cell(new Date(job.created_at).toLocaleTimeString()),
      actions,
    );
    return tr;
  });
  $("jobs").replaceChildren(...rows);
  $("empty").hidden = rows.length > 0;
}

async function cancel(jobId) {
  cancelling.add(jobId);
  render();
  const outcome = await guard.cancel(jobId); // never rejects
  cancelling.delete(jobId);
  const kind = { cancelled: "ok", left: "left" }[outcome.outcome] ?? "refused";
  log(describe(outcome), kind, {
    outcome: outcome.outcome,
    attempts: outcome.attempts,
    jobId,
  });
  render();
}

async function refreshCsrf() {
  const { data } = await call("GET", "/api/v1/security/csrf_token/");
  api.csrf = data.result ?? null;
}

async function signIn(choice) {
  const { status, data } = await call("POST", "/login", { user: choice });
  if (status !== 200) return log(data.message ?? `Sign-in failed (HTTP ${status})`, "refused");
  api.guestToken = data.guestToken ?? null;
  api.userName = data.user?.name ?? null;
  await refreshCsrf();
  try {
    const { purged } = guard.login(await sessionOf(data.user, data.guestToken));
    log(`Signed in${purged ? `; removed ${purged} job record(s) of the previous session` : ""}`, "ok");
  } catch (e) {
    log(isGuardError(e) ? `${e.message} [${e.code}]` : String(e), "refused");
  }
  render();
}

async function signOut() {
  // The guard first: it stops the session's queries on the server while the session still is,
  // and `stopped` settles once the server has answered them (at most 3 s).
  const { purged, stopped } = guard.logout();
  await stopped;
  await call("POST", "/logout");
  api.guestToken = null;
  log(`Signed out; removed ${purged} job record(s)`, "ok");
  render();
}

/** What `guard.login` takes: the user, or a guest with the key of its guest token. */
async function sessionOf(user, guestToken) {
  if (user) return { userId: user.id };
  return { userId: null, guestKey: guestToken ? await guestKey(guestToken) : null };
}

/** A list entry for a waiter (`#waits` or `#chart-waits`), created or updated by its key. */
function showWaiter(list, key, fields, text) {
  let li = list.querySelector(`li[data-key="${CSS.escape(key)}"]`);
  if (!li) {
    li = document.createElement("li");
    li.dataset.key = key;
    list.prepend(li);
  }
  for (const [k, v] of Object.entries(fields)) li.dataset[k] = Array.isArray(v) ? v.join(" ") : String(v ?? "");
  li.className = { done: "ok", waiting: "", submitting: "", aborted: "left" }[fields.outcome] ?? "refused";
  li.textContent = text;
  return li;
}

/** The fields a waiter's outcome shows (data attributes: the tests read them). */
const outcomeFields = (outcome) => ({
  outcome: outcome.outcome,
  jobIds: outcome.jobIds,
  jobId: outcome.jobId,
  status: outcome.status,
  reason: outcome.reason,
  cancelling: outcome.cancelling,
});

const FILTERS = { all: "All regions", emea: "EMEA", apac: "APAC", americas: "Americas" };
let query = null; // the filtered query this page awaits: { seq, controller }
let querySeq = 0;

/** `#wait-outcome` shows the current query; `#waits` every query of this page. */
function showQuery(seq, filter, fields, text) {
  const all = { seq, filter, ...fields };
  showWaiter($("waits"), `query-${seq}`, all, `#${seq} ${FILTERS[filter] ?? filter}: ${text}`);
  if (query?.seq !== seq) return;
  const out = $("wait-outcome");
  for (const k of Object.keys(out.dataset)) if (k !== "testid") delete out.dataset[k];
  for (const [k, v] of Object.entries(all)) out.dataset[k] = Array.isArray(v) ? v.join(" ") : String(v ?? "");
  out.textContent = `${FILTERS[filter] ?? filter}: ${text}`;
}

/**
 * Runs the filtered query and awaits it. A query already awaited is superseded: its waiter is
 * aborted, and the guard cancels its jobs (those no other waiter of the guard awaits).
 */
async function runQuery(filter) {
  query?.controller.abort();
  const controller = new AbortController();
  const seq = ++querySeq;
  query = { seq, controller };
  showQuery(seq, filter, { outcome: "submitting" }, "submitting…");
  const name = `Revenue by region · ${FILTERS[filter] ?? filter}`;
  const { status, data } = await call("POST", "/api/v1/chart/data", { chart: name, tab_id: tabId });
  if (status !== 202) {
    showQuery(seq, filter, { outcome: "error", status }, data.message ?? `Query failed (HTTP ${status})`);
    return;
  }
  // Superseded while it was being submitted: the waiter is still made, with the aborted signal,
  // so the guard records the 202 and cancels what the server started.
  const ids = contract === "task" ? data.task_ids ?? [] : [data.job_id];
  for (const id of ids) if (typeof id === "string") labels.set(id, name);
  const waiting = guard.waitFor(data, { signal: controller.signal }); // never rejects
  showQuery(seq, filter, { outcome: "waiting", jobIds: ids }, `waiting for ${ids.map((id) => id.slice(0, 8)).join(", ")}…`);
  render();
  const outcome = await waiting;
  showQuery(seq, filter, outcomeFields(outcome), outcome.message);
  if (query?.seq === seq) query = null;
  render();
}

async function runChart(name, fail) {
  // A broken query fails fast, as SQL errors do; the others run until done or cancelled.
  // Under the task contract one chart is one shared task: two users asking for it share it.
  // `force`, as Superset's "Force refresh": each click starts a job, never the warm cache.
  const body = { chart: name, tab_id: tabId, force: true, ...(fail ? { fail: true, durationMs: 1500 } : {}) };
  const { status, data } = await call("POST", "/api/v1/chart/data", body);
  if (status !== 202) return log(data.message ?? `Query failed (HTTP ${status})`, "refused");
  let ids;
  try {
    // Exactly the 202 body.
    const records = contract === "task" ? guard.recordTasks(data) : [guard.recordJob(data)];
    ids = records.map((job) => job.job_id);
    for (const id of ids) labels.set(id, name);
  } catch (e) {
    log(isGuardError(e) ? `${e.message} [${e.code}]` : String(e), "refused");
  }
  render();
  if (!ids?.length) return;
  // Awaited: its outcome is shown under the chart buttons.
  const key = `chart-${ids.join("-")}`;
  const list = $("chart-waits");
  showWaiter(list, key, { chart: name, outcome: "waiting", jobIds: ids }, `${name}: running…`);
  // Nothing cancels it but the jobs table's Cancel button: it runs on when the page goes.
  const outcome = await guard.waitFor(ids, { cancelOnClose: false });
  showWaiter(list, key, { chart: name, ...outcomeFields(outcome) }, `${name}: ${outcome.message}`);
}

// ---- Live charts: each chart's query from request to rows with guard.query ----

const LIVE = ["Revenue by region", "Orders per quarter", "Margin by region"];
const live = new Map(); // chart -> { controller, seq }
let liveSeq = 0;

/** A chart's figure (made on first use): its state as data attributes, its rows as a table. */
function liveFigure(name) {
  let figure = $("live-charts").querySelector(`figure[data-chart="${CSS.escape(name)}"]`);
  if (!figure) {
    figure = document.createElement("figure");
    figure.dataset.chart = name;
    const caption = document.createElement("figcaption");
    caption.textContent = name;
    figure.append(caption, document.createElement("table"), document.createElement("p"));
    $("live-charts").append(figure);
  }
  return figure;
}

function showRows(figure, result) {
  const table = figure.querySelector("table");
  table.replaceChildren();
  const rows = result?.result?.[0]?.data ?? [];
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const key of ["region", "quarter", "revenue"]) {
      const td = document.createElement("td");
      td.textContent = String(row[key] ?? "");
      tr.append(td);
    }
    table.append(tr);
  }
  figure.dataset.rows = String(rows.length);
}

/** Runs every live chart for `filter`; a chart's running query is superseded (stopped). */
function runLive(filter) {
  for (const name of LIVE) {
    live.get(name)?.controller.abort();
    const controller = new AbortController();
    const seq = ++liveSeq;
    live.set(name, { controller, seq });
    const figure = liveFigure(name);
    Object.assign(figure.dataset, { outcome: "running", filter, seq: String(seq) });
    figure.querySelector("p").textContent = "running…";
    // The body the app would POST to /api/v1/chart/data (here the reference server's).
    guard.query({ chart: name, filter }, { signal: controller.signal }).then((outcome) => {
      const li = document.createElement("li");
      li.className = { done: "ok", aborted: "left" }[outcome.outcome] ?? "refused";
      Object.assign(li.dataset, {
        seq: String(seq),
        chart: name,
        filter,
        outcome: outcome.outcome,
        reason: outcome.reason ?? "",
        stop: outcome.stop ?? "",
        clientId: outcome.clientId,
        jobIds: outcome.jobIds.join(" "),
        cancelling: outcome.cancelling.join(" "),
      });
      li.textContent = `#${seq} ${name} (${filter}): ${outcome.message}`;
      $("live-queries").prepend(li);
      // A superseded query's outcome is logged, never drawn.
      if (live.get(name)?.seq !== seq) return;
      figure.dataset.outcome = outcome.outcome;
      figure.querySelector("p").textContent = outcome.outcome === "done" ? "" : outcome.message;
      showRows(figure, outcome.outcome === "done" ? outcome.result : null);
    });
  }
}

$("live-run").addEventListener("click", () => runLive($("live-filter").value));
$("live-filter").addEventListener("change", () => {
  if (guard.session && live.size) runLive($("live-filter").value);
});

$("login").addEventListener("click", () => signIn($("user").value));
$("logout").addEventListener("click", signOut);
for (const button of document.querySelectorAll(".chart")) {
  button.addEventListener("click", () => runChart(button.dataset.chart, button.dataset.fail === "true"));
}
$("filter").addEventListener("change", () => {
  if (guard.session) runQuery($("filter").value);
});
$("run-query").addEventListener("click", () => runQuery($("filter").value));
$("forge").addEventListener("submit", (e) => {
  e.preventDefault();
  const jobId = $("job-id").value.trim();
  if (jobId) cancel(jobId);
});
// Every change, this tab's (follow() applying an event here) and other tabs' (a sign-out, another
// user, their records).
guard.subscribe((change) => {
  const elsewhere = change.source === "other_tab";
  // Nothing of a session that ended stays on the page.
  if (change.type === "logout" || change.type === "user_changed") {
    live.clear();
    $("live-charts").replaceChildren();
  }
  if (elsewhere && change.type === "logout") log("Signed out in another tab", "refused");
  if (elsewhere && change.type === "user_changed") log("Another user signed in in another tab", "refused");
  if (change.type === "unauthorized") log("The server's session has ended: sign in again", "refused");
  render();
});

// Page load: sign the guard in as the server's session (read above).
api.guestToken = me.guestToken ?? null;
api.userName = me.user?.name ?? null;
if (me.user || me.guestToken) {
  await refreshCsrf();
  guard.login(await sessionOf(me.user, me.guestToken));
} else if (guard.session) {
  guard.logout(); // the server session ended (expired or signed out elsewhere)
}
render();
// The guard polls Superset's event stream itself (async events, or the task framework's status
// changes), one tab of the browser for all: every change it applies re-renders below. With
// `?follow=0` the app leaves it to waitFor, which follows while anything waits.
if (new URLSearchParams(location.search).get("follow") !== "0") guard.follow();
document.body.dataset.ready = "true";
