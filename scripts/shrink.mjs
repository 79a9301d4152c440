// Shrinks what wasm-pack wrote into pkg/ before it is packed (run by build.sh):
// - wasm-bindgen names each import and closure export with a 16-hex-digit hash
//   (`__wbg_getItem_49556a3e59cfb688`); hashes do not compress (about 2 KiB gzipped in all), so
//   each such name is shortened (`__wbg_getItem`, `__wbg_getItem_2`, ...) in the .wasm and in
//   every JS and .d.ts file beside it, which are the only places that name them;
// - functions the module can never run get a body that traps (see `trappedFunctions`:
//   closure shims wasm-bindgen left in the function table, and `core::fmt` when nothing
//   formats); finding them needs the function names, which is why Cargo.toml keeps symbols;
// - in the ES-module build, whose glue passes the imports as an object, the import module
//   name (`./superset_job_guard_bg.js`, repeated for each of the ~60 imports) becomes `w`;
//   the bundler build keeps it: there it is the file the bundler resolves;
// - each .wasm loses its `name`, `producers` and `target_features` custom sections (function
//   names for debuggers, the toolchain's versions, the features it was built with: nothing
//   the module needs to run);
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
const DROPPED_SECTIONS = new Set(["name", "producers", "target_features"]);

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

// The module's sections: [{ id, at, body, end }] (`body`: where the content starts).
function sections(bytes) {
  const magic = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (bytes.length < 8 || magic.some((b, i) => bytes[i] !== b)) {
    throw new Error("not a wasm module (version 1)");
  }
  const out = [];
  let at = 8;
  while (at < bytes.length) {
    const [size, body] = leb(bytes, at + 1);
    const end = body + size;
    if (end > bytes.length) throw new Error("truncated section");
    out.push({ id: bytes[at], at, body, end });
    at = end;
  }
  return out;
}

// Imports ({ module, field, kind, desc }) and exports ({ field, kind, desc, index }), with
// `desc` the bytes from the kind on.
function entries(bytes, section) {
  const [count, first] = leb(bytes, section.body);
  const out = [];
  let p = first;
  for (let i = 0; i < count; i++) {
    let module;
    if (section.id === 2) [module, p] = name(bytes, p);
    const [field, afterField] = name(bytes, p);
    const kind = bytes[afterField];
    const length =
      section.id === 2
        ? importDescLength(bytes, kind, afterField + 1)
        : leb(bytes, afterField + 1)[1] - afterField - 1;
    const index = section.id === 7 ? leb(bytes, afterField + 1)[0] : undefined;
    out.push({ module, field, kind, index, desc: bytes.subarray(afterField, afterField + 1 + length) });
    p = afterField + 1 + length;
  }
  if (p !== section.end) throw new Error(`section ${section.id} not read to its end`);
  return out;
}

// Function names from the `name` section (by index; empty without one).
function functionNames(bytes, section) {
  const names = new Map();
  if (!section) return names;
  let p = name(bytes, section.body)[1];
  while (p < section.end) {
    const sub = bytes[p];
    const [size, start] = leb(bytes, p + 1);
    if (sub === 1) {
      let [count, q] = leb(bytes, start);
      for (let i = 0; i < count; i++) {
        let index;
        [index, q] = leb(bytes, q);
        let text;
        [text, q] = name(bytes, q);
        names.set(index, text);
      }
    }
    p = start + size;
  }
  return names;
}

// The function bodies of the code section, without their size prefixes.
function bodies(bytes, section) {
  const [count, first] = leb(bytes, section.body);
  const out = [];
  let p = first;
  for (let i = 0; i < count; i++) {
    const [size, start] = leb(bytes, p);
    out.push(bytes.subarray(start, start + size));
    p = start + size;
  }
  if (p !== section.end) throw new Error("code section not read to its end");
  return out;
}

// No locals; `unreachable`; `end`.
const TRAP_BODY = Buffer.from([0x00, 0x00, 0x0b]);

