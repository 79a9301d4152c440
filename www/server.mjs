// Serves the demo page (www/) and the built package (pkg/) on 127.0.0.1, Node's standard
// library only. PORT picks the port (default 8080; 0 picks a free one).
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MOUNTS = [
  ["/pkg/", join(ROOT, "pkg")],
  ["/", join(ROOT, "www")],
];
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json; charset=utf-8",
  ".ts": "text/plain; charset=utf-8",
  ".png": "image/png",
};

/** The file a URL path names, or null when it is outside the served folders. */
export function resolveStatic(pathname) {
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (decoded.includes("\0")) return null;
  for (const [prefix, dir] of MOUNTS) {
    if (!decoded.startsWith(prefix)) continue;
    let rel = decoded.slice(prefix.length);
    if (rel === "" || rel.endsWith("/")) rel += "index.html";
    const file = normalize(join(dir, rel));
    return file.startsWith(dir + sep) ? file : null;
  }
  return null;
}

async function serveStatic(req, res) {
  const { pathname } = new URL(req.url, "http://localhost");
  const file = resolveStatic(pathname);
  if (!file || (req.method !== "GET" && req.method !== "HEAD")) {
    res.writeHead(file ? 405 : 404, { "content-type": "text/plain" }).end(file ? "Method not allowed" : "Not found");
    return;
  }
  try {
    const body = await readFile(file);
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    res.end(req.method === "HEAD" ? undefined : body);
  } catch {
    res.writeHead(404, { "content-type": "text/plain" }).end("Not found");
  }
}

/** Starts the server; resolves to { server, url } once it listens. */
export function start({ port = 8080, host = "127.0.0.1" } = {}) {
  const server = createServer((req, res) => {
    serveStatic(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      resolve({ server, url: `http://${host}:${actual}/` });
    });
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number.parseInt(process.env.PORT ?? "8080", 10);
  const { url } = await start({ port: Number.isNaN(port) ? 8080 : port });
  console.log(`superset-job-guard demo: ${url}`);
}
