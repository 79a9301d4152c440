// guard.query in the dashboard's live charts, in headless Chromium against the reference
// server in each of its three modes: synchronous (with the stop endpoint), 6.1.0's async_event
// job read at its result_url, and the task framework's tasks asked again for the warm cache.
// Every chart draws the server's rows; a new region supersedes the running queries, which are
// stopped on the server (counted there: `app.running()`); a logout stops them before the session
// ends and nothing of them is drawn after; a closed tab stops them with keepalive requests.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { start } from "../../www/server.mjs";
import { resultFor } from "../../www/charts.mjs";
import { launch } from "./browser.mjs";
import { open, signIn } from "./dashboard.mjs";

let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

const MODES = ["sync", "async_event", "task"];
const CHARTS = ["Revenue by region", "Orders per quarter", "Margin by region"];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function serve(t, contract, jobDurationMs) {
  const served = await start({ port: 0, jobDurationMs, contract });
  t.after(() => served.server.close());
  return served;
}

async function until(predicate, what, timeout = 15_000) {
  const end = Date.now() + timeout;
  while (!(await predicate())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The live chart figures' state: chart -> { outcome, rows, seq }. */
async function figures(page) {
  return page.$$eval("#live-charts figure", (all) =>
    Object.fromEntries(all.map((f) => [f.dataset.chart, { outcome: f.dataset.outcome, rows: Number(f.dataset.rows ?? 0), seq: f.dataset.seq }])),
  );
}

/** The logged outcomes of the live queries: [{ seq, chart, outcome, reason, stop, clientId, ... }]. */
async function queries(page) {
  return page.$$eval("#live-queries li", (all) => all.map((li) => ({ ...li.dataset })));
}

/** The drawn rows of one chart. */
async function drawn(page, chart) {
  return page.$$eval(`#live-charts figure[data-chart="${chart}"] tr`, (rows) =>
    rows.map((tr) => [...tr.children].map((td) => td.textContent)),
  );
}

const running = (app) => {
  const r = app.running();
  return r.sync + r.jobs + r.tasks;
};

for (const mode of MODES) {
  test(`${mode}: every chart draws the server's rows; a new region stops the old queries on the server and the new ones are done`, async (t) => {
    const { url, app } = await serve(t, mode, 60_000);
    const page = await open(browser, url);
    await signIn(page, "1");
    await page.click("#live-run");
    await until(async () => running(app) > 0 || (await queries(page)).length > 0, "the queries running");
    await sleep(300);
    const before = running(app);
    assert.ok(before >= 1, `queries running on the server: ${JSON.stringify(app.running())}`);

    // A new region: the running queries are superseded and stopped on the server.
    app.state.jobDurationMs = 600;
    await page.selectOption("#live-filter", "emea");
    await until(async () => (await queries(page)).filter((q) => q.filter === "all").length === CHARTS.length, "the old queries' outcomes");
    const old = (await queries(page)).filter((q) => q.filter === "all");
    for (const q of old) {
      assert.equal(q.outcome, "aborted", JSON.stringify(q));
      assert.equal(q.reason, "signal");
    }
    if (mode === "sync") {
      // Each stopped by its client_id, found among the caller's own running queries.
      for (const q of old) assert.equal(q.stop, "stopped", JSON.stringify(q));
      const stopped = app.state.stops.filter((s) => s.found).map((s) => s.clientId).sort();
      assert.deepEqual(stopped, old.map((q) => q.clientId).sort());
    } else {
      for (const q of old) assert.ok(["cancelling", "stopped", "not_sent"].includes(q.stop), JSON.stringify(q));
      const cancels = app.cancelRequests();
      assert.ok(cancels.length >= 1, "their jobs cancelled");
    }
    // The new queries are done and drawn, each with the server's rows, byte for byte.
    await until(async () => Object.values(await figures(page)).every((f) => f.outcome === "done"), "the new queries done");
    for (const chart of CHARTS) {
      const expected = resultFor({ chart, filter: "emea" }).result[0].data.map((r) => [r.region, r.quarter, String(r.revenue)]);
      assert.deepEqual(await drawn(page, chart), expected, chart);
    }
    // Nothing of the superseded queries runs on: a synchronous one stopped, a job or task
    // cancelled (a task shared by two queries of one chart runs until its other query ends).
    await until(() => running(app) === 0, `nothing left running: ${JSON.stringify(app.running())}`);
    assert.deepEqual(page.errors, []);
    // The stop endpoint's OPTIONS question is answered, its body let arrive: not a failed
    // request in the browser's network log (the superseded chart requests are real aborts).
    assert.deepEqual(page.failed.filter((f) => f.startsWith("OPTIONS")), []);
  });

  test(`${mode}: a logout stops the running queries before the session ends, and nothing of them is drawn after`, async (t) => {
    const { url, app } = await serve(t, mode, 60_000);
    const page = await open(browser, url);
    await signIn(page, "1");
    await page.click("#live-run");
    await until(() => running(app) > 0, "the queries running");
    await sleep(300);
    // The app's sign-out: guard.logout() first, then the server's.
    await page.click("#logout");
    await page.waitForSelector("body[data-signed-in=false]");
    await until(async () => (await queries(page)).length === CHARTS.length, "every query's outcome");
    for (const q of await queries(page)) {
      assert.equal(q.outcome, "aborted", JSON.stringify(q));
      assert.equal(q.reason, "logout");
    }
    if (mode === "sync") {
      // Stopped while the session was still valid: each found among the user's queries.
      const ids = (await queries(page)).map((q) => q.clientId);
      const theirs = () => app.state.stops.filter((s) => ids.includes(s.clientId));
      await until(() => theirs().length >= CHARTS.length, `the stops: ${JSON.stringify(app.state.stops)}`);
      assert.ok(theirs().every((s) => s.found), JSON.stringify(app.state.stops));
    } else {
      await until(() => app.cancelRequests().length >= 1, "the cancels");
      assert.ok(app.cancelRequests().some((r) => r.status === 200), JSON.stringify(app.cancelRequests()));
    }
    await until(() => running(app) === 0, `nothing left running: ${JSON.stringify(app.running())}`);
    assert.equal(await page.$$eval("#live-charts figure", (f) => f.length), 0, "nothing of them is drawn");

    // The next user, in the same tab: sees only their own charts.
    await signIn(page, "2");
    app.state.jobDurationMs = 400;
    await page.click("#live-run");
    await until(async () => Object.values(await figures(page)).every((f) => f.outcome === "done"), "bob's charts");
    const mine = (await queries(page)).filter((q) => q.outcome === "done");
    assert.equal(mine.length, CHARTS.length);
  });

  test(`${mode}: a logout in another tab stops this tab's queries before the session ends (the README's order in that tab)`, async (t) => {
    const { url, app } = await serve(t, mode, 60_000);
    const ctx = await browser.newContext();
    t.after(() => ctx.close().catch(() => {}));
    const a = await open(browser, url, ctx);
    await signIn(a, "1");
    const b = await open(browser, url, ctx);
    await b.waitForSelector("body[data-signed-in=true]");
    await a.click("#live-run");
    await until(() => running(app) >= CHARTS.length, "A's queries running");
    await sleep(300);
    // B signs out as the README says: guard.logout(), await stopped, then the server's.
    await b.click("#logout");
    await b.waitForSelector("body[data-signed-in=false]");
    await until(() => running(app) === 0, `nothing left running: ${JSON.stringify(app.running())}`);
    const log = app.state.requests;
    const logout = log.findIndex((r) => r.method === "POST" && r.path === "/logout");
    assert.ok(logout >= 0);
    const stopping = log
      .map((r, i) => ({ ...r, i }))
      .filter((r) => r.path === "/api/v1/chart/data/stop" || /\/cancel$/.test(r.path));
    const ids = new Set((await queries(a)).map((q) => q.clientId).filter(Boolean));
    if (mode === "sync") {
      const theirs = app.state.stops.filter((s) => ids.has(s.clientId));
      assert.equal(theirs.length, CHARTS.length, JSON.stringify(app.state.stops));
      assert.ok(theirs.every((s) => s.found), JSON.stringify(theirs));
    } else {
      assert.ok(stopping.some((r) => /\/cancel$/.test(r.path) && r.status === 200), JSON.stringify(stopping));
    }
    // Every stop and cancel reached the server while the session still was: before the
    // logout, none answered 401 or 403 after it.
    const late = stopping.filter((r) => r.i > logout || r.status === 401 || r.status === 403);
    assert.deepEqual(late, [], JSON.stringify(log.slice(-30)));
    for (const q of await queries(a)) assert.equal(q.reason, "logout", JSON.stringify(q));
  });

  test(`${mode}: closing the tab stops its running queries with keepalive requests (with the CSRF header)`, async (t) => {
    const { url, app } = await serve(t, mode, 60_000);
    const ctx = await browser.newContext();
    t.after(() => ctx.close().catch(() => {}));
    const page = await open(browser, url, ctx);
    await signIn(page, "1");
    await page.click("#live-run");
    await until(() => running(app) > 0, "the queries running");
    await sleep(400);
    await page.close({ runBeforeUnload: true });
    if (mode === "sync") {
      // Each query's stop found it, and no stop went for anything else.
      await until(() => app.state.stops.filter((s) => s.found).length >= CHARTS.length, "the keepalive stops");
      assert.equal(app.state.stops.filter((s) => !s.found).length, 0, JSON.stringify(app.state.stops));
    } else {
      await until(() => app.cancelRequests().length >= 1, "the keepalive cancels");
      // 200: the CSRF header went with it (the server answers 400 without it).
      assert.ok(app.cancelRequests().every((r) => r.status === 200), JSON.stringify(app.cancelRequests()));
    }
    await until(() => running(app) === 0, `nothing left running: ${JSON.stringify(app.running())}`);
  });
}
