// Arguments from the app, written as JSON text before Rust reads them. Writing an object runs
// its getters, `toJSON` methods and proxy traps, and an exception thrown through wasm would
// leave the guard's state borrowed for the page's life; here it is caught. src/web/boundary.rs
// says more.
//
// `plain(value, take)` answers `{ json, taken }` (the text and, when `take` names a property,
// that property taken out as it is: the options' `fetch` function or `signal`, which JSON cannot
// hold), `{ error }` (reading it threw) or `{ refused }` (options that are not a plain object).
//
// JSON.stringify reads a Proxy through its traps, so apps' state in them (Vue's `reactive()`,
// MobX observables, Immer drafts) is read as the plain data it shows, and an object with a
// `toJSON` (its own or its prototype's) as what that returns: options are read exactly as
// JSON.stringify writes them, with `take` taken out of what it writes (or, where its `toJSON`
// left it out, out of the object given). What JSON cannot say is refused rather than changed:
// a number that is not finite (JSON would write `null`, which reads as "absent"), a BigInt
// beyond the safe integers (one within them is the number), and a function or symbol in place
// of the whole argument. A `Headers` is the object of its entries.
export function plain(value, take) {
  try {
    if (typeof take !== "string" || value === null || typeof value !== "object" || Array.isArray(value)) {
      return { json: write(value) };
    }
    // Options: a plain object, not a platform object given in its place (an AbortSignal, a
    // Headers, a Map), which JSON would read as `{}`: all defaults.
    const tag = Object.prototype.toString.call(value).slice(8, -1);
    if (tag !== "Object") return { refused: `options must be a plain object, not ${article(tag)}` };
    let top;
    let taken;
    let first = true;
    const json = write(value, function (key, item) {
      if (first) {
        first = false;
        top = checked(key, item);
        return top;
      }
      if (this === top && key === take) {
        taken = item;
        return undefined;
      }
      return checked(key, item);
    });
    if (taken === undefined && top !== value) taken = value[take];
    return { json, taken };
  } catch (e) {
    return { error: describe(e) };
  }
}

const article = (name) => (/^[AEIOU]/.test(name) ? `an ${name}` : `a ${name}`);

// More items than any argument the guard reads has (a proxy may claim any length).
const MAX_ITEMS = 100000;

function write(value, replacer = checked) {
  // `undefined` (a missing argument) is `null`; a function or a symbol, which JSON leaves out,
  // is refused rather than read as absent.
  if (value === undefined) return "null";
  const json = JSON.stringify(value, replacer);
  if (json === undefined) throw new TypeError(`a ${typeof value} cannot be written as JSON`);
  return json;
}

function checked(key, value) {
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new RangeError(`${named(key)}${value} is not a finite number`);
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
      // A `Headers` (the options' `headers`, as fetch takes them) is the object of its entries,
      // not the `{}` JSON would write.
      if (typeof Headers === "function" && value instanceof Headers) return Object.fromEntries(value);
      return value;
    default:
      return value;
  }
}

// The property a value was met under, for the message.
const named = (key) => (key === "" ? "" : `\`${String(key).slice(0, 64)}\`: `);

function describe(e) {
  try {
    return String(e instanceof Error ? e.message : e);
  } catch {
    return "reading it threw";
  }
}
