// The dashboard: sign in, run chart queries, watch their status live, cancel them. Every job
// record and every cancel goes through the guard. It speaks the contract the server names in
// /api/v1/me/: "task" (today's Superset: 202 with task ids, status_changes, per-tab cancel) or
// "async_event" (202 with job metadata, the async event stream).
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

const guard = new JobGuard({
  contract,
  tabId,
  retry: { attempts: 3, baseDelayMs: 200, maxDelayMs: 2000 },
  // Through the app's fetch, so the cancel carries the current CSRF and guest headers.
  fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, ...headers() } }),
});
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
  await call("POST", "/logout");
  api.guestToken = null;
  const { purged } = guard.logout();
  log(`Signed out; removed ${purged} job record(s)`, "ok");
  render();
}

/** What `guard.login` takes: the user, or a guest with the key of its guest token. */
async function sessionOf(user, guestToken) {
  if (user) return { userId: user.id };
  return { userId: null, guestKey: guestToken ? await guestKey(guestToken) : null };
}

async function runChart(name, fail) {
  // A broken query fails fast, as SQL errors do; the others run until done or cancelled.
  // Under the task contract one chart is one shared task: two users asking for it share it.
  const body = { chart: name, tab_id: tabId, ...(fail ? { fail: true, durationMs: 1500 } : {}) };
  const { status, data } = await call("POST", "/api/v1/chart/data", body);
  if (status !== 202) return log(data.message ?? `Query failed (HTTP ${status})`, "refused");
  try {
    // Exactly the 202 body.
    const records = contract === "task" ? guard.recordTasks(data) : [guard.recordJob(data)];
    for (const job of records) labels.set(job.job_id, name);
  } catch (e) {
    log(isGuardError(e) ? `${e.message} [${e.code}]` : String(e), "refused");
  }
  render();
}

$("login").addEventListener("click", () => signIn($("user").value));
$("logout").addEventListener("click", signOut);
for (const button of document.querySelectorAll(".chart")) {
  button.addEventListener("click", () => runChart(button.dataset.chart, button.dataset.fail === "true"));
}
$("forge").addEventListener("submit", (e) => {
  e.preventDefault();
  const jobId = $("job-id").value.trim();
  if (jobId) cancel(jobId);
});
// Every change, this tab's (follow() applying an event here) and other tabs' (a sign-out, another
// user, their records).
guard.subscribe((change) => {
  const elsewhere = change.source === "other_tab";
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
// changes), one tab of the browser for all: every change it applies re-renders below.
guard.follow();
document.body.dataset.ready = "true";
