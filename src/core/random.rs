//! Randomness, injected: the browser shell uses `Math.random()`, tests a fixed sequence.

/// A source of numbers in `[0, 1)`.
pub trait Random {
    fn next_f64(&mut self) -> f64;
}
