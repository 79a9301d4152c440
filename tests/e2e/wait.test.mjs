// guard.waitFor in the dashboard against the reference server in headless Chromium, on both
// contracts: a new filter supersedes the running query (the server receives the old one's
// cancel, with the tab id recorded at submit on the task contract) and the new one is done; two
// waiters on one job (aborting one sends nothing, the second sends one cancel); waiters on
// unknown or other users' jobs are refused without a request; the page's end cancels what it
// awaits (keepalive, with the CSRF header: the server answers 400 without it) and the
// back/forward cache does not; three tabs wait with one poller. Every assertion is on the
// requests the server saw (`app.state.requests`).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { start } from "../../www/server.mjs";
import { chromium } from "playwright-core";
import { CHROMIUM, launch } from "./browser.mjs";
import { open, signIn, signOut, runQuery, setFilter, settled } from "./dashboard.mjs";

let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

const CONTRACTS = ["task", "async_event"];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ids = (attr) => (attr ? attr.split(" ").filter(Boolean) : []);

/** A reference server for one test, closed when it ends. */
async function serve(t, contract, jobDurationMs = 120_000, options = {}) {
  const served = await start({ port: 0, jobDurationMs, contract, ...options });
  t.after(() => served.server.close());
  return served;
}

/** A fresh browser context (cookies and storage of its own), closed when the test ends. */
async function context(t) {
  const ctx = await browser.newContext();
  t.after(() => ctx.close().catch(() => {}));
  return ctx;
}

