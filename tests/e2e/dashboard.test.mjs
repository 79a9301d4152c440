// The dashboard against the reference server in headless Chromium, counting the cancel
// requests the server receives. Each test gets its own browser context (cookies and
// localStorage of its own), like a fresh browser profile.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";

import { start } from "../../www/server.mjs";
import { launch } from "./browser.mjs";
import { open, signIn, signOut, startJob, cancelById, latestOutcome, clickCancel } from "./dashboard.mjs";

let server, url, app, browser;

before(async () => {
  // Jobs run long enough that only a cancel ends them during a test.
  ({ server, url, app } = await start({ port: 0, jobDurationMs: 120_000, contract: "async_event" }));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.close();
});

const openDashboard = (context) => open(browser, url, context);

const cancels = (jobId) => app.cancelRequests(jobId).length;

test("1. A starts a job and signs out, B signs in: no record of A's job, and no request for it", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const aJob = await startJob(page);
  await signOut(page);
  await signIn(page, "2");

  assert.equal(await page.locator("#jobs tr").count(), 0);
  assert.equal(await page.evaluate((id) => window.dashboard.guard.job(id), aJob), null);
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }));
  assert.ok(!stored.includes(aJob), "A's metadata is gone from storage");

  const { outcome, text } = await cancelById(page, aJob);
  assert.equal(outcome, "refused");
  assert.match(text, /^Unknown job .*no request sent/);
  assert.equal(cancels(aJob), 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("2. forged job ids are refused locally; a 403 from the server shows 'not job owner' after one request", async () => {
  // A's job, in A's own browser.
  const alicePage = await openDashboard();
  await signIn(alicePage, "1");
  const aJob = await startJob(alicePage);

  // B, elsewhere, calls the guard directly with A's job id: refused, nothing sent.
  const bobPage = await openDashboard();
  await signIn(bobPage, "2");
  const direct = await bobPage.evaluate((id) => window.dashboard.guard.cancel(id), aJob);
  assert.equal(direct.outcome, "refused");
  assert.equal(direct.reason, "unknown_job");
  assert.equal(direct.attempts, 0);
  assert.equal(cancels(aJob), 0);

  // Behind A's page, the server's session switches to B (another tab signed in as bob):
  // the guard still holds A's record, so the request goes out, and Superset answers 403.
  await alicePage.request.post(new URL("/login", url).href, { data: { user: "2" } });
  const { outcome, text } = await clickCancel(alicePage, aJob);
  assert.equal(outcome, "not_job_owner");
  assert.match(text, /^Not job owner/);
  assert.match(text, /1 request sent/);
  assert.deepEqual(app.cancelRequests(aJob).map((r) => r.status), [403], "exactly one request");
  assert.equal(await alicePage.locator(`#jobs tr[data-job-id="${aJob}"]`).count(), 0, "record dropped");
  // The 403's body was not needed, and it is read to its end: the network log shows the 403,
  // not a failed request.
  await alicePage.waitForTimeout(300);
  assert.deepEqual(alicePage.failed.filter((f) => f.includes("/cancel")), []);
  await alicePage.context().close();
  await bobPage.context().close();
});

test("3. the same user signs out and back in (new channel): the old job cannot be cancelled", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const oldJob = await startJob(page);
  const oldChannel = await page.evaluate(() => window.dashboard.guard.session.channelId);
  await signOut(page);
  await signIn(page, "1");
  const newJob = await startJob(page);
  const newChannel = await page.evaluate(() => window.dashboard.guard.session.channelId);
  assert.notEqual(newChannel, oldChannel, "the server minted a new channel");

  const { outcome } = await cancelById(page, oldJob);
  assert.equal(outcome, "refused");
  assert.equal(cancels(oldJob), 0);
  assert.equal(await page.locator(`#jobs tr[data-job-id="${newJob}"]`).count(), 1);
  await page.context().close();
});

