// The dashboard, as the end-to-end tests drive it (both contracts).

export async function open(browser, url, context) {
  const page = await (context ?? (await browser.newContext())).newPage();
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(e));
  // Requests the browser logs as failed (an answer aborted after it came is one).
  page.failed = [];
  page.on("requestfailed", (r) => page.failed.push(`${r.method()} ${new URL(r.url()).pathname} ${r.failure()?.errorText}`));
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


// ---- waitFor: the filtered query (#filter, #run-query, #wait-outcome, #waits) ----

/** The data attributes of the `#waits` entry of query `seq` (1, 2, … in the page's order). */
export async function waiter(page, seq) {
  return page.locator(`#waits li[data-seq="${seq}"]`).evaluate((li) => ({ ...li.dataset, text: li.textContent }));
}

/** Waits until query `seq` has settled (not submitting or waiting); returns its attributes. */
export async function settled(page, seq, timeout = 20_000) {
  await page.waitForSelector(
    `#waits li[data-seq="${seq}"]:not([data-outcome="submitting"]):not([data-outcome="waiting"])`,
    { timeout, state: "attached" },
  );
  return waiter(page, seq);
}

/** Waits until query `seq` is awaited (or settled already); returns its attributes. */
async function submitted(page, seq) {
  await page.waitForSelector(`#waits li[data-seq="${seq}"]:not([data-outcome="submitting"])`, {
    timeout: 15_000,
    state: "attached",
  });
  return waiter(page, seq);
}

const queries = (page) => page.locator("#waits li").count();

/** Runs the filtered query with the current filter; returns its waiter's attributes once it waits. */
export async function runQuery(page) {
  const seq = (await queries(page)) + 1;
  await page.click("#run-query");
  return { seq, ...(await submitted(page, seq)) };
}

/** Picks a filter, which supersedes the running query; returns the new waiter's attributes. */
export async function setFilter(page, value) {
  const seq = (await queries(page)) + 1;
  await page.selectOption("#filter", value);
  return { seq, ...(await submitted(page, seq)) };
}
