//! The page's random source, for retry jitter.

use wasm_bindgen::prelude::*;

use crate::core::random::Random;

#[wasm_bindgen]
extern "C" {
    /// `Math.random()`, which page code may have replaced with something that throws.
    #[wasm_bindgen(catch, js_namespace = Math, js_name = random)]
    fn math_random() -> Result<JsValue, JsValue>;
}

/// `Math.random()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MathRandom;

impl Random for MathRandom {
    /// A `Math.random` that throws or answers nonsense reads as 0.5 (the core also clamps what
    /// is not in `0..1`): a cancel's retry must never turn into a rejection.
    fn next_f64(&mut self) -> f64 {
        math_random().ok().and_then(|v| v.as_f64()).unwrap_or(0.5)
    }
}
