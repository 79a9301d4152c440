// Debian's Firefox ESR driven by geckodriver over WebDriver (the two `npm test` installs for the
// browser tests): opens a page and reads a value the page leaves, for the tests that must see
// Firefox's own behaviour (playwright-core drives only its own builds of Firefox).
import { spawn } from "node:child_process";
import { createServer } from "node:net";

const FIREFOX = process.env.FIREFOX_PATH ?? "/usr/bin/firefox-esr";

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Opens `url` in a fresh headless Firefox and returns `document.body.dataset[key]` once the
 * page has set it (or throws after `timeoutMs`). */
export async function firefoxDataset(url, key, timeoutMs = 30_000) {
  const port = await freePort();
  const driver = spawn("geckodriver", ["--host", "127.0.0.1", "--port", String(port)], { stdio: "ignore" });
  const call = async (method, path, body) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const { value } = await response.json();
    if (!response.ok) throw new Error(`geckodriver ${method} ${path}: ${JSON.stringify(value)}`);
    return value;
  };
  let session = null;
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await call("GET", "/status");
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const prefs = { "app.update.enabled": false, "network.captive-portal-service.enabled": false, "toolkit.telemetry.reportingpolicy.firstRun": false };
    const capabilities = { alwaysMatch: { browserName: "firefox", "moz:firefoxOptions": { binary: FIREFOX, args: ["-headless"], prefs } } };
    ({ sessionId: session } = await call("POST", "/session", { capabilities }));
    await call("POST", `/session/${session}/url`, { url });
    for (;;) {
      const script = "return document.body ? document.body.dataset[arguments[0]] ?? null : null";
      const value = await call("POST", `/session/${session}/execute/sync`, { script, args: [key] });
      if (value !== null) return value;
      if (Date.now() > deadline) throw new Error(`no data-${key} on ${url} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    if (session) await call("DELETE", `/session/${session}`).catch(() => {});
    driver.kill();
  }
}
