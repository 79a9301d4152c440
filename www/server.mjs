// A reference server for the dashboard demo and the end-to-end tests: it serves www/, pkg/, js/
// and answers Superset's async-query API the way shared/superset-contract.md describes it.
// Node's standard library only; binds 127.0.0.1. PORT picks the port (default 8080).
//
// What it models:
// - A browser session cookie (`session`, HttpOnly) whose user changes with /login and /logout,
//   and a CSRF token bound to it (Superset: GET /api/v1/security/csrf_token/, X-CSRFToken).
// - The `async-token` cookie: an HS256 JWT {channel, exp, sub}, HttpOnly, minted after each
//   request the way Superset's `validate_session` does: a NEW channel whenever the cookie is
//   missing, invalid or expired, or the session's user is not the one it was minted for.
// - Guests (embedded dashboards): a guest token sent as X-GuestToken; their channel is
//   "guest-" + HMAC(token), user_id null, no async-token cookie.
// - POST /api/v1/chart/data -> 202 with job metadata; the job runs, then ends `done`
//   (or `error`), each change an event on the caller's channel.
// - GET /api/v1/async_event/?last_id= -> {"result": [events after last_id]}.
// - POST /api/v1/async_event/<job_id>/cancel -> 401 / 403 / 404 / 200 as the contract's table.
//
// Chart data answers rows (www/charts.mjs: Superset's `{ result: [{ data, colnames, ... }] }`,
// the same for the same chart and filter), and a job's `result_url` answers them.
//
// With `--contract sync` (`contract: "sync"`) it is a Superset without GLOBAL_ASYNC_QUERIES and
// with PR #44552: chart data answers 200 after `jobDurationMs`, running on the server until then
// whoever still listens, and `POST /api/v1/chart/data/stop {client_id}` stops the caller's own
// query of that id (www/charts.mjs). Its task routes answer a JSON 404, as while the task
// framework is switched off.
//
// With `--contract task` (the default; `contract: "task"` to createApp) it speaks today's
// Superset task framework instead (shared/superset-tasks-contract.md):
// - POST /api/v1/chart/data {chart, tab_id?} -> 202 {task_ids: [uuid], cursor, tab_id?}: one
//   shared task per chart (its cache key), which every user who asks for it subscribes to, each
//   of their tabs (tab_id) separately; once that task succeeded, the same request is a cache
//   hit for `cacheMs` (default 60 s): 200 with its rows, as Superset's frontend reads it (unless
//   the body says `force: true`, as Superset's query context does).
// - GET /api/v1/task/status_changes?cursor=<iso> -> {statuses: {uuid: {status, progress}},
//   cursor}, the caller's tasks changed at or after the cursor, cursors floored to seconds.
// - GET /api/v1/task/<uuid>/status -> {status}; 404 for a task the caller does not subscribe to.
// - POST /api/v1/task/<uuid>/cancel {tab_id?, force?} -> 404 not a subscriber (or no such
//   task), 403 force, 422 finished, 200 {message, action: "detached" | "unsubscribed" |
//   "aborted", task}; any other body field is a 500, as in Superset. A task started with
//   `abortable: false` has no abort handler: aborting it while in progress is Superset's other
//   422, with its text (`superset/daos/tasks.py`).
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

import { resultFor, syncCharts } from "./charts.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MOUNTS = [
  ["/pkg/", join(ROOT, "pkg")],
  // The package's entry (js/index.js imports ../pkg/), as an app imports it.
  ["/js/", join(ROOT, "js")],
  // The React dashboard, built by scripts/react-example.mjs.
  ["/react/", join(ROOT, "target", "www-react")],
  ["/", join(ROOT, "www")],
];
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json; charset=utf-8",
  ".ts": "text/plain; charset=utf-8",
  ".png": "image/png",
};

export const USERS = new Map([
  [1, "alice"],
  [2, "bob"],
  [3, "carol"],
]);

