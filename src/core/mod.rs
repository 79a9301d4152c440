//! The pure core: no browser, no wasm-bindgen. Everything here builds and is tested natively.
//!
//! - [`model`]: Superset's job metadata, job records, statuses, validation
//! - [`session`]: user-id normalisation, the session, ownership
//! - [`options`]: the guard's options and their validation
//! - [`storage`]: the [`KeyValue`](storage::KeyValue) trait and [`MemoryStorage`](storage::MemoryStorage)
//! - [`fallback`]: storage that keeps working when the browser's refuses (memory layer)
//! - [`json`]: a small JSON reader and writer (values cross the boundary and sit in storage as JSON)
//! - [`stats`]: what the store removed or worked around, by reason
//! - [`clock`]: injected time
//! - [`store`]: [`JobStore`](store::JobStore), the rules, over any storage and clock
//! - [`cancel`]: the cancel decision
//! - [`response`]: what each answer of the cancel endpoint means
//! - [`retry`]: the retry schedule and `Retry-After`
//! - [`random`]: injected randomness
//! - [`cancel_flow`]: one cancel from the local check to the last answer
//! - [`error`]: [`GuardError`](error::GuardError) and [`StorageError`](error::StorageError)

pub mod cancel;
pub mod cancel_flow;
pub mod clock;
pub mod error;
pub mod fallback;
pub mod json;
pub mod model;
pub mod options;
pub mod random;
pub mod response;
pub mod retry;
pub mod session;
pub mod stats;
pub mod storage;
pub mod store;
pub mod text;
