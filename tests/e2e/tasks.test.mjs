// The dashboard on the task contract (today's Superset task framework) against the reference
// server in headless Chromium, counting the cancel requests the server receives.
import { test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";

import { start } from "../../www/server.mjs";
import { launch } from "./browser.mjs";
import { open, signIn, signOut, startJob, cancelById, clickCancel } from "./dashboard.mjs";

let server, url, app, browser;

before(async () => {
  ({ server, url, app } = await start({ port: 0, jobDurationMs: 120_000, contract: "task" }));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.close();
});

// Each test starts with no tasks on the server (one chart is one shared task while it runs).
beforeEach(() => {
  app.stop();
  app.state.tasks.clear();
});

const openDashboard = async (context) => {
  const page = await open(browser, url, context);
  assert.equal(await page.getAttribute("body", "data-contract"), "task");
  return page;
};
const cancels = (uuid) => app.cancelRequests(uuid);
const rows = (page) => page.locator("#jobs tr").count();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test("a user switch purges the tasks and sends nothing for them", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const uuid = await startJob(page);
  assert.match(uuid, UUID);
  await signOut(page);
  await signIn(page, "2");
  assert.equal(await rows(page), 0);
  const { outcome, text } = await cancelById(page, uuid);
  assert.equal(outcome, "refused");
  assert.match(text, /Unknown job/);
  assert.equal(cancels(uuid).length, 0);
  await page.context().close();
});

test("a forged uuid is refused locally", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const forged = "0b3a6f7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
  assert.equal((await cancelById(page, forged)).outcome, "refused");
  assert.equal((await cancelById(page, "../../api/v1/task/x")).outcome, "refused");
  assert.equal(cancels(forged).length, 0);
  await page.context().close();
});

test("a server 404 for a recorded task is 'Not job owner' after exactly one request", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const uuid = await startJob(page);
  // The server no longer shows the task to alice (she is not a subscriber any more).
  app.state.tasks.get(uuid).subscribers.delete("user:1");
  const { outcome, text } = await clickCancel(page, uuid);
  assert.equal(outcome, "not_job_owner");
  assert.match(text, /^Not job owner/);
  assert.match(text, /ended/);
  assert.equal(cancels(uuid).length, 1);
  assert.equal(await page.locator(`#jobs tr[data-job-id="${uuid}"]`).count(), 0, "record removed");
  await page.context().close();
});

test("two users share a task: one leaves it while it runs on for the other", async () => {
  const alice = await openDashboard();
  const bob = await openDashboard();
  await signIn(alice, "1");
  await signIn(bob, "2");
  const uuid = await startJob(alice);
  assert.equal(await startJob(bob), uuid, "one query, one shared task");
  const left = await clickCancel(alice, uuid);
  assert.equal(left.outcome, "left");
  assert.match(left.text, /runs on for the other users/);
  assert.equal(await alice.locator(`#jobs tr[data-job-id="${uuid}"]`).count(), 0);
  assert.notEqual(app.state.tasks.get(uuid).status, "aborted");
  assert.equal(await bob.locator(`#jobs tr[data-job-id="${uuid}"]`).count(), 1);
  const aborted = await clickCancel(bob, uuid);
  assert.equal(aborted.outcome, "cancelled");
  assert.equal(app.state.tasks.get(uuid).status, "aborted");
  await bob.waitForSelector(`#jobs tr[data-job-id="${uuid}"] .status.aborted`);
  assert.deepEqual(cancels(uuid).map((r) => r.body), [{ tab_id: await alice.evaluate(() => window.tabId) }, { tab_id: await bob.evaluate(() => window.tabId) }]);
  await alice.context().close();
  await bob.context().close();
});

test("per-tab detach: each tab's cancel carries its own tab_id", async () => {
  const context = await browser.newContext();
  const tabA = await openDashboard(context);
  await signIn(tabA, "3");
  const tabB = await openDashboard(context);
  const idA = await tabA.evaluate(() => window.tabId);
  const idB = await tabB.evaluate(() => window.tabId);
  assert.notEqual(idA, idB);
  const uuid = await startJob(tabA);
  // Tab B already lists the task (shared storage); its own query subscribes its tab too.
  await tabB.click("button.chart >> nth=0");
  await tabB.waitForFunction(
    (id) => window.dashboard.guard.jobs().some((j) => j.tab_ids?.includes(id)),
    idB,
  );
  assert.deepEqual((await tabB.evaluate(() => window.dashboard.guard.jobs()))[0].tab_ids, [idA, idB]);
  const detached = await clickCancel(tabA, uuid);
  assert.equal(detached.outcome, "left");
  assert.match(detached.text, /other tabs/);
  assert.equal(await tabA.locator(`#jobs tr[data-job-id="${uuid}"]`).count(), 0, "gone in tab A");
  await tabB.reload();
  await tabB.waitForSelector("body[data-ready=true]");
  assert.equal(await tabB.locator(`#jobs tr[data-job-id="${uuid}"]`).count(), 1, "still in tab B");
  const aborted = await clickCancel(tabB, uuid);
  assert.equal(aborted.outcome, "cancelled");
  assert.deepEqual(cancels(uuid).map((r) => r.body), [{ tab_id: idA }, { tab_id: idB }]);
  await context.close();
});

