// Arguments from the app, copied into plain data before Rust reads them. Reading an object runs
// its getters and proxy traps, and an exception thrown through wasm would leave the guard's
// state borrowed for the page's life; here it is caught. src/web/boundary.rs says more.
//
// `plain(value, take)` answers `{ value, taken }` (the copy and, when `take` names a property,
// that property taken out as it is: the options' `fetch` function, which plain data cannot
// hold) or `{ error }`.
export function plain(value, take) {
  try {
    if (typeof take !== "string" || value === null || typeof value !== "object") {
      return { value: structuredClone(value) };
    }
    const { [take]: taken, ...rest } = value;
    return { value: structuredClone(rest), taken };
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
