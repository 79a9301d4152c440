//! The pure core: no browser, no wasm-bindgen. Everything here builds and is tested natively.
//!
//! - [`ids`]: job, channel and user ids, whole numbers from JS
//! - [`model`]: Superset's job metadata and job records (serde types, validated)
//! - [`record`]: the records the guard keeps of jobs and tasks
//! - [`statuses`]: the contracts' statuses
//! - [`names`]: enums that cross as their names, each declared once
//! - [`session`]: the session, login, ownership
//! - [`options`]: the guard's options and their validation
//! - [`quiet`]: the guard's one JSON reader: text to a value within the limits, then the model
//!   from the value, with messages that never print a float
//! - [`surrogates`]: JSON text as `JSON.parse` reads it (a lone surrogate as U+FFFD)
//! - [`wire`]: reading a model from any serde deserializer, with messages naming the field
//! - [`storage`]: the typed [`KeyValue`](storage::KeyValue) trait and
//!   [`MemoryStorage`](storage::MemoryStorage)
//! - [`fallback`]: storage that keeps working when the browser's refuses (memory layer)
//! - [`stats`]: what the store removed or worked around, by reason
//! - [`clock`]: injected time
//! - [`store`]: [`JobStore`](store::JobStore), the rules, over any storage and clock
//! - [`cancel`]: the cancel decision
//! - [`endpoints`]: Superset's endpoints: URLs, bodies, answer readers and body limits
//! - [`response`]: what each answer of the cancel endpoint means
//! - [`retry`]: the retry schedule and `Retry-After`
//! - [`random`]: injected randomness
//! - [`chart`]: the chart-data endpoints (the request, its result, the stop) and what they answer
//! - [`by_url`]: a few values keyed by URL, a list
//! - [`client_ids`]: whether a server takes a `client_id` in a chart-data body, learned from
//!   its answers
//! - [`query`]: `query()`'s rules: a chart's query from request to result, as a sans-IO machine
//! - [`cancel_flow`]: one cancel from the local check to the last answer
//! - [`machine`]: every guard of a page and what they have running, as one sans-IO machine:
//!   events in, effects out
//! - [`follow`]: following Superset's event stream: cursors, cadence, what a poll's answer means
//! - [`pages`]: a page of the async_event stream, read so that no page stops it
//! - `doubles`: test doubles for this crate's tests (the `test-doubles` feature)
//! - [`tabs`]: the tabs' protocol: changes, channel messages, `storage` events
//! - [`awaited`]: who else awaits a job: what an abort or the page's end may cancel, for the
//!   whole browser
//! - [`wait_input`]: what `waitFor` is given (input, options) and each job's admission
//! - [`waiters`]: `waitFor`'s rules: the page's waiters, how each settles, what an abort cancels
//! - [`error`]: [`GuardError`](error::GuardError) and [`StorageError`](error::StorageError)

pub mod awaited;
pub mod by_url;
pub mod cancel;
pub mod cancel_flow;
pub mod chart;
pub mod client_ids;
pub mod clock;
#[cfg(any(test, feature = "test-doubles"))]
pub mod doubles;
pub mod endpoints;
pub mod error;
pub mod fallback;
pub mod follow;
pub mod ids;
pub mod machine;
pub mod model;
pub mod names;
pub mod options;
pub mod pages;
pub mod query;
pub mod quiet;
pub mod random;
pub mod record;
pub mod response;
pub mod retry;
pub mod session;
pub mod stats;
pub mod statuses;
pub mod storage;
pub mod store;
pub mod surrogates;
pub mod tabs;
pub mod task;
pub mod wait_input;
pub mod wait_outcome;
pub mod waiters;
pub mod wire;
