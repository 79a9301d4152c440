// Builds the React demo for the app start-up bench (bench/app-startup.mjs) with Vite, twice:
// target/bench-app/guard (the package: js/index.js and pkg/, the `.wasm` preloaded from the
// page's HTML as the README says), target/bench-app/compare (another build's, when asked) and target/bench-app/baseline (the package's name aliased to
// bench/app/shim.js, the plain-JS stand-in; no `.wasm`). The same entry (bench/app/main.jsx:
// www/react's App and setup.js, unchanged, with a probe) and js/react.js in both, one chunk
// each, React's production build.
import { build } from "vite";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { readFileSync } from "node:fs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const OUT = join(ROOT, "target", "bench-app");

/** Puts `<link rel="preload" … as="fetch" type="application/wasm" crossorigin>` for the emitted
 * `.wasm` in the page (the URL init() fetches, hash and all), or nothing without one. */
const wasmPreload = {
  name: "wasm-preload",
  transformIndexHtml: {
    order: "post",
    handler(html, ctx) {
      const wasm = Object.values(ctx.bundle ?? {}).find((f) => f.fileName.endsWith(".wasm"));
      const link = wasm
        ? `<link rel="preload" href="${ctx.server ? "" : "./"}${wasm.fileName}" as="fetch" type="application/wasm" crossorigin>`
        : "";
      return html.replace("<!--wasm-preload-->", link);
    },
  },
};

/** `variant`: "guard", "baseline", or "compare" (the package's js/ and pkg/ under `folder`: another
 * build of it, say the commit before a change, bundled the same way). */
export async function buildApp(variant, folder = ROOT) {
  // The package's entry as its package.json names it (pkg/index.js since issue #43).
  const entry = () => JSON.parse(readFileSync(join(folder, "package.json"), "utf8")).exports["."].default;
  const pkg = variant === "baseline" ? join(ROOT, "bench", "app", "shim.js") : join(folder, entry());
  await build({
    root: join(ROOT, "bench", "app"),
    base: "./",
    logLevel: "warn",
    configFile: false,
    mode: "production",
    esbuild: { jsx: "automatic" },
    plugins: [wasmPreload],
    resolve: {
      // One React, this checkout's, also for a compare folder's js/react.js.
      dedupe: ["react", "react-dom"],
      alias: [
        { find: /^superset-job-guard\/react$/, replacement: join(variant === "baseline" ? ROOT : folder, "js", "react.js") },
        { find: /^superset-job-guard$/, replacement: pkg },
      ],
    },
    build: {
      outDir: join(OUT, variant),
      emptyOutDir: true,
      target: "es2022",
      // The .wasm as a file of its own, never inlined.
      assetsInlineLimit: 0,
      rollupOptions: { output: { inlineDynamicImports: true } },
    },
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const variant of ["guard", "baseline"]) await buildApp(variant);
  console.log(`built: ${OUT}/{guard,baseline}`);
}
