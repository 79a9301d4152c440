// The object gloo-storage's `raw()` hands out: Storage's methods around the page's
// localStorage, shaped so that gloo never meets an exception it does not expect (it calls
// `expect_throw` when getItem, removeItem, key or length throw, and `unreachable!` when setItem
// throws something that is not an Error). Reads that throw read as absent and removals that
// throw do nothing; either leaves the exception in `failure`, for Rust to take and report.
// Reads hand gloo only a string or null: a page's getItem or key that returns anything else
// (an object, a number) would make wasm-bindgen's glue throw inside gloo, so such a value
// reads as absent too, with a TypeError in `failure`. setItem throws, but only Errors.
// src/web/storage.rs says why this is JS.

export function guardedStorage(target) {
  const adapter = {
    failure: undefined,
    getItem(key) {
      try {
        return text(target.getItem(key), "getItem");
      } catch (e) {
        adapter.failure = e;
        return null;
      }
    },
    setItem(key, value) {
      try {
        target.setItem(key, value);
      } catch (e) {
        throw asError(e);
      }
    },
    removeItem(key) {
      try {
        target.removeItem(key);
      } catch (e) {
        adapter.failure = e;
      }
    },
    key(index) {
      try {
        return text(target.key(index), "key");
      } catch (e) {
        adapter.failure = e;
        return null;
      }
    },
    clear() {
      try {
        target.clear();
      } catch (e) {
        adapter.failure = e;
      }
    },
    get length() {
      try {
        const n = target.length;
        return Number.isInteger(n) && n >= 0 ? n : 0;
      } catch (e) {
        adapter.failure = e;
        return 0;
      }
    },
  };
  return adapter;
}

// The exception the last read or removal threw, if any; cleared.
export function takeFailure(adapter) {
  const failure = adapter.failure;
  adapter.failure = undefined;
  return failure;
}

// A string or null as it is; anything else throws (to be caught above).
function text(value, method) {
  if (value === null || typeof value === "string") return value;
  throw new TypeError(`localStorage.${method} returned a ${typeof value}, not a string`);
}

function asError(e) {
  if (e instanceof Error) return e;
  let message;
  try {
    message = String(e && e.message !== undefined ? e.message : e);
  } catch {
    message = "localStorage threw a value that is not an Error";
  }
  const error = new Error(message);
  try {
    if (e && typeof e.name === "string") error.name = e.name;
  } catch {
    // keep "Error"
  }
  return error;
}
