//! The page's `window`, or `None` outside a page (Node, workers). Read directly rather than
//! through `web_sys::window()`, whose search of four global names (`js_sys::global`) costs
//! more wasm and glue than everything else here.

use wasm_bindgen::prelude::*;
use web_sys::Window;

#[wasm_bindgen]
extern "C" {
    /// `window` (`typeof window === "undefined"` reads as `None`).
    #[wasm_bindgen(thread_local_v2, js_name = window)]
    static WINDOW: Option<Window>;
}

pub fn window() -> Option<Window> {
    WINDOW.with(Option::clone)
}