// The functions one body calls (`call`, `return_call`) or takes as a value (`ref.func`),
// found by decoding its instructions. Throws on an instruction it does not know (SIMD,
// threads, ...), so that nothing is emptied on a guess.
function references(body) {
  const out = new Set();
  let p = 0;
  const u32 = () => {
    const [value, next] = leb(body, p);
    p = next;
    return value;
  };
  const skipLeb = () => {
    while (body[p++] & 0x80);
  };
  for (let groups = u32(); groups > 0; groups--) {
    u32();
    p++; // the locals' type
  }
  while (p < body.length) {
    const op = body[p++];
    if (op === 0x02 || op === 0x03 || op === 0x04) {
      // A block type: empty (0x40), a value type (one byte), or a type index (s33).
      if (body[p] === 0x40 || (body[p] >= 0x6f && body[p] <= 0x7f)) p++;
      else skipLeb();
    } else if (op === 0x0c || op === 0x0d || (op >= 0x20 && op <= 0x26) || op === 0x3f || op === 0x40) {
      u32();
    } else if (op === 0x0e) {
      for (let n = u32() + 1; n > 0; n--) u32();
    } else if (op === 0x10 || op === 0x12 || op === 0xd2) {
      out.add(u32());
    } else if (op === 0x11 || op === 0x13) {
      u32();
      u32();
    } else if (op === 0x1c) {
      p += u32();
    } else if (op >= 0x28 && op <= 0x3e) {
      u32(); // align (memory index with bit 6: not used here)
      u32(); // offset
    } else if (op === 0x41 || op === 0x42) {
      skipLeb();
    } else if (op === 0x43) {
      p += 4;
    } else if (op === 0x44) {
      p += 8;
    } else if (op === 0xd0) {
      p++;
    } else if (op === 0xfc) {
      const sub = u32();
      const immediates = [0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 2, 1, 2, 1, 2, 1, 1, 1][sub];
      if (immediates === undefined) throw new Error(`unknown instruction 0xfc ${sub}`);
      for (let n = immediates; n > 0; n--) u32();
    } else if (
      !(op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x1a || op === 0x1b) &&
      !(op >= 0x45 && op <= 0xc4) &&
      op !== 0xd1
    ) {
      throw new Error(`unknown instruction 0x${op.toString(16)}`);
    }
  }
  if (p !== body.length || body[p - 1] !== 0x0b) throw new Error("a body not read to its end");
  return out;
}

// Function indices whose bodies can never run. Roots: the exports, the start function and the
// function table (`elements`), less two kinds of table entries known by name to be dead:
// - closure call shims (`wasm_bindgen::convert::closures::_::invoke`) that no export leads to:
//   their only use was a descriptor that wasm-bindgen read and removed, but the table still
//   holds them (JS calls the live ones through exports);
// - `core::fmt` when nothing formats (no `core::fmt::write`, `alloc::fmt::format` or
//   `Formatter::new` in the module): without std the panic handler traps without formatting,
//   so the `Display` code that panic sites point to is never called.
// Everything not reached from the roots through calls and `ref.func` is emptied.
function trappedFunctions(names, imported, exports, code, start, elements) {
  if (names.size === 0) return new Set();
  const base = (text) => text.replace(/( externref shim| multivalue shim)+$/, "");
  const exported = exports.filter((e) => e.kind === 0).map((e) => e.index);
  const reachedByExport = new Set(exported.map((i) => base(names.get(i) ?? "")));
  // Anything that drives formatting: `core::fmt::write`, `alloc::fmt::format`, a new Formatter.
  const formats = [...names.values()].some((n) => /::fmt::(write|format)\b|Formatter>::new\b/.test(n));
  const dead = (index) => {
    const text = names.get(index) ?? "";
    const shim = /::closures::_::invoke::h[0-9a-f]{16}$/.test(base(text)) && !reachedByExport.has(base(text));
    const fmt = !formats && (/::fmt::/.test(text) || /::str::count::do_count_chars$/.test(text));
    return shim || fmt;
  };
  let calls;
  try {
    calls = code.map(references);
  } catch (e) {
    console.log(`not emptying any function: ${e.message}`);
    return new Set();
  }
  const reached = new Set();
  const stack = [...exported, ...elements.filter((i) => !dead(i))];
  if (start !== undefined) stack.push(start);
  while (stack.length > 0) {
    const index = stack.pop();
    if (reached.has(index)) continue;
    reached.add(index);
    if (index >= imported) stack.push(...(calls[index - imported] ?? []));
  }
  const out = new Set();
  for (let i = 0; i < code.length; i++) {
    if (!reached.has(i + imported) && code[i].length > TRAP_BODY.length) out.add(i + imported);
  }
  // Checked, not assumed: nothing kept calls or refers to an emptied function.
  for (let i = 0; i < code.length; i++) {
    if (out.has(i + imported)) continue;
    for (const callee of calls[i]) {
      if (out.has(callee)) throw new Error(`${names.get(i + imported)} calls emptied ${names.get(callee)}`);
    }
  }
  if (process.env.SHRINK_VERBOSE) {
    for (const i of out) console.log(`  emptied ${names.get(i) ?? i} (${code[i - imported].length} bytes)`);
  }
  return out;
}

