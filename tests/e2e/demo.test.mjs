// The demo page served by `npm start`, in headless Chromium: the guard works in a real page.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";

import { start, resolveStatic } from "../../www/server.mjs";
import { launch } from "./browser.mjs";

let server, url, browser;

before(async () => {
  ({ server, url } = await start({ port: 0 }));
  browser = await launch();
});

after(async () => {
  await browser?.close();
  server?.close();
});

test("the server serves only the page and the package", () => {
  assert.match(resolveStatic("/"), /www\/index\.html$/);
  assert.match(resolveStatic("/pkg/superset_job_guard.js"), /pkg\/superset_job_guard\.js$/);
  for (const bad of ["/../Cargo.toml", "/pkg/../Cargo.toml", "/%2e%2e/Cargo.toml", "/%00", "/%E0%A4%A"]) {
    assert.equal(resolveStatic(bad), null, bad);
  }
});

test("sign in, start a job, sign out, sign in as another user: the job cannot be cancelled", async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.textContent("#session"), "Signed out");

  await page.selectOption("#user", "1");
  await page.click("#login");
  assert.match(await page.textContent("#session"), /^Signed in as user 1/);
  await page.click("#start");
  const jobId = await page.textContent("#jobs tr td code");
  assert.match(jobId, /^[0-9a-f-]{36}$/);
  await page.click("#jobs button");
  assert.match(await page.textContent("#outcome"), /Cancel allowed/);

  await page.click("#logout");
  assert.match(await page.textContent("#outcome"), /removed 1 job record/);
  await page.selectOption("#user", "2");
  await page.click("#login");
  assert.equal(await page.locator("#jobs tr").count(), 0);
  await page.fill("#job-id", jobId);
  await page.click("#check");
  assert.match(await page.textContent("#outcome"), /^Unknown job .*\[unknown_job\]$/);

  // The job metadata is nowhere in this origin's storage any more.
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }));
  assert.ok(!stored.includes(jobId), stored);

  await mkdir("target/e2e", { recursive: true });
  await page.screenshot({ path: "target/e2e/demo.png", fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});
