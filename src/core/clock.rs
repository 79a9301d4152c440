//! Time, injected: the browser shell reads `Date.now()`, tests set the hands themselves.

/// Milliseconds since the Unix epoch.
pub trait Clock {
    fn now_ms(&self) -> u64;
}
