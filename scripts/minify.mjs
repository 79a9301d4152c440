// Minifies the JavaScript wasm-pack wrote (the wasm-bindgen glue and the snippets under
// pkg/snippets/), as an app's production build would: esbuild, ES modules, no comments. The
// .d.ts files keep their documentation; the .wasm is left as the compiler made it.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build, transformSync } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = join(root, "pkg");

// The ES-module build only: pkg/node/ (CommonJS, for Node) is scripts/node-build.mjs's.
const scripts = readdirSync(pkg, { recursive: true })
  .map(String)
  // (pkg/index.js, the single-file entry below, is written after this loop from js/index.js.)
  .filter((f) => f.endsWith(".js") && !f.startsWith("node/") && f !== "index.js")
  .map((f) => join(pkg, f));

for (const path of scripts) {
  const source = readFileSync(path, "utf8");
  const { code } = transformSync(source, { format: "esm", minify: true, legalComments: "none" });
  writeFileSync(path, code);
  console.log(`${String(source.length).padStart(9)} -> ${String(code.length).padStart(9)}  ${relative(root, path)}`);
}

// The single-file entry, pkg/index.js: js/index.js with freeable.js, the glue and its snippets
// in one minified ES module, so that a page that serves the package's files as they are loads
// one module instead of three in a row (entry, glue, snippets). It lives beside the .wasm, so
// the URLs it makes with `import.meta.url` (`../pkg/superset_job_guard_bg.wasm` and the glue's
// `superset_job_guard_bg.wasm`) still name that file, where bundlers find it.
// Its first line is V8's explicit compile hint (Chrome 136 and later): the whole file is
// compiled while it loads, not function by function on the first calls. Those first calls
// (construct and `login`, each reaching a few dozen of the glue's functions) came out about
// 2 ms faster in Chromium, with the import no slower (docs/measurements.md). Other engines
// and bundlers read it as a comment.
const entry = join(pkg, "index.js");
await build({
  entryPoints: [join(root, "js", "index.js")],
  bundle: true,
  format: "esm",
  minify: true,
  legalComments: "none",
  banner: { js: "//# allFunctionsCalledOnLoad" },
  outfile: entry,
  logLevel: "error", // not the glue's duplicate import-object key (wasm-bindgen writes one per extern block)
});
console.log(`${" ".repeat(9)} -> ${String(readFileSync(entry).length).padStart(9)}  ${relative(root, entry)} (js/index.js, one file)`);
