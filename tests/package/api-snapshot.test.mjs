// The package's TypeScript API as a committed snapshot (tsify's habit): the declarations the
// build writes (pkg/superset_job_guard.d.ts, from the Rust types) and the entries' own
// (js/index.d.ts, js/react.d.ts, and the bindings' js/stores.d.ts, js/vue.d.ts, js/svelte.d.ts, js/angular.d.ts). A change to any of them fails here until the snapshot is
// written again (`UPDATE_API_SNAPSHOT=1 node --test tests/package/api-snapshot.test.mjs`), so
// an API change shows in the diff.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FILES = ["pkg/superset_job_guard.d.ts", "js/index.d.ts", "js/react.d.ts", "js/stores.d.ts", "js/vue.d.ts", "js/svelte.d.ts", "js/angular.d.ts"];
const SNAPSHOT = `${ROOT}tests/package/snapshot/api.d.ts`;

function current() {
  return FILES.map((f) => `// ---- ${f}\n${readFileSync(`${ROOT}${f}`, "utf8").trimEnd()}\n`).join("\n");
}

test("the package's TypeScript API is the committed snapshot", () => {
  const now = current();
  if (process.env.UPDATE_API_SNAPSHOT === "1") writeFileSync(SNAPSHOT, now);
  const committed = readFileSync(SNAPSHOT, "utf8");
  const [a, b] = [committed.split("\n"), now.split("\n")];
  const at = a.findIndex((line, i) => line !== b[i]);
  assert.equal(
    now,
    committed,
    `the API changed at line ${at + 1} (snapshot: ${JSON.stringify(a[at])}, now: ${JSON.stringify(b[at])}): ` +
      "if that is meant, write the snapshot again (UPDATE_API_SNAPSHOT=1) and commit it",
  );
});
