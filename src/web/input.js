// Arguments from the app, copied into plain data before Rust reads them. Reading an object runs
// its getters and proxy traps, and an exception thrown through wasm would leave the guard's
// state borrowed for the page's life; here it is caught. src/web/boundary.rs says more.
//
// `plain(value)` answers `{ value, fetch }` (the copy, and a `fetch` property taken out of an
// object as it is: the options' function, which plain data cannot hold) or `{ error }`.
export function plain(value) {
  try {
    if (value === null || typeof value !== "object") return { value };
    const { fetch, ...rest } = value;
    return { value: structuredClone(rest), fetch };
  } catch (e) {
    return { error: describe(e) };
  }
}

function describe(e) {
  try {
    return String(e instanceof Error ? e.message : e);
  } catch {
    return "reading it threw";
  }
}
