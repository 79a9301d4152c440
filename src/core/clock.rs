//! Time, injected: the browser shell reads `Date.now()`, tests set the hands themselves.

use std::cell::Cell;
use std::rc::Rc;

/// Milliseconds since the Unix epoch.
pub trait Clock {
    fn now_ms(&self) -> u64;
}

/// A clock that only moves when told to. Clones share the same time, so a test can keep one
/// and hand another to the store.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Rc<Cell<u64>>,
}

impl ManualClock {
    pub fn at(ms: u64) -> Self {
        Self {
            now: Rc::new(Cell::new(ms)),
        }
    }

    pub fn set(&self, ms: u64) {
        self.now.set(ms);
    }

    pub fn advance(&self, ms: u64) {
        self.now.set(self.now.get().saturating_add(ms));
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.get()
    }
}
