//! Randomness, injected: the browser shell uses `Math.random()`, tests a fixed sequence.

/// A source of numbers in `[0, 1)`.
pub trait Random {
    fn next_f64(&mut self) -> f64;
}

/// Returns the given numbers in turn, forever.
#[derive(Clone, Debug)]
pub struct SequenceRandom {
    values: Vec<f64>,
    next: usize,
}

impl SequenceRandom {
    pub fn new(values: Vec<f64>) -> Self {
        Self { values, next: 0 }
    }
}

impl Random for SequenceRandom {
    fn next_f64(&mut self) -> f64 {
        let value = self.values.get(self.next).copied().unwrap_or(0.0);
        self.next = if self.next + 1 >= self.values.len() {
            0
        } else {
            self.next + 1
        };
        value
    }
}