test("a 422 is not retried, and a running task's 422 is not 'finished'", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const uuid = await startJob(page);
  // A 422 while the task runs: its status, read back, says it runs on.
  app.state.faults.cancel.push(422);
  const { outcome } = await clickCancel(page, uuid);
  assert.equal(outcome, "refused");
  assert.equal(cancels(uuid).length, 1);
  assert.equal(await page.locator(`#jobs tr[data-job-id="${uuid}"]`).count(), 1, "the record is kept");
  await page.context().close();
});

test("two tabs: signing out in one empties the other's list at once, and it sends nothing", async () => {
  const context = await browser.newContext();
  const tabA = await openDashboard(context);
  await signIn(tabA, "2");
  const uuid = await startJob(tabA);
  const tabB = await openDashboard(context);
  assert.equal(await tabB.locator(`#jobs tr[data-job-id="${uuid}"]`).count(), 1);
  await signOut(tabA);
  await tabB.waitForFunction(() => document.querySelectorAll("#jobs tr").length === 0);
  const { outcome } = await cancelById(tabB, uuid);
  assert.equal(outcome, "refused");
  assert.equal(cancels(uuid).length, 0);
  assert.deepEqual([...tabA.errors, ...tabB.errors], []);
  await context.close();
});

test("the React dashboard, as npm start serves it under /react/: sign in, record, cancel", async () => {
  const page = await (await browser.newContext()).newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(new URL("react/", url).href);
  await page.waitForSelector("body[data-ready=true]", { state: "attached" });
  await page.click("#login");
  await page.waitForSelector("#session:has-text('user 1')");
  await page.click("button.chart");
  await page.waitForSelector("#jobs tr");
  const uuid = await page.getAttribute("#jobs tr", "data-job-id");
  assert.match(uuid, UUID);
  await page.click(`#jobs tr[data-job-id="${uuid}"] button.cancel`);
  await page.waitForSelector(`#jobs tr[data-job-id="${uuid}"] .outcome[data-outcome="cancelled"]`);
  assert.deepEqual(cancels(uuid).map((r) => r.body), [{ tab_id: await page.evaluate(() => sessionStorage.getItem("dashboard-tab-id")) }]);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("Superset's two 422s: a running task without an abort handler is kept, a finished one finishes", async () => {
  const page = await openDashboard();
  await signIn(page, "1");
  const uuid = await startJob(page);
  // No abort handler, in progress: Superset's 422 "is in progress but has not registered an
  // abort handler". The guard reads the task's status: it runs on, and the record stays.
  const task = app.state.tasks.get(uuid);
  task.abortable = false;
  task.status = "in_progress";
  const running = await clickCancel(page, uuid);
  assert.equal(running.outcome, "refused");
  assert.match(running.text, /cannot be stopped/);
  assert.equal(cancels(uuid).length, 1, "one POST");
  const row = page.locator(`#jobs tr[data-job-id="${uuid}"]`);
  assert.equal(await row.count(), 1, "the record is kept");
  assert.equal(await page.evaluate((id) => window.dashboard.guard.job(id)?.status, uuid), "in_progress");
  // It ends while the page has not heard (no status change published): the next cancel gets
  // "Task could not be aborted." and the status read back finishes the record. Its change time
  // goes back too: status_changes answers every row changed at or after the cursor floored to
  // the second, so a task created in the current second would be answered again, with this
  // status, and the page would hear it after all.
  task.status = "success";
  task.changedOn = 0;
  const finished = await clickCancel(page, uuid);
  assert.equal(finished.outcome, "already_finished");
  assert.equal(cancels(uuid).length, 2);
  assert.equal(await page.evaluate((id) => window.dashboard.guard.job(id)?.status, uuid), "success");
  await page.context().close();
});
