// The Rust models and the package's TypeScript types agree: `examples/ts_samples.rs` writes
// what the core produces (records, cancel checks and outcomes, classifications, the session,
// storage status, stats) and values it accepts (metadata, events, sessions, options, task
// bodies), each as `<value> satisfies <Type>`, and `tsc --strict` checks them against the
// package's `.d.ts` (an undeclared field, a missing one or a wrong type fails).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OUT = "target/ts-agree/samples.ts";

test("each Rust model's values satisfy the TypeScript type the package gives it", () => {
  mkdirSync(`${ROOT}target/ts-agree`, { recursive: true });
  execFileSync("cargo", ["run", "--quiet", "--example", "ts_samples", "--", OUT, "../../js/index.js"], {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit"],
  });
  const samples = readFileSync(`${ROOT}${OUT}`, "utf8");
  assert.ok((samples.match(/ satisfies /g) ?? []).length >= 60, "the samples were written");
  // The settings of tests/types (strict, skipLibCheck off), on the written file.
  const config = JSON.parse(readFileSync(`${ROOT}tests/types/tsconfig.json`, "utf8"));
  config.files = ["samples.ts"];
  writeFileSync(`${ROOT}target/ts-agree/tsconfig.json`, JSON.stringify(config, null, 2));
  const args = [`${ROOT}node_modules/typescript/bin/tsc`, "-p", "target/ts-agree"];
  try {
    execFileSync(process.execPath, args, { cwd: ROOT, encoding: "utf8" });
  } catch (e) {
    assert.fail(`the Rust models and the TypeScript types disagree:\n${e.stdout}${e.stderr}`);
  }
});