/** Waits until `predicate()` holds (the server's state changes as requests arrive). */
async function until(predicate, what, timeout = 10_000) {
  const end = Date.now() + timeout;
  while (!predicate()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Every API request whose path names `id` (a status read, a cancel, …). */
const requestsFor = (app, id) => app.state.requests.filter((r) => r.path.includes(encodeURIComponent(id)));

/** Asserts the one cancel the server received for `id` was accepted, with this tab's id on the task contract. */
function assertCancelled(app, contract, id, tabId) {
  const sent = app.cancelRequests(id);
  assert.equal(sent.length, 1, `one cancel for ${id}: ${JSON.stringify(sent)}`);
  // 200: the CSRF token was right (the server answers 400 without it) and the session owns it.
  assert.equal(sent[0].status, 200);
  if (contract === "task") {
    assert.deepEqual(sent[0].body, tabId === null ? {} : { tab_id: tabId }, "the tab id recorded at submit");
    assert.equal(app.state.tasks.get(id).status, "aborted");
  } else {
    assert.equal(app.state.registry.has(id), false, "the server's job is gone");
    assert.equal(app.state.events.filter((e) => e.job_id === id && e.status === "cancelled").length, 1);
  }
}

for (const contract of CONTRACTS) {
  test(`${contract}: a new filter supersedes the running query: its cancel reaches the server, the new query is done`, async (t) => {
    const { url, app } = await serve(t, contract);
    const page = await open(browser, url, await context(t));
    await signIn(page, "1");
    const tabId = await page.evaluate(() => window.tabId);

    const first = await runQuery(page);
    assert.equal(first.outcome, "waiting");
    const [old] = ids(first.jobIds);
    assert.ok(old, "the first query's job");
    assert.equal(await page.getAttribute("#wait-outcome", "data-outcome"), "waiting");

    // The next query finishes quickly.
    app.state.jobDurationMs = 1500;
    const second = await setFilter(page, "emea");
    const [next] = ids(second.jobIds);
    assert.ok(next && next !== old, "a new job for the new filter");

    const aborted = await settled(page, first.seq);
    assert.equal(aborted.outcome, "aborted");
    assert.deepEqual(ids(aborted.cancelling), [old], "the abort cancels the old job");
    await until(() => app.cancelRequests(old).length > 0, "the old query's cancel");
    assertCancelled(app, contract, old, tabId);

    const done = await settled(page, second.seq);
    assert.equal(done.outcome, "done", done.text);
    assert.deepEqual(ids(done.jobIds), [next]);
    // #wait-outcome shows the current query, not the superseded one.
    assert.equal(await page.getAttribute("#wait-outcome", "data-seq"), String(second.seq));
    assert.equal(await page.getAttribute("#wait-outcome", "data-outcome"), "done");
    assert.equal(app.cancelRequests(next).length, 0, "nothing cancels the new query");
    assert.equal(app.cancelRequests(old).length, 1, "exactly one cancel for the old one");
    assert.deepEqual(page.errors, []);
  });

  test(`${contract}: two waiters on one job: aborting one sends nothing, aborting the second sends one cancel`, async (t) => {
    const { url, app } = await serve(t, contract);
    const page = await open(browser, url, await context(t));
    await signIn(page, "2");
    const tabId = await page.evaluate(() => window.tabId);

    // A query submitted in the page, its 202 body awaited twice by the page's guard.
    const id = await page.evaluate(async () => {
      const csrf = (await (await fetch("/api/v1/security/csrf_token/")).json()).result;
      const response = await fetch("/api/v1/chart/data", {
        method: "POST",
        headers: { "content-type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify({ chart: "Shared", tab_id: window.tabId }),
      });
      const body = await response.json();
      const { guard } = window.dashboard;
      const one = new AbortController();
      const two = new AbortController();
      window.waiters = {
        one: { controller: one, outcome: guard.waitFor(body, { signal: one.signal }) },
        two: { controller: two, outcome: guard.waitFor(body.task_ids ?? [body.job_id], { signal: two.signal }) },
      };
      return body.task_ids?.[0] ?? body.job_id;
    });
    const abort = (name) =>
      page.evaluate((n) => {
        window.waiters[n].controller.abort();
        return window.waiters[n].outcome;
      }, name);

    const one = await abort("one");
    assert.equal(one.outcome, "aborted");
    assert.deepEqual(one.cancelling, [], "the other waiter still awaits it");
    await sleep(1500);
    assert.equal(app.cancelRequests(id).length, 0, "no cancel while another waiter awaits the job");
    assert.ok(
      ["pending", "in_progress", "running"].includes(await page.evaluate((i) => window.dashboard.guard.job(i)?.status, id)),
      "the job runs on",
    );

    const two = await abort("two");
    assert.equal(two.outcome, "aborted");
    assert.deepEqual(two.cancelling, [id]);
    await until(() => app.cancelRequests(id).length > 0, "the second abort's cancel");
    await sleep(500); // no second request follows
    assertCancelled(app, contract, id, tabId);
    assert.deepEqual(page.errors, []);
  });

  test(`${contract}: a waiter on an unknown job or another user's job is refused, and nothing is sent`, async (t) => {
    const { url, app } = await serve(t, contract);
    // Alice's query, in her own browser.
    const alice = await open(browser, url, await context(t));
    await signIn(alice, "1");
    const [aliceJob] = ids((await runQuery(alice)).jobIds);
    const aliceRecord = await alice.evaluate((id) => window.dashboard.guard.job(id), aliceJob);

    // Bob, elsewhere; every request his pages make from here on is kept.
    const bob = await open(browser, url, await context(t));
    await signIn(bob, "2");
    const sent = [];
    const keep = (request) => sent.push(`${request.method()} ${new URL(request.url()).pathname}`);
    bob.on("request", keep);
    const before = app.state.requests.length;
    const forged = "0b3a6f7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    const outcomes = await bob.evaluate(
      async ([job, forgedId]) => {
        const { guard } = window.dashboard;
        return {
          job: await guard.waitFor(job),
          forged: await guard.waitFor(forgedId),
          list: await guard.waitFor([forgedId, job]),
        };
      },
      [aliceJob, forged],
    );
    for (const [what, outcome] of Object.entries(outcomes)) {
      assert.equal(outcome.outcome, "refused", `${what}: ${JSON.stringify(outcome)}`);
      assert.equal(outcome.reason, "unknown_job", what);
      assert.deepEqual(outcome.cancelling, [], what);
    }
    if (contract === "async_event") {
      // Alice's 202 body itself (her channel and user id): not Bob's to record or await.
      const metadata = {
        channel_id: aliceRecord.channel_id,
        job_id: aliceJob,
        user_id: aliceRecord.user_id,
        status: "pending",
        errors: [],
        result_url: null,
      };
      const outcome = await bob.evaluate((m) => window.dashboard.guard.waitFor(m), metadata);
      assert.equal(outcome.outcome, "refused", JSON.stringify(outcome));
      assert.equal(await bob.evaluate((id) => window.dashboard.guard.job(id), aliceJob), null, "not recorded");
    }

    // Alice signs out and Bob signs in in her browser: her job is purged, a waiter on it refused.
    await signOut(alice);
    await signIn(alice, "2");
    alice.on("request", keep);
    const purged = await alice.evaluate((id) => window.dashboard.guard.waitFor(id), aliceJob);
    assert.equal(purged.outcome, "refused", JSON.stringify(purged));
    assert.equal(purged.reason, "unknown_job");

    await sleep(1000);
    const named = sent.filter((r) => r.includes(aliceJob) || r.includes(forged));
    assert.deepEqual(named, [], "no request of Bob's names Alice's job or the forged id");
    assert.deepEqual(requestsFor(app, forged), [], "the server saw no request for the forged id");
    assert.deepEqual(app.state.requests.slice(before).filter((r) => /cancel/.test(r.path)), [], "no cancel at all");
    assert.deepEqual([...alice.errors, ...bob.errors], []);
  });

  test(`${contract}: closing the tab cancels the query it awaits (keepalive, CSRF header); a chart query runs on`, async (t) => {
    const { url, app } = await serve(t, contract);
    const page = await open(browser, url, await context(t));
    await signIn(page, "3");
    const tabId = await page.evaluate(() => window.tabId);
    // A chart button's query, awaited by the guard that lets it run on (cancelOnClose: false).
    await page.click("button.chart >> nth=1");
    await page.waitForSelector('#chart-waits li[data-outcome="waiting"]', { state: "attached" });
    const chartJob = await page.getAttribute('#chart-waits li[data-outcome="waiting"]', "data-job-ids");
    const [job] = ids((await runQuery(page)).jobIds);
    assert.equal(app.cancelRequests(job).length, 0);

    await page.close({ runBeforeUnload: true });
    await until(() => app.cancelRequests(job).length > 0, "the keepalive cancel");
    await sleep(500);
    assertCancelled(app, contract, job, tabId);
    assert.equal(app.cancelRequests(chartJob).length, 0, "the chart's query runs on");
  });

  test(`${contract}: navigating to another origin cancels the awaited query, with the CSRF header`, async (t) => {
    const { url, app } = await serve(t, contract);
    const other = await serve(t, contract);
    const page = await open(browser, url, await context(t));
    await signIn(page, "1");
    const tabId = await page.evaluate(() => window.tabId);
    const [job] = ids((await runQuery(page)).jobIds);

    // Another host, not only another port: cookies ignore the port, and the other server's
    // `session` cookie would replace this one's before the keepalive cancel leaves.
    const elsewhere = new URL(other.url);
    elsewhere.hostname = "localhost";
    await page.goto(elsewhere.href);
    await until(() => app.cancelRequests(job).length > 0, "the keepalive cancel");
    await sleep(500);
    assertCancelled(app, contract, job, tabId);
    assert.equal(other.app.cancelRequests().length, 0);
  });

  test(`${contract}: a page that really enters the back/forward cache sends nothing; closed after its restore, it cancels`, async (t) => {
    // Playwright turns the back/forward cache off (--disable-back-forward-cache): a browser of
    // this test's own keeps it on, and the server serves the pages `no-cache` (a `no-store`
    // page is never cached).
    const own = await chromium.launch({
      executablePath: CHROMIUM,
      ignoreDefaultArgs: ["--disable-back-forward-cache"],
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    t.after(() => own.close());
    const { url, app } = await serve(t, contract, 120_000, { bfcache: true });
    const page = await open(own, url);
    await signIn(page, "1");
    const tabId = await page.evaluate(() => window.tabId);
    const [job] = ids((await runQuery(page)).jobIds);
    await page.evaluate(() => {
      addEventListener("pagehide", (e) => sessionStorage.setItem("pagehide", String(e.persisted)));
      addEventListener("pageshow", (e) => sessionStorage.setItem("pageshow", String(e.persisted)));
    });

    await page.goto(new URL("/style.css", url).href);
    await sleep(1000);
    // A restored page fires no `load`: wait for the commit, then for its pageshow.
    await page.goBack({ waitUntil: "commit" });
    await page.waitForFunction(() => sessionStorage.getItem("pageshow") !== null);
    const entered = await page.evaluate(() => [sessionStorage.getItem("pagehide"), sessionStorage.getItem("pageshow")]);
    assert.deepEqual(entered, ["true", "true"], "the page went into the back/forward cache and came back from it");
    await sleep(500);
    assert.equal(app.cancelRequests(job).length, 0, "nothing sent for a page kept in the cache");
    assert.equal(await page.getAttribute("#wait-outcome", "data-outcome"), "waiting", "its query is still awaited");

    // Restored, it closes for good: the waiter's job is cancelled.
    await page.close({ runBeforeUnload: true });
    await until(() => app.cancelRequests(job).length > 0, "the keepalive cancel");
    await sleep(500);
    assertCancelled(app, contract, job, tabId);
  });

  test(`${contract}: the polling tab going into the back/forward cache hands polling over: another tab's wait ends done`, async (t) => {
    const own = await chromium.launch({
      executablePath: CHROMIUM,
      ignoreDefaultArgs: ["--disable-back-forward-cache"],
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
    t.after(() => own.close());
    const { url, app } = await serve(t, contract, 4000, { bfcache: true });
    const ctx = await own.newContext();
    const first = await open(own, url, ctx);
    await signIn(first, "1");
    await runQuery(first);
    await first.evaluate(() => addEventListener("pagehide", (e) => sessionStorage.setItem("pagehide", String(e.persisted))));
    const second = await open(own, url, ctx);
    await second.waitForSelector("body[data-signed-in=true]");
    const { seq } = await runQuery(second);
    // The first tab (which polls: it asked first) goes into the back/forward cache.
    await first.goto(new URL("/style.css", url).href);
    const outcome = await settled(second, seq, 15_000);
    assert.equal(outcome.outcome, "done", outcome.text);
    await first.goBack({ waitUntil: "commit" });
    await first.waitForFunction(() => sessionStorage.getItem("pagehide") !== null);
    assert.equal(await first.evaluate(() => sessionStorage.getItem("pagehide")), "true", "it was kept in the cache");
    assert.equal(app.cancelRequests().length, 0);
  });

  test(`${contract}: a pagehide into the back/forward cache (dispatched) sends nothing, one out of it cancels`, async (t) => {
    const { url, app } = await serve(t, contract);
    const page = await open(browser, url, await context(t));
    await signIn(page, "2");
    const tabId = await page.evaluate(() => window.tabId);
    const [job] = ids((await runQuery(page)).jobIds);

    // The pagehide a page gets when it enters the cache, dispatched (the browser of the other
    // tests runs without the cache, as Playwright launches it): persisted, it sends nothing.
    await page.evaluate(() => window.dispatchEvent(new PageTransitionEvent("pagehide", { persisted: true })));
    await sleep(1500);
    assert.equal(app.cancelRequests(job).length, 0, "nothing sent for a page kept in the cache");
    assert.equal(await page.getAttribute("#wait-outcome", "data-outcome"), "waiting");

    // The same listener, for a page that is not kept: it sends the cancel (so the above is not
    // silence for want of a listener).
    await page.evaluate(() => window.dispatchEvent(new PageTransitionEvent("pagehide", { persisted: false })));
    await until(() => app.cancelRequests(job).length > 0, "the cancel of a page not kept");
    await sleep(500);
    assertCancelled(app, contract, job, tabId);
  });

  test(`${contract}: two tabs await one job: the first tab's close sends nothing, the last one's cancels it`, async (t) => {
    const { url, app } = await serve(t, contract);
    const ctx = await context(t);
    const first = await open(browser, url, ctx);
    await signIn(first, "1");
    const tabId = await first.evaluate(() => window.tabId);
    const [job] = ids((await runQuery(first)).jobIds);
    const second = await open(browser, url, ctx);
    await second.waitForSelector("body[data-signed-in=true]");
    // The second tab awaits the same job (by its id: the records are the origin's).
    await second.evaluate((id) => {
      window.outcome = null;
      window.dashboard.guard.waitFor(id).then((o) => (window.outcome = o));
    }, job);
    // Its wait entry is in storage before the first tab goes.
    await second.waitForFunction(() =>
      Object.keys(localStorage).some((k) => k.includes(":v1:waits:") && localStorage.getItem(k).includes("jobs")),
    );
    await first.close({ runBeforeUnload: true });
    await sleep(1500);
    assert.equal(app.cancelRequests(job).length, 0, "the second tab still awaits it");
    assert.equal(await second.evaluate(() => window.outcome), null, "and still waits");

    await second.close({ runBeforeUnload: true });
    await until(() => app.cancelRequests(job).length > 0, "the last tab's keepalive cancel");
    await sleep(500);
    // The second tab did not submit the task: it knows no tab id of its own for it, and its
    // cancel carries none (Superset then cancels it for the user, whose last waiter it was).
    assertCancelled(app, contract, job, null);
    assert.ok(tabId);
  });

  test(`${contract}: another tab's logout settles a wait no_session, and a user switch user_changed`, async (t) => {
    const { url, app } = await serve(t, contract);
    const ctx = await context(t);
    const waiting = await open(browser, url, ctx);
    await signIn(waiting, "1");
    const { seq } = await runQuery(waiting);
    const other = await open(browser, url, ctx);
    await other.waitForSelector("body[data-signed-in=true]");
    // The guard's own logout (the server's session stays, so no 401 can come first).
    await other.evaluate(() => window.dashboard.guard.logout());
    const outcome = await settled(waiting, seq, 5_000);
    assert.equal(outcome.outcome, "refused", outcome.text);
    assert.equal(outcome.reason, "no_session", outcome.text);

    await signIn(other, "1");
    await waiting.waitForSelector("body[data-signed-in=true]");
    const next = await runQuery(waiting);
    await other.evaluate(() => window.dashboard.guard.login({ userId: 2 }));
    const switched = await settled(waiting, next.seq, 5_000);
    assert.equal(switched.reason, "user_changed", switched.text);
    assert.deepEqual(app.cancelRequests(), [], "nothing sent for either");
    assert.deepEqual([...waiting.errors, ...other.errors], []);
  });

  for (const follow of ["app", "waitFor"]) {
    const who = follow === "app" ? "the app's follow()" : "waitFor's own follow() (?follow=0)";
    test(`${contract}: three tabs wait with one poller (${who}), and every tab's waiter is done`, async (t) => {
      const { url, app } = await serve(t, contract, 2500);
      const ctx = await context(t);
      const address = follow === "app" ? url : new URL("?follow=0", url).href;
      const tab = async () => {
        const page = await open(browser, address, ctx);
        page.polls = [];
        page.on("request", (request) => {
          const { pathname } = new URL(request.url());
          const stream =
            pathname === "/api/v1/async_event/" || /^\/api\/v1\/task\/(status_changes|[^/]+\/status)$/.test(pathname);
          if (stream && request.method() === "GET") page.polls.push(Date.now());
        });
        return page;
      };
      const first = await tab();
      await signIn(first, "1");
      const tabs = [first, await tab(), await tab()];
      for (const page of tabs) await page.waitForSelector("body[data-signed-in=true]");
      await sleep(500);
      assert.deepEqual(tabs.map((p) => p.polls.length), [0, 0, 0], "nothing polls while nothing waits");

      // Each tab's query, awaited in that tab.
      const waiters = [];
      for (const page of tabs) waiters.push(await runQuery(page));
      const outcomes = [];
      for (const [i, page] of tabs.entries()) outcomes.push(await settled(page, waiters[i].seq));
      for (const outcome of outcomes) assert.equal(outcome.outcome, "done", outcome.text);
      const jobs = outcomes.map((o) => o.jobIds);
      if (contract === "task") assert.equal(new Set(jobs).size, 1, `one query, one shared task: ${jobs}`);
      else assert.equal(new Set(jobs).size, 3, `a job per tab: ${jobs}`);

      const polled = tabs.filter((page) => page.polls.length > 0);
      const spans = polled.map((p) => [p.polls[0], p.polls.at(-1)]);
      const report = `polls per tab: ${tabs.map((p) => p.polls.length)}; spans ${JSON.stringify(spans)}`;
      if (follow === "app" || contract === "task") {
        assert.equal(polled.length, 1, `one tab polled: ${report}`);
      } else {
        // waitFor follows while the tab's own waiters wait: a tab whose job ended first stops,
        // and a tab still waiting takes the poller's lock over. Never two pollers at once.
        assert.ok(polled.length >= 1, report);
        for (const [i, [a0, a1]] of spans.entries()) {
          for (const [b0, b1] of spans.slice(i + 1)) {
            assert.ok(a1 < b0 || b1 < a0, `two tabs polled at once: ${report}`);
          }
        }
      }
      // Done: no more polls.
      const counts = tabs.map((p) => p.polls.length);
      await sleep(1500);
      assert.deepEqual(tabs.map((p) => p.polls.length), counts, "no polls once nothing waits");
      assert.equal(app.cancelRequests().length, 0);
      for (const page of tabs) assert.deepEqual(page.errors, []);
    });
  }
}
