// What the framework tests share: a front server (the reference server's API on the page's
// origin, everything else proxied to the framework's own server, websockets included, each HTML
// page sent under `script-src 'self' 'wasm-unsafe-eval'` plus the hashes of the framework's own
// inline scripts), the framework's server run as its CLI runs it, and the page's checks in
// headless Chromium.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, request } from "node:http";
import { connect } from "node:net";
import { spawn } from "node:child_process";

import { createApp } from "../../www/server.mjs";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function freePort() {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** The script-src a page gets: 'self', 'wasm-unsafe-eval' and its inline scripts' hashes. */
export function policyFor(html) {
  const hashes = [];
  for (const m of html.matchAll(/<script(\s[^>]*)?>([\s\S]*?)<\/script>/gi)) {
    const attrs = m[1] ?? "";
    if (/\ssrc=/i.test(attrs) || m[2] === "") continue;
    if (/type=["']?application\/(ld\+)?json/i.test(attrs)) continue; // data, not script
    hashes.push(`'sha256-${createHash("sha256").update(m[2]).digest("base64")}'`);
  }
  return `script-src 'self' 'wasm-unsafe-eval' ${hashes.join(" ")}`.trim();
}

/**
 * The front server on a free loopback port: the reference server (task contract) answers
 * `/api/`, `/login`, `/logout`; the rest goes to `target` (a port on 127.0.0.1). Resolves to
 * `{ url, api, close }`.
 */
export async function front(target) {
  const api = createApp({ contract: "task", jobDurationMs: 60_000 });
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://127.0.0.1").pathname;
    if (path.startsWith("/api/") || path === "/login" || path === "/logout") {
      api.handle(req, res).catch(() => res.writeHead(500).end());
      return;
    }
    const upstream = request(
      { host: "127.0.0.1", port: target, path: req.url, method: req.method, headers: { ...req.headers, "accept-encoding": "identity" } },
      (answer) => {
        const type = answer.headers["content-type"] ?? "";
        if (!/text\/html/i.test(type)) {
          res.writeHead(answer.statusCode, answer.headers);
          answer.pipe(res);
          return;
        }
        const chunks = [];
        answer.on("data", (c) => chunks.push(c));
        answer.on("end", () => {
          const body = Buffer.concat(chunks);
          const headers = { ...answer.headers, "content-security-policy": policyFor(body.toString("utf8")) };
          delete headers["content-length"];
          delete headers["transfer-encoding"];
          res.writeHead(answer.statusCode, headers);
          res.end(body);
        });
      },
    );
    upstream.on("error", () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  // A dev server's websocket (Vite's HMR), passed through as bytes.
  server.on("upgrade", (req, socket, head) => {
    const out = connect(target, "127.0.0.1", () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      out.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head?.length) out.write(head);
      out.pipe(socket);
      socket.pipe(out);
    });
    out.on("error", () => socket.destroy());
    socket.on("error", () => out.destroy());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    api,
    close: () => {
      api.stop();
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Runs `command args` in `cwd` (detached, its own process group) until `ready` matches its
 * output or its `port` answers `/` (below 500), then `fn()`; stops the group.
 */
export async function running({ command, args, cwd, env, ready, port, timeoutMs = 120_000 }, fn) {
  const child = spawn(command, args, { cwd, env: env ?? process.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (ready && ready.test(output)) break;
      if (port && (await answers(port))) break;
      if (Date.now() > deadline || child.exitCode !== null) assert.fail(`${command} ${args.join(" ")} did not start:\n${output.slice(-3000)}`);
      await sleep(200);
    }
    return await fn();
  } catch (e) {
    e.message += `\n--- ${command} ${args.join(" ")} said:\n${output.slice(-3000)}`;
    throw e;
  } finally {
    try {
      process.kill(-child.pid);
    } catch {
      // already gone
    }
  }
}

async function answers(port) {
  return new Promise((resolve) => {
    // A server still starting may listen already and answer 503 (nuxt dev): not yet.
    const req = request({ host: "127.0.0.1", port, path: "/", method: "GET", timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode < 500);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}

/**
 * The page's whole life in Chromium: its HTML (server-rendered with no guard where `ssr`), the
 * module loaded, sign in, a 202 recorded and shown, its wait aborted (the cancel sent, its
 * outcome read through guard.cancel), a chart's rows through the binding, a logout that shows
 * nothing. No console error, no failed request, the .wasm answered as application/wasm.
 */
export async function checkPage(browser, url, api, { ssr = false, warm = false } = {}) {
  if (warm) {
    // A dev server's first visit: Vite finds dependencies at run time (Nuxt's plugins, its
    // devtools), optimizes them again and answers the old ones 504 until the page reloads. Its
    // business, not the guard's: the checks run on the next visit.
    const first = await browser.newContext();
    const page = await first.newPage();
    await page.goto(url).catch(() => {});
    await page.waitForSelector('#sjg[data-guard="yes"]', { timeout: 60_000 }).catch(() => {});
    await page.waitForLoadState("networkidle").catch(() => {});
    await first.close();
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  const wasm = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && errors.push(`console: ${m.text()}`));
  page.on("response", (r) => {
    if (r.url().endsWith(".wasm")) wasm.push(`${r.status()} ${r.headers()["content-type"]} ${new URL(r.url()).pathname}`);
    if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) errors.push(`${r.status()} ${r.url()}`);
  });
  try {
    const response = await page.goto(url);
    assert.equal(response.status(), 200);
    const csp = response.headers()["content-security-policy"];
    assert.match(csp, /^script-src 'self' 'wasm-unsafe-eval'/);
    if (ssr) assert.match(await response.text(), /data-guard="no"/, "server-rendered, with no guard");
    await page.waitForSelector('#sjg[data-guard="yes"]', { timeout: 60_000 });
    await page.click("#signin");
    await page.waitForSelector('#sjg[data-user="1"]');
    await page.click("#record");
    await page.waitForSelector('#jobs li[data-status]');
    await page.waitForSelector('#sjg[data-waiting="true"]');
    const task = await page.textContent("#jobs li");
    await page.click("#abort");
    await page.waitForSelector('#sjg:not([data-cancel=""])');
    const cancel = await page.getAttribute("#sjg", "data-cancel");
    assert.ok(["cancelled", "left"].includes(cancel), `the abort's cancel: ${cancel}`);
    assert.equal(api.cancelRequests(task.trim()).length, 1, "one cancel request for the aborted wait");
    await page.click("#chart");
    await page.waitForSelector('#sjg:not([data-rows="0"])', { timeout: 30_000 });
    assert.ok(Number(await page.getAttribute("#sjg", "data-rows")) > 0);
    await page.click("#logout");
    await page.waitForSelector('#sjg[data-user=""]');
    assert.equal(await page.locator("#jobs li").count(), 0, "nothing shown after the logout");
    assert.equal(await page.getAttribute("#sjg", "data-error"), "");
    assert.ok(wasm.length > 0 && wasm.every((w) => /^200 application\/wasm/.test(w)), `the .wasm: ${wasm}`);
    assert.deepEqual(errors, []);
  } catch (e) {
    if (errors.length) e.message += `\n--- the page's errors:\n${errors.join("\n")}`;
    throw e;
  } finally {
    await context.close();
  }
}
