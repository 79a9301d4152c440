// The changes each framework test makes to the app its create command made.
import assert from "node:assert/strict";
import { copyFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = fileURLToPath(new URL(".", import.meta.url));

/** `ng new --ssr`'s app: the check page, the guard in the app's providers, the README's assets
 * line, the front server's host allowed, and its server bound to 127.0.0.1 (the machine's rule;
 * it listens on every address). */
export async function prepareAngular(dir) {
  await copyFile(join(HERE, "angular", "app.ts"), join(dir, "src", "app", "app.ts"));
  for (const file of ["actions.js", "actions.d.ts"]) await copyFile(join(HERE, file), join(dir, "src", "app", file));
  const configFile = join(dir, "src", "app", "app.config.ts");
  let config = await readFile(configFile, "utf8");
  assert.match(config, /providers: \[/);
  config =
    'import { provideJobGuard } from "superset-job-guard/angular";\nimport { csrfFetch } from "./actions.js";\nimport { TAB } from "./app";\n' +
    config.replace("providers: [", 'providers: [\n    provideJobGuard({ contract: "task", tabId: TAB, fetch: csrfFetch }),');
  await writeFile(configFile, config);
  const workspace = JSON.parse(await readFile(join(dir, "angular.json"), "utf8"));
  const options = workspace.projects[Object.keys(workspace.projects)[0]].architect.build.options;
  options.assets.push({ glob: "superset_job_guard_bg.wasm", input: "node_modules/superset-job-guard/pkg", output: "pkg" });
  // Its SSR server answers 400 to a host it was not told of (the front server's, 127.0.0.1), as
  // it would behind any proxy: the deployment's setting, nothing of the guard's.
  options.security = { ...options.security, allowedHosts: ["127.0.0.1"] };
  await writeFile(join(dir, "angular.json"), JSON.stringify(workspace, null, 2));
  const serverFile = join(dir, "src", "server.ts");
  const server = await readFile(serverFile, "utf8");
  assert.match(server, /app\.listen\(port, /);
  await writeFile(serverFile, server.replace("app.listen(port, ", "app.listen(Number(port), '127.0.0.1', "));
}
