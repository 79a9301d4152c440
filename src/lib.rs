//! superset-job-guard keeps the metadata of Superset's async jobs tagged with the user and
//! channel that created them, clears it on logout, and refuses to cancel jobs the current
//! session does not own, before any request leaves the page.
//!
//! The crate is split in two:
//! - [`core`]: the rules, pure Rust, no browser; built and unit-tested natively.
//! - `web` (wasm32 only): the browser shell: `localStorage` through gloo-storage, `fetch`,
//!   `Date.now()`, the wasm-bindgen exports (`JobGuard`), arguments crossing as JSON text and
//!   answers as plain JS objects (serde-wasm-bindgen), and the conversion of errors to JS
//!   `Error` objects.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

pub mod core;

#[cfg(target_arch = "wasm32")]
pub mod web;
