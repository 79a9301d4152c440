//! The browser's executor of the core's machine ([`crate::core::machine`]): it does what the
//! machine's effects say and hands it what happened, keeping only the live handles by the
//! machine's ids. It decides nothing.
//!
//! - `exec`: the page's one machine, the loop of events and effects, the handles (promises,
//!   signals, timers)
//! - `net`: requests over `fetch`: answers, bodies within their limits, ends
//! - `page`: the page's `pagehide`/`pageshow` and `storage` listeners, the tabs' channels, Web
//!   Locks
//! - `listeners`: `onChange` and `subscribe` listeners, each change handed out once
//! - `guard`: the exported `JobGuard` class: arguments read, calls handed to the machine
//! - `exports`: `isGuardError`, `classifyCancelResponse`, the freed guard's error
//! - `boundary`: arguments in as JSON text (`input.js`), answers out through serde-wasm-bindgen
//! - `storage`: the core's storage on `localStorage` through gloo-storage (`storage.js` is the
//!   adapter gloo's `raw()` hands out), every failure a value
//! - `clock`, `random`: `Date.now()` and timers, `Math.random()`
//! - `dom`: catching bindings of the platform calls web-sys does not catch
//! - `types`: the TypeScript shapes with no Rust type of their own (lenient inputs, narrowings)
//! - `error`: [`GuardError`](crate::core::error::GuardError) to a JS `Error`, once
//!
//! The TypeScript types the package ships come from the Rust types (`#[derive(tsify::Tsify)]`
//! on the models in `core`, a few JS-only shapes here); exports take and return their JS values
//! (`boundary::Js<T>`).

/// Talc instead of Rust's default wasm allocator (dlmalloc): fewer bytes in the module and
/// faster allocation. Single-threaded wasm only, which is what the package builds. The
/// `talc-allocator` feature (on by default) lets a crate that links this one as a library keep
/// its own allocator.
#[cfg(all(feature = "talc-allocator", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

mod boundary;
mod clock;
mod dom;
mod error;
mod exec;
mod exports;
mod guard;
mod listeners;
mod net;
mod page;
mod random;
mod storage;
mod types;

pub use exports::{classify_cancel_response, freed_error, is_guard_error};
pub use guard::JobGuard;
