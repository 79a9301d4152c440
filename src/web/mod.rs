//! The browser shell: a thin layer over the core.
//!
//! - `storage`: [`KeyValue`](crate::core::storage::KeyValue) on `window.localStorage`
//!   (`web_sys::Storage`), every failure a value
//! - `clock`: `Date.now()`
//! - `guard`: the exported `JobGuard` class, `isGuardError`, `classifyCancelResponse`
//! - `memo`: the core's read answers replayed while the stored text is unchanged (`memo.js`)
//! - `cancel`: the cancel request over `fetch`, with retries and aborts (its loop in `cancel.js`)
//! - `random`: `Math.random()`
//! - `tabs`: other tabs' changes in (`storage` event, `BroadcastChannel`), `onChange`
//! - `error`: [`GuardError`](crate::core::error::GuardError) to a JS `Error`, once
//! - `types`: the TypeScript types the package ships
//! - `window`: the page's `window`, if there is one

/// Talc instead of Rust's default wasm allocator (dlmalloc): fewer bytes in the module and
/// faster allocation (the guard allocates for every JSON value it reads). Single-threaded
/// wasm only, which is what the package builds. The `talc-allocator` feature (on by default)
/// lets a crate that links this one as a library keep its own allocator.
#[cfg(all(feature = "talc-allocator", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

mod cancel;
mod clock;
mod error;
mod guard;
mod memo;
mod random;
mod storage;
mod tabs;
mod types;
mod window;

pub use guard::{classify_cancel_response, is_guard_error, JobGuard};
