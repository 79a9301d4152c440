// Builds the React dashboard (www/react/) with Vite into target/www-react/, which
// `npm start` serves under /react/. The package is this repository's own entries.
import { build } from "vite";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
await build({
  root: join(ROOT, "www", "react"),
  base: "/react/",
  logLevel: "warn",
  configFile: false,
  esbuild: { jsx: "automatic" },
  resolve: {
    alias: [
      { find: /^superset-job-guard\/react$/, replacement: join(ROOT, "js", "react.js") },
      { find: /^superset-job-guard$/, replacement: join(ROOT, "js", "index.js") },
    ],
  },
  build: { outDir: join(ROOT, "target", "www-react"), emptyOutDir: true, target: "es2022" },
});
console.log("React dashboard: target/www-react/");
