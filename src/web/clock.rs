//! The page's clock.

use crate::core::clock::Clock;

/// `Date.now()`, in milliseconds since the epoch.
#[derive(Clone, Copy, Debug, Default)]
pub struct DateClock;

impl Clock for DateClock {
    fn now_ms(&self) -> u64 {
        // `as` saturates: a NaN or negative clock reads as 0, never a panic.
        js_sys::Date::now() as u64
    }
}
