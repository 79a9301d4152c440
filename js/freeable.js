// wasm-bindgen's free() releases a JobGuard's Rust state and leaves the JS object behind: a
// later call on it would throw wasm-bindgen's own "null pointer passed to rust". The JobGuard
// the package exports is this subclass, which answers such calls with the guard's own
// GuardError (code "freed", made in Rust: src/web/guard.rs) and lets free() run twice.
//
// A free() made while one of the guard's calls runs (from a getter of its argument, a listener
// it calls, page code it reaches through storage or fetch) takes effect when that call returns:
// the guard's Rust state is borrowed until then, and wasm-bindgen's free would throw and leave
// it (and its listeners) alive. Calls made after the free() throw "freed" at once.
export function freeable(Base, freedError) {
  const freed = new WeakSet();
  // How many of each guard's calls are running, and the guards whose free() waits for them.
  const running = new WeakMap();
  const waiting = new WeakSet();
  const release = (guard) => Base.prototype.free.call(guard);
  class JobGuard extends Base {
    free() {
      if (freed.has(this)) return;
      freed.add(this);
      if (running.get(this) > 0) waiting.add(this);
      else release(this);
    }
  }
  const checked = (f) =>
    function (...args) {
      if (freed.has(this)) throw freedError();
      running.set(this, (running.get(this) ?? 0) + 1);
      try {
        return f.apply(this, args);
      } finally {
        const left = running.get(this) - 1;
        running.set(this, left);
        if (left === 0 && waiting.has(this)) {
          waiting.delete(this);
          release(this);
        }
      }
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
