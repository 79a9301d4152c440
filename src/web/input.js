// Arguments from the app, copied into plain data before Rust reads them. Reading an object runs
// its getters and proxy traps, and an exception thrown through wasm would leave the guard's
// state borrowed for the page's life; here it is caught. src/web/boundary.rs says more.
//
// `plain(value, take)` answers `{ value, taken }` (the copy and, when `take` names a property,
// that property taken out as it is: the options' `fetch` function, which plain data cannot
// hold) or `{ error }`.
//
// The copy is `structuredClone`'s. It refuses every Proxy, and apps keep state in them (Vue's
// `reactive()`, MobX observables, Immer drafts): such a value is read as the plain data it
// shows instead, its own enumerable properties, through its traps (`shown`).
export function plain(value, take) {
  try {
    if (typeof take !== "string" || value === null || typeof value !== "object") {
      return { value: copy(value) };
    }
    const { [take]: taken, ...rest } = value;
    return { value: copy(rest), taken };
  } catch (e) {
    return { error: describe(e) };
  }
}

function copy(value) {
  // jsdom (Jest's browser environment) has no structuredClone.
  if (typeof structuredClone !== "function") return shown(value, 0);
  try {
    return structuredClone(value);
  } catch (e) {
    if (!(e instanceof DOMException && e.name === "DataCloneError")) throw e;
    return shown(value, 0);
  }
}

// Deeper than anything the guard reads (its JSON limit is 64 levels), so a cycle ends here too;
// and more items than any argument it reads has (a proxy may claim any length).
const MAX_DEPTH = 100;
const MAX_ITEMS = 100000;

// What a value shows as plain data: arrays and objects by their own enumerable properties,
// through any getters and traps, into objects without a prototype (so a key `__proto__` stays
// data); anything else as it is, for the reader to take or refuse.
function shown(value, depth) {
  if (value === null || typeof value !== "object") return value;
  if (depth > MAX_DEPTH) throw new RangeError(`nested more than ${MAX_DEPTH} levels deep`);
  if (Array.isArray(value)) {
    if (!(value.length <= MAX_ITEMS)) throw new RangeError(`more than ${MAX_ITEMS} items`);
    const out = [];
    for (let i = 0; i < value.length; i++) out.push(shown(value[i], depth + 1));
    return out;
  }
  const out = Object.create(null);
  for (const key of Object.keys(value)) out[key] = shown(value[key], depth + 1);
  return out;
}

function describe(e) {
  try {
    return String(e instanceof Error ? e.message : e);
  } catch {
    return "reading it threw";
  }
}
