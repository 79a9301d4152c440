//! superset-job-guard keeps the metadata of Superset's async jobs tagged with the user and
//! channel that created them, clears it on logout, and refuses to cancel jobs the current
//! session does not own, before any request leaves the page.
//!
//! The crate is split in two:
//! - [`core`]: the rules, pure Rust, no browser; built and unit-tested natively.
//! - `web` (wasm32 only): the browser shell: `localStorage`, `Date.now()`, the wasm-bindgen
//!   exports (`JobGuard`) and the conversion of errors to JS `Error` objects.
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
// The code needs only `core` and `alloc`. std is linked (feature `std`, on by default) for
// tests and native builds; the npm package's wasm is built without it (scripts/build.sh), so
// that std's panic machinery, which formats every panic message, and with it `core::fmt`, stay
// out of the module. See `panic` below.
#![no_std]

extern crate alloc;
#[cfg(any(feature = "std", test, not(target_arch = "wasm32")))]
extern crate std;

pub mod core;

#[cfg(target_arch = "wasm32")]
pub mod web;

/// What the unit tests take from std (the crate itself is `no_std`).
#[cfg(test)]
mod test_prelude {
    pub use std::string::ToString;
    pub use std::vec::Vec;
    pub use std::{format, vec};
}

/// Without std (the npm package), a panic, which the code is written never to reach, traps,
/// as `panic = "abort"` makes it do with std. Nothing is formatted.
#[cfg(all(target_arch = "wasm32", not(feature = "std"), not(test)))]
#[panic_handler]
fn panic(_: &::core::panic::PanicInfo<'_>) -> ! {
    ::core::arch::wasm32::unreachable()
}