test("4. two tabs: signing out in one makes the other refuse at once", async () => {
  const context = await browser.newContext();
  const one = await openDashboard(context);
  await signIn(one, "1");
  const job = await startJob(one);
  const two = await openDashboard(context);
  await two.waitForSelector(`#jobs tr[data-job-id="${job}"]`);
  assert.equal(await two.textContent("#session"), "Signed in as alice (user 1)");

  // Both tabs record at once: neither record is lost.
  const [fromOne, fromTwo] = await Promise.all([startJob(one), startJob(two)]);
  for (const page of [one, two]) {
    for (const id of [job, fromOne, fromTwo]) {
      await page.waitForSelector(`#jobs tr[data-job-id="${id}"]`);
    }
    await page.waitForFunction(() => document.querySelectorAll("#jobs tr").length === 3);
  }

  await signOut(one);
  const outcome = await two.evaluate((id) => window.dashboard.guard.cancel(id), job);
  assert.equal(outcome.outcome, "refused");
  assert.equal(outcome.reason, "no_session");
  assert.equal(cancels(job), 0);
  // The other tab's page follows too (guard.onChange).
  await two.waitForSelector("body[data-signed-in=false]");
  assert.match(await two.textContent("#log li:first-child"), /Signed out in another tab/);
  assert.equal(await two.locator("#jobs tr").count(), 0);
  await context.close();
});

test("5. a happy cancel: the job ends cancelled in the UI and on the server", async () => {
  const page = await openDashboard();
  await signIn(page, "3");
  const job = await startJob(page);
  const { outcome, text } = await clickCancel(page, job);
  assert.equal(outcome, "cancelled");
  assert.match(text, /^Job cancelled \(1 request sent\)/);
  await page.waitForSelector(`#jobs tr[data-job-id="${job}"] .status.cancelled`);
  assert.equal(app.state.registry.has(job), false, "the server's cancel record is gone");
  assert.deepEqual(
    app.state.events.filter((e) => e.job_id === job && e.status === "cancelled").length,
    1,
    "exactly one terminal cancelled event",
  );
  assert.ok(await page.locator(`#jobs tr[data-job-id="${job}"] button.cancel`).isDisabled());

  // A second job left running, a finished one, and the outcome log: the screenshot.
  await startJob(page);
  await page.click("button.chart >> nth=2");
  await page.waitForSelector(".status.error", { timeout: 10_000 });
  await mkdir("target/e2e", { recursive: true });
  await page.screenshot({ path: "target/e2e/dashboard.png", fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("6. retries: 503 twice then 200 succeeds in 3 requests; 403 is never retried", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const job = await startJob(page);
  app.state.faults.cancel.push(503, 503);
  const { outcome, text } = await clickCancel(page, job);
  assert.equal(outcome, "cancelled");
  assert.match(text, /3 requests sent/);
  assert.deepEqual(app.cancelRequests(job).map((r) => r.status), [503, 503, 200]);

  const other = await startJob(page);
  app.state.faults.cancel.push(403, 200);
  const forbidden = await clickCancel(page, other);
  assert.equal(forbidden.outcome, "not_job_owner");
  assert.deepEqual(app.cancelRequests(other).map((r) => r.status), [403]);
  app.state.faults.cancel.length = 0;
  // No answer was aborted after it came: neither the 503s before their retries nor the 403.
  await page.waitForTimeout(300);
  assert.deepEqual(page.failed.filter((f) => f.includes("/cancel")), []);
  await page.context().close();
});

test("7. an embedded guest owns its jobs through its guest channel", async () => {
  const page = await openDashboard();
  await signIn(page, "guest");
  assert.equal(await page.textContent("#session"), "Signed in as guest");
  const job = await startJob(page);
  const record = await page.evaluate((id) => window.dashboard.guard.job(id), job);
  assert.equal(record.user_id, null);
  assert.match(record.channel_id, /^guest-/);
  const { outcome } = await clickCancel(page, job);
  assert.equal(outcome, "cancelled");
  assert.deepEqual(app.cancelRequests(job).map((r) => r.status), [200]);
  await page.context().close();
});
