//! The page's random source, for retry jitter.

use crate::core::random::Random;

/// `Math.random()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MathRandom;

impl Random for MathRandom {
    fn next_f64(&mut self) -> f64 {
        js_sys::Math::random()
    }
}