// The function indices the element section puts in tables (active, passive or declared
// segments, as function indices or as `ref.func` expressions).
function elementFunctions(bytes, section) {
  const out = [];
  if (!section) return out;
  let p = section.body;
  const u32 = () => {
    const [value, next] = leb(bytes, p);
    p = next;
    return value;
  };
  const expr = () => {
    // A constant expression: collect `ref.func`, skip the rest up to `end`.
    for (;;) {
      const op = bytes[p++];
      if (op === 0x0b) return;
      if (op === 0xd2) out.push(u32());
      else if (op === 0x41 || op === 0x42 || op === 0x23) u32();
      else if (op === 0xd0) p++;
      else throw new Error(`unknown constant instruction 0x${op.toString(16)}`);
    }
  };
  for (let count = u32(); count > 0; count--) {
    // Flags 0-7: bit 0 passive or declarative (else active), bit 1 an explicit table index
    // (active) or declarative, bit 2 expressions instead of function indices.
    const flags = u32();
    if (!(flags & 1)) {
      if (flags & 2) u32(); // table index
      expr(); // offset
    }
    if (flags & 3) p++; // element kind (0x00) or reference type
    const n = u32();
    for (let i = 0; i < n; i++) {
      if (flags & 4) expr();
      else out.push(u32());
    }
  }
  return out;
}

// The module with its import and export names renamed by `rename`, the sections in
// DROPPED_SECTIONS left out, and the bodies of functions that can never run replaced by a trap.
// Returns [bytes, how many bodies were replaced].
export function rewrite(bytes, rename, renameModule = (module) => module) {
  const list = sections(bytes);
  const find = (id, custom) =>
    list.find((s) => s.id === id && (custom === undefined || name(bytes, s.body)[0] === custom));
  const importSection = find(2);
  const imports = importSection ? entries(bytes, importSection) : [];
  const exportSection = find(7);
  const exports = exportSection ? entries(bytes, exportSection) : [];
  const startSection = find(8);
  const start = startSection ? leb(bytes, startSection.body)[0] : undefined;
  const imported = imports.filter((i) => i.kind === 0).length;
  const codeSection = find(10);
  const code = codeSection ? bodies(bytes, codeSection) : [];
  const trapped = trappedFunctions(
    functionNames(bytes, find(0, "name")),
    imported,
    exports,
    code,
    start,
    elementFunctions(bytes, find(9)),
  );

  const kept = [bytes.subarray(0, 8)];
  const section = (id, parts) => {
    const content = Buffer.concat(parts);
    kept.push(Buffer.from([id]), uleb(content.length), content);
  };
  for (const s of list) {
    if (s.id === 0 && DROPPED_SECTIONS.has(name(bytes, s.body)[0])) continue;
    if (s.id === 2) {
      section(2, [uleb(imports.length), ...imports.flatMap((i) => [encodeName(renameModule(i.module)), encodeName(rename(i.field)), i.desc])]);
    } else if (s.id === 7) {
      section(7, [uleb(exports.length), ...exports.flatMap((e) => [encodeName(rename(e.field)), e.desc])]);
    } else if (s.id === 10 && trapped.size > 0) {
      const out = code.map((body, i) => (trapped.has(i + imported) ? TRAP_BODY : body));
      section(10, [uleb(out.length), ...out.flatMap((body) => [uleb(body.length), body])]);
    } else {
      kept.push(bytes.subarray(s.at, s.end));
    }
  }
  return [Buffer.concat(kept), trapped.size];
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
  const named = sections(bytes).filter((s) => s.id === 2 || s.id === 7).flatMap((s) => entries(bytes, s));
  // Names the module already has unhashed are taken too.
  for (const { field } of named) if (!HASHED.test(field)) taken.add(field);
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
  // The import module name, where the glue only uses it as the key of its imports object.
  const modules = new Set(named.filter((e) => e.module !== undefined).map((e) => e.module));
  const glue = companions.filter((path) => path.endsWith(".js")).map((path) => readFileSync(path, "utf8"));
  const count = (text, part) => text.split(part).length - 1;
  const keyOnly = (module) => {
    const quoted = JSON.stringify(module);
    const uses = glue.reduce((n, text) => n + count(text, quoted), 0);
    return uses > 0 && uses === glue.reduce((n, text) => n + count(text, `${quoted}:`), 0);
  };
  const shortModule = modules.size === 1 && !modules.has("w") && keyOnly([...modules][0]) ? [...modules][0] : undefined;
  const [out, trapped] = rewrite(bytes, rename, (module) => (module === shortModule ? "w" : module));
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
  if (shortModule !== undefined) {
    for (const path of companions.filter((p) => p.endsWith(".js"))) {
      const text = readFileSync(path, "utf8");
      writeFileSync(path, text.split(`${JSON.stringify(shortModule)}:`).join("w:"));
    }
  }
  const missing = [...renames.keys()].filter((old) => !seen.has(old));
  if (missing.length > 0) throw new Error(`not found beside ${wasmPath}: ${missing.join(", ")}`);
  writeFileSync(wasmPath, out);
  const moduleNote = shortModule === undefined ? "" : `, import module ${shortModule} -> w`;
  console.log(`${relative(root, wasmPath)}: ${renames.size} names shortened${moduleNote}, ${trapped} unreachable functions emptied`);
  return out.length;
}

async function main() {
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
}

// Run as a script (build.sh); imported, it only exports `rewrite` (tests/build/).
if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
