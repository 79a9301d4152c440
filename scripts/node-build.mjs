// The CommonJS build for `require` (Node, Jest): wasm-pack's `--target nodejs` output in
// pkg/node/, which reads the .wasm from disk synchronously, and the React entry beside it. wasm-bindgen copies the shell's JS
// snippets (src/web/*.js, ES modules) as they are and `require`s them: they are turned into
// CommonJS here, and js/freeable.js beside them, so that Node 18 and Jest (which does not load
// ES modules from node_modules) can load the build.
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = join(root, "pkg", "node");
const cjs = (path, to = path) => {
  const { code } = transformSync(readFileSync(path, "utf8"), { format: "cjs", minify: true, legalComments: "none" });
  writeFileSync(to, code);
  console.log(`CommonJS: ${relative(root, to)}`);
};
for (const f of readdirSync(join(out, "snippets"), { recursive: true }).map(String)) {
  if (f.endsWith(".js")) cjs(join(out, "snippets", f));
}
cjs(join(root, "js", "freeable.js"), join(out, "freeable.js"));
// superset-job-guard/react under `require` (Jest tests of components, server rendering): the
// same file as CommonJS, whose `require("superset-job-guard")` gets this build; its types are
// the ES entry's declarations as a .d.cts, which TypeScript reads as CommonJS.
cjs(join(root, "js", "react.js"), join(out, "react.js"));
cjs(join(root, "js", "stores.js"), join(out, "stores.js")); // what react.js takes its input keys from
copyFileSync(join(root, "js", "react.d.ts"), join(out, "react.d.cts"));
// Its own package.json says nothing of a module type: the folder's .js files are CommonJS.
writeFileSync(join(out, "package.json"), JSON.stringify({ type: "commonjs" }) + "\n");
