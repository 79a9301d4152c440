// wasm-bindgen's free() releases a JobGuard's Rust state and leaves the JS object behind: a
// later call on it would throw wasm-bindgen's own "null pointer passed to rust". The JobGuard
// the package exports is this subclass, which answers such calls with the guard's own
// GuardError (code "freed", made in Rust: src/web/guard.rs) and lets free() run twice.
export function freeable(Base, freedError) {
  const freed = new WeakSet();
  class JobGuard extends Base {
    free() {
      if (freed.has(this)) return;
      freed.add(this);
      super.free();
    }
  }
  const checked = (f) =>
    function (...args) {
      if (freed.has(this)) throw freedError();
      return f.apply(this, args);
    };
  for (const name of Object.getOwnPropertyNames(Base.prototype)) {
    if (name === "constructor" || name === "free" || name.startsWith("__")) continue;
    const d = Object.getOwnPropertyDescriptor(Base.prototype, name);
    if (typeof d.value === "function") d.value = checked(d.value);
    if (d.get) d.get = checked(d.get);
    if (d.set) d.set = checked(d.set);
    Object.defineProperty(JobGuard.prototype, name, d);
  }
  if (typeof Symbol.dispose === "symbol") JobGuard.prototype[Symbol.dispose] = JobGuard.prototype.free;
  return JobGuard;
}
