// Shrinks what wasm-pack wrote into pkg/ before it is packed (run by build.sh):
// - each .wasm loses its `name` and `producers` custom sections (function names for
//   debuggers and the toolchain's versions: nothing the module needs to run);
// - each JavaScript file (the wasm-bindgen glue and the snippets) is minified by esbuild, as an
//   app's bundler would in production; the .d.ts files, which carry the documentation, stay as
//   they are.
// Prints what each file weighed before and after.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = join(root, "pkg");
const DROPPED_SECTIONS = new Set(["name", "producers"]);

function files(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

// An unsigned LEB128 number at `at`: [value, next offset].
function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, at];
  }
}

export function stripSections(bytes) {
  const magic = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (bytes.length < 8 || magic.some((b, i) => bytes[i] !== b)) {
    throw new Error("not a wasm module (version 1)");
  }
  const kept = [bytes.subarray(0, 8)];
  let at = 8;
  while (at < bytes.length) {
    const id = bytes[at];
    const [size, body] = leb(bytes, at + 1);
    const end = body + size;
    if (end > bytes.length) throw new Error("truncated section");
    let drop = false;
    if (id === 0) {
      const [nameLength, nameAt] = leb(bytes, body);
      const name = new TextDecoder().decode(bytes.subarray(nameAt, nameAt + nameLength));
      drop = DROPPED_SECTIONS.has(name);
    }
    if (!drop) kept.push(bytes.subarray(at, end));
    at = end;
  }
  return Buffer.concat(kept);
}

for (const path of files(pkg)) {
  const before = statSync(path).size;
  let after;
  if (path.endsWith(".wasm")) {
    const out = stripSections(readFileSync(path));
    // Compiling it proves the result is still a valid module.
    await WebAssembly.compile(out);
    writeFileSync(path, out);
    after = out.length;
  } else if (path.endsWith(".js")) {
    const { code } = transformSync(readFileSync(path, "utf8"), {
      format: "esm",
      minify: true,
      legalComments: "none",
    });
    writeFileSync(path, code);
    after = code.length;
  } else {
    continue;
  }
  console.log(`${String(before).padStart(9)} -> ${String(after).padStart(9)}  ${relative(root, path)}`);
}
