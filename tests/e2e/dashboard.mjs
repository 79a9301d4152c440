// The dashboard, as the end-to-end tests drive it (both contracts).

export async function open(browser, url, context) {
  const page = await (context ?? (await browser.newContext())).newPage();
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(e));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]");
  return page;
}

export async function signIn(page, user) {
  await page.selectOption("#user", user);
  await page.click("#login");
  await page.waitForSelector("body[data-signed-in=true]");
}

export async function signOut(page) {
  await page.click("#logout");
  await page.waitForSelector("body[data-signed-in=false]");
}

/** Runs a chart query in the UI; returns the job id the server gave it. */
export async function startJob(page) {
  const before = await page.locator("#jobs tr").count();
  await page.click("button.chart >> nth=0");
  await page.waitForFunction((n) => document.querySelectorAll("#jobs tr").length > n, before);
  return page.locator("#jobs tr").last().getAttribute("data-job-id");
}

/** Cancels through the "any job id" form; returns the outcome logged for it. */
export async function cancelById(page, jobId) {
  const before = await page.locator("#log li").count();
  await page.fill("#job-id", jobId);
  await page.click("#forge button");
  await page.waitForFunction((n) => document.querySelectorAll("#log li").length > n, before);
  return latestOutcome(page);
}

export async function latestOutcome(page) {
  const li = page.locator("#log li").first();
  return { outcome: await li.getAttribute("data-outcome"), text: await li.textContent() };
}

/** Waits for the log entry of a cancel clicked in the jobs table. */
export async function clickCancel(page, jobId) {
  const before = await page.locator("#log li").count();
  await page.click(`#jobs tr[data-job-id="${jobId}"] button.cancel`);
  await page.waitForFunction((n) => document.querySelectorAll("#log li").length > n, before, {
    timeout: 15_000,
  });
  return latestOutcome(page);
}

