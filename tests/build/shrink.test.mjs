// scripts/shrink.mjs on small modules assembled here: which functions it empties, what it
// renames and drops, and that the result still loads and runs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { rewrite } from "../../scripts/shrink.mjs";

const uleb = (n) => {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
};
const str = (text) => [...uleb(Buffer.byteLength(text)), ...Buffer.from(text)];
const vec = (items) => [...uleb(items.length), ...items.flat()];
const section = (id, bytes) => [id, ...uleb(bytes.length), ...bytes];
const custom = (name, bytes) => section(0, [...str(name), ...bytes]);

const I32_CONST = 0x41;
const CALL = 0x10;
const END = 0x0b;

// Functions, each `() -> i32`: [name, body instructions]. Function 0 is exported as `run`;
// `table` lists the functions in the function table; `imports` the imported functions.
function assemble({ functions, table, imports = [], extra = [] }) {
  const bodies = functions.map(([, code]) => {
    const body = [0x00, ...code, END]; // no locals
    return [...uleb(body.length), ...body];
  });
  const names = [...imports.map(([, , name]) => name), ...functions.map(([name]) => name)];
  const functionNames = vec(names.map((n, i) => [...uleb(i), ...str(n)]));
  return Buffer.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, 0x00, 0x01, 0x7f]])), // type 0: () -> i32
    ...section(2, vec(imports.map(([module, field]) => [...str(module), ...str(field), 0x00, 0x00]))),
    ...section(3, vec(functions.map(() => [0x00]))),
    ...section(4, vec([[0x70, 0x00, ...uleb(table.length)]])), // funcref table
    ...section(7, vec([[...str("run"), 0x00, ...uleb(imports.length)]])),
    // One active segment at offset 0 of table 0.
    ...section(9, vec([[0x00, I32_CONST, 0x00, END, ...vec(table.map((f) => uleb(f)))]])),
    ...section(10, vec(bodies)),
    ...custom("name", [0x01, ...uleb(functionNames.length), ...functionNames]), // subsection 1
    ...custom("producers", [0x00]),
    ...extra,
  ]);
}

const SHIM = "wasm_bindgen::convert::closures::_::invoke::h0123456789abcdef";
const DISPLAY = "<u32 as core[c5930c85a12de822]::fmt::Display>::fmt";
const keep = (field) => field;

function bodyOf(module, index) {
  // Walks to the code section and returns the body of defined function `index`.
  let at = 8;
  for (;;) {
    const id = module[at];
    let size = 0;
    let shift = 0;
    let p = at + 1;
    for (;;) {
      const b = module[p++];
      size |= (b & 0x7f) << shift;
      shift += 7;
      if (b < 0x80) break;
    }
    if (id === 10) {
      let q = p + 1; // fewer than 128 functions here
      for (let i = 0; ; i++) {
        const length = module[q];
        if (i === index) return [...module.subarray(q + 1, q + 1 + length)];
        q += 1 + length;
      }
    }
    at = p + size;
  }
}

test("functions reached only through dead table entries are emptied; the rest runs", async () => {
  const module = assemble({
    functions: [
      ["run", [CALL, 1]], // 0: exported, calls 1
      ["helper", [I32_CONST, 7]], // 1
      [SHIM, [CALL, 3]], // 2: a closure shim no export leads to, in the table
      ["only_the_shim_calls_me", [I32_CONST, 9]], // 3
      [DISPLAY, [I32_CONST, 1]], // 4: core::fmt, in the table, nothing formats
      ["a_vtable_entry", [I32_CONST, 5]], // 5: in the table: kept
    ],
    table: [2, 4, 5],
  });
  const [out, emptied] = rewrite(module, keep);
  assert.equal(emptied, 3);
  assert.deepEqual(bodyOf(out, 2), [0x00, 0x00, END]);
  assert.deepEqual(bodyOf(out, 3), [0x00, 0x00, END]);
  assert.deepEqual(bodyOf(out, 4), [0x00, 0x00, END]);
  assert.deepEqual(bodyOf(out, 5), [0x00, I32_CONST, 5, END]);
  assert.deepEqual(bodyOf(out, 1), [0x00, I32_CONST, 7, END]);
  const { instance } = await WebAssembly.instantiate(out);
  assert.equal(instance.exports.run(), 7);
  assert.ok(out.length < module.length);
  // No name or producers section is left.
  assert.equal(out.includes(Buffer.from("producers")), false);
  assert.equal(out.includes(Buffer.from(SHIM)), false);
});

test("a shim an export leads to, or core::fmt when something formats, is kept", () => {
  const exported = assemble({
    functions: [[`${SHIM} externref shim`, [CALL, 1]], [SHIM, [I32_CONST, 1]]],
    table: [1],
  });
  assert.equal(rewrite(exported, keep)[1], 0);
  for (const formatter of [
    "core[c5930c85a12de822]::fmt::write",
    "alloc[3ca501edff3f0c7c]::fmt::format::format_inner",
  ]) {
    const formatting = assemble({
      functions: [["run", [CALL, 2]], [DISPLAY, [I32_CONST, 1]], [formatter, [I32_CONST, 2]]],
      table: [1],
    });
    assert.equal(rewrite(formatting, keep)[1], 0, formatter);
  }
});

test("an instruction it cannot decode means nothing is emptied", () => {
  const module = assemble({
    // 0xfd: a SIMD prefix, which the decoder does not know.
    functions: [["run", [I32_CONST, 1]], [SHIM, [0xfd, 0x0c]]],
    table: [1],
  });
  assert.equal(rewrite(module, keep)[1], 0);
});

test("import and export names are renamed, module names too when asked", async () => {
  const module = assemble({
    imports: [["./x_bg.js", "__wbg_now_0123456789abcdef", "import"]],
    functions: [["run", [CALL, 0]]],
    table: [],
  });
  const [out] = rewrite(
    module,
    (field) => field.replace(/_[0-9a-f]{16}$/, ""),
    (name) => (name === "./x_bg.js" ? "w" : name),
  );
  assert.equal(out.includes(Buffer.from("0123456789abcdef")), false);
  const { instance } = await WebAssembly.instantiate(out, { w: { __wbg_now: () => 42 } });
  assert.equal(instance.exports.run(), 42);
});