const b64url = (buf) => Buffer.from(buf).toString("base64url");

/** The file a URL path names, or null when it is outside the served folders. */
export function resolveStatic(pathname) {
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (decoded.includes("\0")) return null;
  for (const [prefix, dir] of MOUNTS) {
    if (!decoded.startsWith(prefix)) continue;
    let rel = decoded.slice(prefix.length);
    if (rel === "" || rel.endsWith("/")) rel += "index.html";
    const file = normalize(join(dir, rel));
    return file.startsWith(dir + sep) ? file : null;
  }
  return null;
}

function parseCookies(header = "") {
  const out = {};
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

/** Compares stream ids `<ms>-<seq>`: negative when a is older than b. */
export function compareEventIds(a, b) {
  const [am, as] = String(a).split("-").map(Number);
  const [bm, bs] = String(b).split("-").map(Number);
  return am - bm || (as || 0) - (bs || 0);
}

/**
 * Creates the server's state and request handler. `jobDurationMs`: how long a chart query
 * runs before it is `done`. `jwtExpirationSeconds`: the async-token's lifetime (Superset's
 * GLOBAL_ASYNC_QUERIES_JWT_EXPIRATION_SECONDS, default 3600). `bfcache`: serve the static files
 * `no-cache` (revalidated) instead of `no-store`, which keeps a page out of the browser's
 * back/forward cache.
 */
export function createApp({
  jobDurationMs = 10_000,
  jwtExpirationSeconds = 3600,
  contract = "task",
  bfcache = false,
  cacheMs = 60_000,
} = {}) {
  if (!["task", "async_event", "sync"].includes(contract)) throw new Error(`unknown contract ${contract}`);
  const secret = randomBytes(32);
  const hmac = (text) => createHmac("sha256", secret).update(text).digest();

  const state = {
    contract,
    jobDurationMs,
    /** task uuid -> { uuid, key, status, changedOn (ms), subscribers: Map<owner, Set<tab|null>>, timers } */
    tasks: new Map(),
    /** sid -> { userId: number | null, guestToken: string | null } */
    sessions: new Map(),
    /** guest token -> true, for the tokens this server issued */
    guestTokens: new Set(),
    /** job_id -> { channel_id, user_id (int | null), timers } : Superset's cancel registry */
    registry: new Map(),
    /** every event, in order: { channel_id, job_id, user_id, status, errors, result_url, id } */
    events: [],
    /** every API request: { method, path, status } */
    requests: [],
    /** test-only fault switch: statuses (or { status, retryAfter }) for the next cancels */
    faults: { cancel: [] },
    lastEventMs: 0,
    lastEventSeq: 0,
    /** result_url -> the chart-data body whose rows it answers */
    results: new Map(),
  };
  const sync = syncCharts(state);

  // --- async-token: an HS256 JWT, as Superset's AsyncQueryManager mints it ---
  function signToken(payload) {
    const head = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
    const body = b64url(JSON.stringify(payload));
    return `${head}.${body}.${b64url(hmac(`${head}.${body}`))}`;
  }
  function verifyToken(token) {
    const parts = String(token ?? "").split(".");
    if (parts.length !== 3) return null;
    const expected = hmac(`${parts[0]}.${parts[1]}`);
    const given = Buffer.from(parts[2], "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    try {
      const payload = JSON.parse(Buffer.from(parts[1], "base64url").toString());
      if (typeof payload.channel !== "string" || !(payload.exp * 1000 > Date.now())) return null;
      return payload;
    } catch {
      return null;
    }
  }

  const csrfFor = (sid) => b64url(hmac(`csrf:${sid}`)).slice(0, 32);
  const guestChannel = (token) => `guest-${hmac(`guest:${token}`).toString("hex").slice(0, 32)}`;

  function emit(job, status, extra = {}) {
    const now = Date.now();
    state.lastEventSeq = now === state.lastEventMs ? state.lastEventSeq + 1 : 0;
    state.lastEventMs = now;
    const event = {
      channel_id: job.channel_id,
      job_id: job.job_id,
      user_id: job.user_id === null ? null : String(job.user_id),
      status,
      errors: extra.errors ?? [],
      result_url: extra.result_url ?? null,
      id: `${now}-${state.lastEventSeq}`,
    };
    state.events.push(event);
    return event;
  }

  /** A terminal update deletes the server's cancel record. */
  function finish(job, status, extra) {
    for (const t of job.timers) clearTimeout(t);
    state.registry.delete(job.job_id);
    emit(job, status, extra);
  }

  /** Who is calling: { userId, channel } from the guest token or the session + cookie. */
  function identify(req, ctx) {
    const guestToken = req.headers["x-guesttoken"];
    if (guestToken !== undefined) {
      return state.guestTokens.has(guestToken)
        ? { guest: true, userId: null, channel: guestChannel(guestToken) }
        : null;
    }
    const token = verifyToken(ctx.cookies["async-token"]);
    if (!token) return null;
    return { guest: false, userId: ctx.session?.userId ?? null, channel: token.channel };
  }

  const json = (status, body) => ({ status, body: JSON.stringify(body), type: "application/json" });
  const message = (status, text) => json(status, { message: text });

  /** A JSON request body: the object, `{}` when empty, `undefined` when not a JSON object. */
  async function readBody(req) {
    let raw = "";
    for await (const chunk of req) {
      raw += chunk;
      if (raw.length > 65_536) break;
    }
    if (!raw) return {};
    try {
      const body = JSON.parse(raw);
      return body !== null && typeof body === "object" && !Array.isArray(body) ? body : undefined;
    } catch {
      return undefined;
    }
  }
  const readJson = async (req) => (await readBody(req)) ?? {};

  function checkCsrf(req, ctx) {
    if (req.headers["x-guesttoken"] !== undefined) return true; // guest requests are exempt
    const given = req.headers["x-csrftoken"];
    return Boolean(ctx.sid) && given === csrfFor(ctx.sid);
  }

  /** The next injected fault for a cancel, if the test set one. */
  function injectedFault() {
    const fault = state.faults.cancel.shift();
    if (fault === undefined) return null;
    const { status, retryAfter } = typeof fault === "number" ? { status: fault } : fault;
    const res = message(status, `Injected fault ${status}`);
    if (retryAfter !== undefined) res.headers = { "retry-after": String(retryAfter) };
    return res;
  }

  // --- the task framework ---
  const TAB_ID = /^[A-Za-z0-9_-]{1,64}$/;
  const TERMINAL = new Set(["success", "failure", "aborted", "timed_out"]);
  /** Who owns subscriptions: a user id, or a guest's key (an HMAC of the guest token). */
  function subscriber(req, ctx) {
    const guestToken = req.headers["x-guesttoken"];
    if (guestToken !== undefined) {
      return state.guestTokens.has(guestToken) ? `guest:${hmac(`guest:${guestToken}`).toString("hex").slice(0, 32)}` : null;
    }
    return ctx.session.userId === null ? null : `user:${ctx.session.userId}`;
  }
  function setStatus(task, status) {
    task.status = status;
    task.changedOn = Date.now();
    if (TERMINAL.has(status)) for (const t of task.timers) clearTimeout(t);
  }
  const iso = (ms) => new Date(ms).toISOString().replace("Z", "");
  async function taskRoute(req, ctx) {
    const { pathname, searchParams } = ctx.url;
    const method = req.method;
    if (pathname === "/api/v1/chart/data" && method === "POST") {
      if (!checkCsrf(req, ctx)) return message(400, "The CSRF token is missing or invalid.");
      const who = subscriber(req, ctx);
      if (!who) return message(401, "Not signed in");
      const body = await readJson(req);
      const tab = typeof body.tab_id === "string" && TAB_ID.test(body.tab_id) ? body.tab_id : null;
      const key = `chart:${String(body.chart ?? "default")}:${String(body.filter ?? "all")}:${body.fail ? "fail" : "ok"}`;
      // `force: true` skips the cache, as Superset's query context's `force` does.
      const cached = body.force !== true && [...state.tasks.values()].find(
        (t) => t.key === key && t.status === "success" && Date.now() - t.changedOn <= cacheMs,
      );
      if (cached) return json(200, resultFor(body));
      let task = [...state.tasks.values()].find((t) => t.key === key && !TERMINAL.has(t.status));
      if (!task) {
        task = {
          uuid: randomUUID(),
          key,
          status: "pending",
          changedOn: Date.now(),
          subscribers: new Map(),
          timers: [],
          abortable: body.abortable !== false,
          filter: String(body.filter ?? "all"),
        };
        state.tasks.set(task.uuid, task);
        const current = task;
        current.timers.push(
          setTimeout(() => current.status === "pending" && setStatus(current, "in_progress"), 300),
          setTimeout(() => {
            if (TERMINAL.has(current.status)) return;
            setStatus(current, body.fail ? "failure" : "success");
          }, Math.max(400, Number(body.durationMs) || state.jobDurationMs)),
        );
      }
      if (!task.subscribers.has(who)) task.subscribers.set(who, new Set());
      task.subscribers.get(who).add(tab);
      const answer = { task_ids: [task.uuid], cursor: iso(Date.now()) };
      if (tab) answer.tab_id = tab;
      return json(202, answer);
    }
    if (pathname === "/api/v1/task/status_changes" && method === "GET") {
      const who = subscriber(req, ctx);
      if (!who) return message(401, "Not signed in");
      const cursor = searchParams.get("cursor");
      const now = Date.now();
      if (!cursor) return json(200, { statuses: {}, cursor: iso(now) });
      const since = Date.parse(`${cursor}Z`);
      if (Number.isNaN(since)) return message(400, "Invalid cursor");
      const floor = Math.floor(since / 1000) * 1000;
      const statuses = {};
      for (const task of state.tasks.values()) {
        if (task.subscribers.has(who) && task.changedOn >= floor) {
          statuses[task.uuid] = { status: task.status, progress: TERMINAL.has(task.status) ? 1 : 0 };
        }
      }
      return json(200, { statuses, cursor: iso(now) });
    }
    const status = pathname.match(/^\/api\/v1\/task\/([^/]+)\/status$/);
    if (status && method === "GET") {
      const task = state.tasks.get(status[1]);
      if (!task || !task.subscribers.has(subscriber(req, ctx))) return message(404, "Not found");
      return json(200, { status: task.status });
    }
    const cancel = pathname.match(/^\/api\/v1\/task\/([^/]+)\/cancel$/);
    if (cancel && method === "POST") {
      ctx.isCancel = true;
      const fault = injectedFault();
      if (fault) return fault;
      if (!checkCsrf(req, ctx)) return message(400, "The CSRF token is missing or invalid.");
      const who = subscriber(req, ctx);
      if (!who) return message(401, "Not signed in");
      const body = await readBody(req);
      ctx.cancelBody = body;
      // The schema does not exclude unknown fields: one is a server error.
      if (body === undefined || Object.keys(body).some((k) => k !== "tab_id" && k !== "force")) {
        return message(500, "Internal server error");
      }
      const task = state.tasks.get(cancel[1]);
      if (!task || !task.subscribers.has(who)) return message(404, "Not found");
      if (body.force) return message(403, "Forbidden");
      if (TERMINAL.has(task.status)) return message(422, "Task could not be aborted.");
      const tabs = task.subscribers.get(who);
      const tab = typeof body.tab_id === "string" && TAB_ID.test(body.tab_id) ? body.tab_id : null;
      const view = () => ({ uuid: task.uuid, status: task.status });
      if (tab !== null && tabs.has(tab) && tabs.size > 1) {
        tabs.delete(tab);
        return json(200, { message: "Detached from task", action: "detached", task: view() });
      }
      if (task.subscribers.size > 1) {
        task.subscribers.delete(who);
        return json(200, { message: "Unsubscribed from task", action: "unsubscribed", task: view() });
      }
      if (task.status === "in_progress" && !task.abortable) {
        return message(
          422,
          `Task ${task.uuid} is in progress but has not registered an abort handler (is_abortable is not true)`,
        );
      }
      setStatus(task, "aborted");
      return json(200, { message: "Task aborted", action: "aborted", task: view() });
    }
    return undefined;
  }

  // --- routes ---
  async function route(req, ctx) {
    const { pathname, searchParams } = ctx.url;
    const method = req.method;

    if (pathname === "/login" && method === "POST") {
      const { user } = await readJson(req);
      if (user === "guest") {
        const guestToken = b64url(randomBytes(18));
        state.guestTokens.add(guestToken);
        ctx.session.userId = null;
        ctx.session.guestToken = guestToken;
        return json(200, { user: null, guestToken });
      }
      const id = Number(user);
      if (!USERS.has(id)) return message(400, "Unknown user");
      ctx.session.userId = id;
      ctx.session.guestToken = null;
      return json(200, { user: { id, name: USERS.get(id) } });
    }
    if (pathname === "/logout" && method === "POST") {
      ctx.session.userId = null;
      ctx.session.guestToken = null;
      return json(200, { user: null });
    }
    if (pathname === "/api/v1/me/" && method === "GET") {
      const id = ctx.session.userId;
      return json(200, {
        // Superset's own shape (`result`), and the demo's (`user`, `guestToken`, `contract`).
        result: id === null ? null : { id, username: USERS.get(id), first_name: USERS.get(id) },
        user: id === null ? null : { id, name: USERS.get(id) },
        guestToken: ctx.session.guestToken,
        contract: state.contract,
      });
    }
    if (pathname === "/api/v1/security/csrf_token/" && method === "GET") {
      return json(200, { result: csrfFor(ctx.sid) });
    }

    // Which methods the stop URL takes, as Flask answers OPTIONS for every route: 6.1.0's only
    // route there is GET /api/v1/chart/data/<cache_key>.
    if (pathname === "/api/v1/chart/data/stop" && method === "OPTIONS") {
      const allow = state.contract === "async_event" ? "OPTIONS, HEAD, GET" : "POST, OPTIONS";
      return { status: 200, type: "text/html; charset=utf-8", body: "", headers: { allow } };
    }
    if (pathname === "/api/v1/chart/data/stop" && method === "POST" && state.contract !== "async_event") {
      if (!checkCsrf(req, ctx)) return message(400, "The CSRF token is missing or invalid.");
      const who = subscriber(req, ctx);
      if (!who) return message(401, "Not signed in");
      const answer = sync.stop(who, await readJson(req));
      return json(answer.status, answer.body);
    }
    const stored = method === "GET" && state.results.get(pathname);
    if (stored) {
      if (!identify(req, ctx)) return message(401, "Async token missing or invalid");
      return json(200, resultFor(stored));
    }
    if (state.contract === "sync") {
      if (pathname === "/api/v1/chart/data" && method === "POST") {
        if (!checkCsrf(req, ctx)) return message(400, "The CSRF token is missing or invalid.");
        const who = subscriber(req, ctx);
        if (!who) return message(401, "Not signed in");
        const answer = await sync.run(who, await readJson(req));
        return json(answer.status, answer.body);
      }
      // The task framework switched off: every task route answers a JSON 404.
      if (pathname.startsWith("/api/v1/task/")) return message(404, "Not found");
    } else if (state.contract === "task") {
      const answer = await taskRoute(req, ctx);
      if (answer !== undefined) return answer;
    } else if (pathname === "/api/v1/chart/data" && method === "POST") {
      if (!checkCsrf(req, ctx)) return message(400, "The CSRF token is missing or invalid.");
      const who = identify(req, ctx);
      if (!who) return message(401, "Async token missing or invalid");
      if (!who.guest && who.userId === null) return message(401, "Not signed in");
      const body = await readJson(req);
      // 6.1.0's schema refuses a field it does not know (and it has no stop endpoint to take a
      // client_id): a 400, the query not run.
      if ("client_id" in body) return message(400, "Request is incorrect: {'client_id': ['Unknown field.']}");
      const job = {
        channel_id: who.channel,
        job_id: randomUUID(),
        user_id: who.userId,
        timers: [],
        filter: String(body.filter ?? "all"),
      };
      state.registry.set(job.job_id, job);
      const running = setTimeout(() => state.registry.has(job.job_id) && emit(job, "running"), 300);
      const end = setTimeout(() => {
        if (!state.registry.has(job.job_id)) return;
        if (body.fail) finish(job, "error", { errors: [{ message: "Error: relation 'foo' does not exist" }] });
        else {
          const resultUrl = `/api/v1/chart/data/qc-${randomBytes(16).toString("hex")}`;
          state.results.set(resultUrl, body);
          finish(job, "done", { result_url: resultUrl });
        }
      }, Math.max(400, Number(body.durationMs) || state.jobDurationMs));
      job.timers.push(running, end);
      // Exactly build_job_metadata's shape.
      return json(202, {
        channel_id: job.channel_id,
        job_id: job.job_id,
        user_id: job.user_id === null ? null : String(job.user_id),
        status: "pending",
        errors: [],
        result_url: null,
      });
    }

    if (state.contract === "async_event" && pathname === "/api/v1/async_event/" && method === "GET") {
      const who = identify(req, ctx);
      if (!who) return message(401, "Async token missing or invalid");
      const lastId = searchParams.get("last_id");
      const result = state.events.filter(
        (e) => e.channel_id === who.channel && (!lastId || compareEventIds(e.id, lastId) > 0),
      );
      return json(200, { result });
    }

    const cancel = state.contract === "async_event" && pathname.match(/^\/api\/v1\/async_event\/([^/]+)\/cancel$/);
    if (cancel && method === "POST") {
      ctx.isCancel = true;
      const fault = injectedFault();
      if (fault) return fault;
      if (!checkCsrf(req, ctx)) return message(400, "The CSRF token is missing or invalid.");
      const who = identify(req, ctx);
      if (!who) return message(401, "Async token missing or invalid");
      let jobId;
      try {
        jobId = decodeURIComponent(cancel[1]);
      } catch {
        return message(404, "Job not found or already completed");
      }
      const job = state.registry.get(jobId);
      if (!job) return message(404, "Job not found or already completed");
      if (job.channel_id !== who.channel || job.user_id !== who.userId) {
        return message(403, "Not authorized to cancel this job");
      }
      finish(job, "cancelled");
      return json(200, { result: { job_id: jobId, status: "cancelled" } });
    }

    if (pathname.startsWith("/api/") || pathname === "/login" || pathname === "/logout") {
      return message(pathname.startsWith("/api/") ? 404 : 405, "Not found");
    }
    return null; // static
  }

  /** Superset's validate_session, after the request: a new channel when needed. */
  function validateSession(ctx, headers) {
    if (ctx.session.guestToken) return;
    const token = verifyToken(ctx.cookies["async-token"]);
    const userId = ctx.session.userId;
    const sub = token?.sub === undefined ? null : Number(token.sub);
    if (token && sub === userId) return;
    const payload = { channel: randomUUID(), exp: Math.floor(Date.now() / 1000) + jwtExpirationSeconds };
    if (userId !== null) payload.sub = String(userId);
    headers.push(`async-token=${signToken(payload)}; Path=/; HttpOnly; SameSite=Lax`);
  }

  async function handle(req, res) {
    const url = new URL(req.url, "http://127.0.0.1");
    const cookies = parseCookies(req.headers.cookie);
    const setCookies = [];
    let sid = cookies.session;
    if (!sid || !state.sessions.has(sid)) {
      sid = b64url(randomBytes(18));
      state.sessions.set(sid, { userId: null, guestToken: null });
      setCookies.push(`session=${sid}; Path=/; HttpOnly; SameSite=Lax`);
    }
    const ctx = { url, cookies, sid, session: state.sessions.get(sid), isCancel: false };

    let result = await route(req, ctx);
    if (result === null) result = { ...(await serveStatic(req, url.pathname)), static: true };
    if (url.pathname.startsWith("/api/") || url.pathname === "/login" || url.pathname === "/logout") {
      state.requests.push({ method: req.method, path: url.pathname, status: result.status, body: ctx.cancelBody });
    }
    validateSession(ctx, setCookies);
    const headers = {
      "content-type": result.type,
      "cache-control": bfcache && result.static ? "no-cache" : "no-store",
      "x-content-type-options": "nosniff",
      ...(result.headers ?? {}),
    };
    if (setCookies.length) headers["set-cookie"] = setCookies;
    res.writeHead(result.status, headers);
    res.end(req.method === "HEAD" ? undefined : result.body);
  }

  /** Cancel requests the server received, optionally for one job. */
  function cancelRequests(jobId) {
    return state.requests.filter(
      (r) => /\/cancel$/.test(r.path) && (jobId === undefined || r.path.includes(encodeURIComponent(jobId))),
    );
  }

  function stop() {
    for (const job of state.registry.values()) for (const t of job.timers) clearTimeout(t);
    for (const task of state.tasks.values()) for (const t of task.timers) clearTimeout(t);
    sync.stopAll();
  }

  /** The queries running on the server now: synchronous requests, async jobs, tasks; and the
   * chart-data `filter` each was asked with (`filters`, one entry per query). */
  function running() {
    const tasks = [...state.tasks.values()].filter((t) => !TERMINAL.has(t.status));
    const filters = [
      ...state.syncRunning.map((q) => q.filter),
      ...[...state.registry.values()].map((j) => j.filter),
      ...tasks.map((t) => t.filter),
    ];
    return { sync: state.syncRunning.length, jobs: state.registry.size, tasks: tasks.length, filters };
  }

  return { state, handle, cancelRequests, stop, verifyToken, running };
}

async function serveStatic(req, pathname) {
  const file = resolveStatic(pathname);
  if (!file) return { status: 404, type: "text/plain", body: "Not found" };
  if (req.method !== "GET" && req.method !== "HEAD") {
    return { status: 405, type: "text/plain", body: "Method not allowed" };
  }
  try {
    const body = await readFile(file);
    return { status: 200, type: TYPES[extname(file)] ?? "application/octet-stream", body };
  } catch {
    return { status: 404, type: "text/plain", body: "Not found" };
  }
}

/** Starts the server; resolves to { server, url, app } once it listens. */
export function start({ port = 8080, host = "127.0.0.1", ...options } = {}) {
  const app = createApp(options);
  const server = createServer((req, res) => {
    app.handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end("Internal error");
    });
  });
  server.on("close", () => app.stop());
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      resolve({ server, url: `http://${host}:${actual}/`, app });
    });
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const flag = (name) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  const port = Number.parseInt(flag("--port") ?? process.env.PORT ?? "8080", 10);
  const at = process.argv.indexOf("--contract");
  const contract = at > 0 ? process.argv[at + 1] : (process.env.CONTRACT ?? "task");
  const { url } = await start({ port: Number.isNaN(port) ? 8080 : port, contract });
  console.log(`superset-job-guard dashboard (${contract} contract): ${url}`);
}
