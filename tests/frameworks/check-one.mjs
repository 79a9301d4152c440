// By hand, while working on one framework: `node tests/frameworks/check-one.mjs DIR [ssr] --
// COMMAND ARGS…` runs COMMAND in DIR ("{port}" in ARGS or $PORT is its port), puts the front
// server before it and runs the page's checks in Chromium once.
import { launch } from "../e2e/browser.mjs";
import { checkPage, freePort, front, running } from "./harness.mjs";

const at = process.argv.indexOf("--");
const [dir, ssr] = process.argv.slice(2, at);
const [command, ...args] = process.argv.slice(at + 1);
const port = await freePort();
const browser = await launch();
try {
  await running(
    { command, args: args.map((a) => a.replace("{port}", String(port))), cwd: dir, env: { ...process.env, PORT: String(port), HOST: "127.0.0.1" }, port, timeoutMs: 240_000 },
    async () => {
      const f = await front(port);
      try {
        await checkPage(browser, f.url, f.api, { ssr: ssr === "ssr" });
        console.log("checks: ok");
      } finally {
        await f.close();
      }
    },
  );
} finally {
  await browser.close();
}
