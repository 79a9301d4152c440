// Minifies the JavaScript wasm-pack wrote (the wasm-bindgen glue and the snippets under
// pkg/snippets/), as an app's production build would: esbuild, ES modules, no comments. The
// .d.ts files keep their documentation; the .wasm is left as the compiler made it.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = join(root, "pkg");

// The ES-module build only: pkg/node/ (CommonJS, for Node) is scripts/node-build.mjs's.
const scripts = readdirSync(pkg, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith(".js") && !f.startsWith("node/"))
  .map((f) => join(pkg, f));

for (const path of scripts) {
  const source = readFileSync(path, "utf8");
  const { code } = transformSync(source, { format: "esm", minify: true, legalComments: "none" });
  writeFileSync(path, code);
  console.log(`${String(source.length).padStart(9)} -> ${String(code.length).padStart(9)}  ${relative(root, path)}`);
}
