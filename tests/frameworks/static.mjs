// A static file server for a production build's folder (`node static.mjs DIR PORT`), as a host
// serves one: the .wasm as application/wasm, an unknown path answered with the app's
// index.html (a single-page app's fallback).
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";

const [dir, port] = process.argv.slice(2);
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".wasm": "application/wasm", ".json": "application/json", ".ico": "image/x-icon", ".svg": "image/svg+xml" };

createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, "http://127.0.0.1").pathname);
  const file = normalize(join(dir, path.endsWith("/") ? `${path}index.html` : path));
  if (!file.startsWith(normalize(dir) + sep)) return res.writeHead(404).end();
  try {
    const body = await readFile(file);
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
  } catch {
    if (extname(path)) return res.writeHead(404).end();
    try {
      res.writeHead(200, { "content-type": "text/html" }).end(await readFile(join(dir, "index.html")));
    } catch {
      res.writeHead(404).end();
    }
  }
}).listen(Number(port), "127.0.0.1");
