// `npm run bench`'s "before": the package as built at another commit (by default the last one
// before issue #49's work, b59869d; #43's was dca6fdf), in a git worktree under target/bench/before/, with its own
// scripts/build.sh, so that `bench/run.mjs compare=target/bench/before` measures it beside this
// checkout in one run. Built once per commit (a stamp file says which); `before=<rev>` picks
// another commit. Its cargo target folder is target/bench/before-target/, apart from this one's.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const BEFORE_43 = "dca6fdf";
export const BEFORE_49 = "b59869d";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const rev = process.argv.find((a) => a.startsWith("before="))?.slice(7) ?? BEFORE_49;
const dir = join(ROOT, "target", "bench", "before");
const stamp = join(dir, ".bench-built");
const git = (...args) => execFileSync("git", ["-C", ROOT, ...args], { encoding: "utf8" }).trim();

const sha = git("rev-parse", "--verify", `${rev}^{commit}`);
if (existsSync(stamp) && readFileSync(stamp, "utf8") === sha) {
  console.error(`before: ${rev} (${sha.slice(0, 7)}) already built in target/bench/before/`);
} else {
  if (existsSync(dir)) {
    try {
      git("worktree", "remove", "--force", dir);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git("worktree", "prune");
    }
  }
  git("worktree", "add", "--detach", "--force", dir, sha);
  // Its build needs the same tools (wasm-opt, esbuild, vite): this checkout's node_modules.
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  console.error(`before: building ${rev} (${sha.slice(0, 7)}) in target/bench/before/`);
  execFileSync("bash", ["scripts/build.sh"], {
    cwd: dir,
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, CARGO_TARGET_DIR: join(ROOT, "target", "bench", "before-target") },
  });
  writeFileSync(stamp, sha);
}
