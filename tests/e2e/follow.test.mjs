// follow() in the dashboard, several tabs of one browser against the reference server, on both
// contracts: one tab polls the event stream for all, every tab's list reaches the final status,
// another tab takes over when the polling one closes, and nothing is polled while nothing runs.
// Each page's requests are counted by Playwright, so the test knows which tab polled.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { start } from "../../www/server.mjs";
import { launch } from "./browser.mjs";
import { open, signIn, signOut, startJob } from "./dashboard.mjs";

let browser;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

const FINAL = { async_event: "done", task: "success" };

/** A tab of the dashboard whose requests to the event stream are counted. */
async function tab(url, context) {
  const page = await open(browser, url, context);
  page.polls = [];
  page.on("request", (request) => {
    const { pathname } = new URL(request.url());
    const stream = pathname === "/api/v1/async_event/" || /^\/api\/v1\/task\/(status_changes|[^/]+\/status)$/.test(pathname);
    if (stream && request.method() === "GET") page.polls.push(Date.now());
  });
  return page;
}

async function finishedEverywhere(pages, job, status) {
  for (const page of pages) {
    await page.waitForSelector(`#jobs tr[data-job-id="${job}"] span.status.${status}`, { timeout: 20_000 });
  }
}

for (const contract of ["async_event", "task"]) {
  test(`${contract}: three tabs, one poller; every tab sees the job finish; another takes over when it closes; quiet when nothing runs`, async () => {
    const { server, url } = await start({ port: 0, jobDurationMs: 2500, contract });
    try {
      const context = await browser.newContext();
      const first = await tab(url, context);
      await signIn(first, "1");
      const tabs = [first, await tab(url, context), await tab(url, context)];
      const job = await startJob(tabs[1]);
      await finishedEverywhere(tabs, job, FINAL[contract]);
      const polled = tabs.filter((page) => page.polls.length > 0);
      assert.equal(polled.length, 1, `one tab polled: ${tabs.map((p) => p.polls.length)}`);

      // Nothing running: no requests at all.
      const counts = tabs.map((p) => p.polls.length);
      await new Promise((r) => setTimeout(r, 1500));
      assert.deepEqual(tabs.map((p) => p.polls.length), counts, "no polls with nothing running");

      // The polling tab closes: one of the others takes over for the next job.
      const leader = polled[0];
      await leader.close();
      const rest = tabs.filter((p) => p !== leader);
      const before = rest.map((p) => p.polls.length);
      const next = await startJob(rest[0]);
      await finishedEverywhere(rest, next, FINAL[contract]);
      const took = rest.filter((p, i) => p.polls.length > before[i]);
      assert.equal(took.length, 1, `one tab took over: ${rest.map((p, i) => p.polls.length - before[i])}`);

      // Signed out and in again in the tab that does not poll: the poller follows the new
      // session's job (it learns of both through storage).
      const quiet = rest.find((p) => p !== took[0]);
      await signOut(quiet);
      for (const page of rest) await page.waitForSelector("body[data-signed-in=false]");
      await signIn(quiet, "1");
      for (const page of rest) await page.waitForSelector("body[data-signed-in=true]");
      const third = await startJob(quiet);
      await finishedEverywhere(rest, third, FINAL[contract]);
      for (const page of tabs) assert.deepEqual(page.errors, []);
      await context.close();
    } finally {
      server.close();
    }
  });
}
