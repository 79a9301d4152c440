//! The browser shell: a thin layer over the core.
//!
//! - `storage`: the core's storage on `localStorage` through gloo-storage (`storage.js` is the
//!   adapter gloo's `raw()` hands out), every failure a value
//! - `boundary`: arguments in as JSON text (`input.js`), answers out through serde-wasm-bindgen
//! - `state`: the guard's shared state
//! - `guard`: the exported `JobGuard` class
//! - `exports`: `isGuardError`, `classifyCancelResponse`, the freed guard's error
//! - `http`: the HTTP client over `fetch` (requests, waits, timeouts, aborts, bounded bodies),
//!   used by `cancel` and `follow`
//! - `cancel`: `cancel()`, with retries and aborts, as an async function
//! - `waiting`: `waitFor()`: the page's waiters, fed by every change the guard hears; an
//!   abort cancels what nobody else awaits
//! - `wait_state`: the guard's waiters as its state holds them
//! - `wait_input`: what `waitFor()` is given, read; a 202 body recorded, each job admitted
//! - `page`: the page's guards, its token, each guard's waiters as a decision sees them
//! - `closing`: the page's end: `pagehide`, keepalive cancels and stops
//! - `query`: `query()` taken and registered; `query_send` its request (whether it carries a
//!   `client_id`); `query_drive` its life until it settles; `query_stop` stopping one on the
//!   server; `query_stop_all` every one of a guard at once (a logout, a user switch, the
//!   page's end); `query_state` the running queries as the guard's state holds them
//! - `follow` (the `follow` feature): `follow()`, one poller of Superset's events per browser
//! - `poll` (the `follow` feature): one round of it: a poll and what its answer applies
//! - `tabs`: other tabs' changes in (`storage` event, `BroadcastChannel`), this tab's out
//! - `listeners`: `onChange` and `subscribe` listeners; the page's guards hearing each other
//! - `clock`, `random`: `Date.now()`, `Math.random()`
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

mod answer;
mod boundary;
mod cancel;
mod clock;
mod closing;
mod dom;
mod error;
mod exports;
#[cfg(feature = "follow")]
mod follow;
mod guard;
mod http;
mod listeners;
mod page;
#[cfg(feature = "follow")]
mod poll;
mod query;
mod query_drive;
mod query_send;
mod query_state;
mod query_stop;
mod query_stop_all;
mod random;
mod request;
mod state;
mod storage;
mod tabs;
mod types;
mod wait_input;
mod wait_state;
mod waiting;

pub use exports::{classify_cancel_response, freed_error, is_guard_error};
pub use guard::JobGuard;
