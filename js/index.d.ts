// Types of the package's entry: wasm-bindgen's generated declarations. Its JobGuard class
// declares `[Symbol.dispose]()`, which needs the ESNext.Disposable lib: referenced here, so an
// app compiles with its default `lib` and `skipLibCheck` off.
/// <reference lib="esnext.disposable" />
export * from "../pkg/superset_job_guard.js";
export { default } from "../pkg/superset_job_guard.js";
