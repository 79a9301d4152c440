// Types of the package's entry: wasm-bindgen's generated declarations. Its JobGuard class
// declares `[Symbol.dispose]()`, which needs the ESNext.Disposable lib (and that lib the
// well-known symbols): referenced here, so an app compiles with its default `lib`, whatever its
// target, and `skipLibCheck` off.
/// <reference lib="es2015.symbol.wellknown" />
/// <reference lib="esnext.disposable" />
export * from "../pkg/superset_job_guard.js";
export { default } from "../pkg/superset_job_guard.js";
