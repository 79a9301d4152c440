// Arguments from the app, written as JSON text before Rust reads them. Writing an object runs
// its getters, `toJSON` methods and proxy traps, and an exception thrown through wasm would
// leave the guard's state borrowed for the page's life; here it is caught. src/web/boundary.rs
// says more.
//
// `plain(value, take)` answers `{ json, taken }` (the text and, when `take` names a property,
// that property taken out as it is: the options' `fetch` function, which JSON cannot hold) or
// `{ error }`.
//
// JSON.stringify reads a Proxy through its traps, so apps' state in them (Vue's `reactive()`,
// MobX observables, Immer drafts) is read as the plain data it shows. What JSON cannot say is
// refused rather than changed: a number that is not finite (JSON would write `null`, which
// reads as "absent"), and a BigInt beyond the safe integers (one within them is the number).
export function plain(value, take) {
  try {
    if (typeof take !== "string" || value === null || typeof value !== "object") {
      return { json: write(value) };
    }
    const { [take]: taken, ...rest } = value;
    return { json: write(rest), taken };
  } catch (e) {
    return { error: describe(e) };
  }
}

// More items than any argument the guard reads has (a proxy may claim any length).
const MAX_ITEMS = 100000;

function write(value) {
  // `undefined` (a missing argument) and what JSON leaves out at the top are `null`.
  return JSON.stringify(value, checked) ?? "null";
}

function checked(_key, value) {
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new RangeError(`${value} is not a finite number`);
      return value;
    case "bigint": {
      const n = Number(value);
      if (!Number.isSafeInteger(n)) throw new RangeError("a BigInt beyond the safe integers");
      return n;
    }
    case "object":
      if (Array.isArray(value) && !(value.length <= MAX_ITEMS)) {
        throw new RangeError(`more than ${MAX_ITEMS} items`);
      }
      return value;
    default:
      return value;
  }
}

function describe(e) {
  try {
    return String(e instanceof Error ? e.message : e);
  } catch {
    return "reading it threw";
  }
}
