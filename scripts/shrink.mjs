// Shrinks what wasm-pack wrote into pkg/ before it is packed (run by build.sh):
// - wasm-bindgen names each import and closure export with a 16-hex-digit hash
//   (`__wbg_getItem_49556a3e59cfb688`); hashes do not compress (about 2 KiB gzipped in all), so
//   each such name is shortened (`__wbg_getItem`, `__wbg_getItem_2`, ...) in the .wasm and in
//   every JS and .d.ts file beside it, which are the only places that name them;
// - each .wasm loses its `name` and `producers` custom sections (function names for
//   debuggers and the toolchain's versions: nothing the module needs to run);
// - each JavaScript file (the wasm-bindgen glue and the snippets) is minified by esbuild, as an
//   app's bundler would in production; the .d.ts files, which carry the documentation, stay as
//   they are.
// Prints what each file weighed before and after.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
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

function uleb(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Buffer.from(out);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const HASHED = /^(.*?)_h?[0-9a-f]{16}$/;

// Reads a name (length-prefixed UTF-8) at `at`: [name, next offset].
function name(bytes, at) {
  const [length, start] = leb(bytes, at);
  return [utf8.decode(bytes.subarray(start, start + length)), start + length];
}

const encodeName = (text) => {
  const bytes = Buffer.from(text, "utf8");
  return Buffer.concat([uleb(bytes.length), bytes]);
};

// The length in bytes of an import's description after its kind byte.
function importDescLength(bytes, kind, at) {
  const limits = (from) => {
    const flags = bytes[from];
    if (flags > 1) throw new Error(`unexpected limits flags ${flags}`);
    let next = leb(bytes, from + 1)[1];
    if (flags === 1) next = leb(bytes, next)[1];
    return next - at;
  };
  switch (kind) {
    case 0: // function: a type index
      return leb(bytes, at)[1] - at;
    case 1: // table: reference type, limits
      return limits(at + 1);
    case 2: // memory: limits
      return limits(at);
    case 3: // global: value type, mutability
      return 2;
    default:
      throw new Error(`unexpected import kind ${kind}`);
  }
}

// The module with its import and export names renamed by `rename` and the sections in
// DROPPED_SECTIONS left out.
export function rewrite(bytes, rename) {
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
    if (id === 0) {
      if (!DROPPED_SECTIONS.has(name(bytes, body)[0])) kept.push(bytes.subarray(at, end));
    } else if (id === 2 || id === 7) {
      // Imports: module, field, kind, description. Exports: field, kind, index.
      const [count, first] = leb(bytes, body);
      const parts = [uleb(count)];
      let p = first;
      for (let i = 0; i < count; i++) {
        if (id === 2) {
          const [module, afterModule] = name(bytes, p);
          parts.push(encodeName(module));
          p = afterModule;
        }
        const [field, afterField] = name(bytes, p);
        parts.push(encodeName(rename(field)));
        const kind = bytes[afterField];
        const length = id === 2 ? importDescLength(bytes, kind, afterField + 1) : leb(bytes, afterField + 1)[1] - afterField - 1;
        parts.push(bytes.subarray(afterField, afterField + 1 + length));
        p = afterField + 1 + length;
      }
      if (p !== end) throw new Error(`section ${id} not read to its end`);
      const content = Buffer.concat(parts);
      kept.push(Buffer.from([id]), uleb(content.length), content);
    } else {
      kept.push(bytes.subarray(at, end));
    }
    at = end;
  }
  return Buffer.concat(kept);
}

const escape = (text) => text.replace(/[$]/g, "\\$&");

// Shortens the hashed names of one module, in the module and in the files beside it.
async function shrinkModule(wasmPath) {
  const bytes = readFileSync(wasmPath);
  const renames = new Map();
  const taken = new Set();
  const rename = (field) => {
    const match = HASHED.exec(field);
    if (!match) return field;
    if (!renames.has(field)) {
      // `__wbg_` keeps every new name clear of the glue's own (and minified) identifiers.
      const stem = match[1].replace(/_+$/, "");
      const base = stem.startsWith("__wbg_") ? stem : `__wbg_${stem.slice(stem.lastIndexOf("_") + 1)}`;
      let candidate = base;
      for (let n = 2; taken.has(candidate); n++) candidate = `${base}_${n}`;
      taken.add(candidate);
      renames.set(field, candidate);
    }
    return renames.get(field);
  };
  // Names the module already has unhashed are taken too.
  rewrite(bytes, (field) => {
    if (!HASHED.test(field)) taken.add(field);
    return field;
  });
  const dir = dirname(wasmPath);
  const companions = readdirSync(dir)
    .filter((f) => f.endsWith(".js") || f.endsWith(".d.ts"))
    .map((f) => join(dir, f));
  // So are the glue's own `__wbg_` identifiers (`__wbg_init`, `__wbg_set_wasm`, ...).
  for (const path of companions) {
    for (const [word] of readFileSync(path, "utf8").matchAll(/__wbg_[\w$]*/g)) {
      if (!HASHED.test(word)) taken.add(word);
    }
  }
  const out = rewrite(bytes, rename);
  // Compiling it proves the result is still a valid module.
  await WebAssembly.compile(out);
  const seen = new Set();
  if (renames.size > 0) {
    const pattern = new RegExp(
      `(?<![\\w$])(${[...renames.keys()].map(escape).join("|")})(?![\\w$])`,
      "g",
    );
    for (const path of companions) {
      const text = readFileSync(path, "utf8");
      const renamed = text.replace(pattern, (old) => {
        seen.add(old);
        return renames.get(old);
      });
      if (renamed !== text) writeFileSync(path, renamed);
    }
  }
  const missing = [...renames.keys()].filter((old) => !seen.has(old));
  if (missing.length > 0) throw new Error(`not found beside ${wasmPath}: ${missing.join(", ")}`);
  writeFileSync(wasmPath, out);
  return out.length;
}

const sizes = new Map(files(pkg).map((path) => [path, statSync(path).size]));
const after = new Map();
for (const path of sizes.keys()) {
  if (path.endsWith(".wasm")) after.set(path, await shrinkModule(path));
}
for (const path of sizes.keys()) {
  if (!path.endsWith(".js")) continue;
  const { code } = transformSync(readFileSync(path, "utf8"), {
    format: "esm",
    minify: true,
    legalComments: "none",
  });
  writeFileSync(path, code);
  after.set(path, code.length);
}
for (const [path, size] of after) {
  console.log(`${String(sizes.get(path)).padStart(9)} -> ${String(size).padStart(9)}  ${relative(root, path)}`);
}
