//! The answer memo: `job`, `checkCancel` and `jobs` answered without entering the core when
//! the stored text they were computed from has not changed (`memo.js` re-reads and compares
//! it on every call). It only replays the core's own answers, so it changes no rule; it saves
//! the parsing and validation and, above all, the copies of strings between JS and wasm
//! (about 1 µs each in Chromium), which dominate a read that the core would answer the same.
//!
//! Used only while the guard's data lives in localStorage undisturbed (`StorageMode::Local`):
//! with a memory layer the stored text is not the whole truth.
//!
//! How `memo.js` works (kept terse there: it ships to every page):
//! - an entry per job id holds the session marker's text and the record's text (or `null`)
//!   that an answer came from, when the record expires (`created_at` + TTL; never without a
//!   record), and the JSON text of the `job` and `checkCancel` answers seen so far;
//! - every call re-reads both texts with `getItem` and compares them (`===`); a read that
//!   throws is `undefined`, which equals no remembered text; a hit is parsed afresh, so each
//!   caller gets its own object;
//! - `job` is also answered from a remembered allowed `checkCancel`, which carries the record
//!   (the core's `job` answer for the same text);
//! - a miss notes the texts it read; `settle*` remembers the core's answer against them only
//!   if the core removed nothing meanwhile (the shell compares the core's removal counts);
//! - `recordJob` and `applyEvent` remember the record they wrote with the `checkCancel`
//!   answer the core decided for it, so that the check an app makes right after is a hit;
//! - `jobs()` is a hit when the session text is the same, there are as many job keys as
//!   remembered records, and each of those records is unchanged and unexpired;
//! - past `limit` entries (twice `maxJobs`, plus 256) the memo starts over;
//! - no method throws: an exception crossing into wasm would leave the guard's state borrowed.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/web/memo.js")]
extern "C" {
    pub type Memo;

    #[wasm_bindgen(constructor)]
    pub fn new(
        storage: &web_sys::Storage,
        session_key: &str,
        job_prefix: &str,
        ttl_ms: f64,
        limit: u32,
    ) -> Memo;

    /// The memoised `checkCancel` answer, or `undefined`.
    #[wasm_bindgen(method)]
    pub fn check(this: &Memo, job_id: &JsValue) -> JsValue;

    /// The memoised `job` answer, or `undefined`.
    #[wasm_bindgen(method)]
    pub fn job(this: &Memo, job_id: &JsValue) -> JsValue;

    /// The memoised `jobs()` answer, or `undefined`.
    #[wasm_bindgen(method)]
    pub fn jobs(this: &Memo) -> JsValue;

    /// The core's answer after a `job` miss, as JSON: remembered when the core left storage
    /// `unchanged`; returns it parsed.
    #[wasm_bindgen(method, js_name = settleJob)]
    pub fn settle_job(this: &Memo, text: &str, unchanged: bool) -> JsValue;

    /// The same after a `check` miss.
    #[wasm_bindgen(method, js_name = settleCheck)]
    pub fn settle_check(this: &Memo, text: &str, unchanged: bool) -> JsValue;

    /// A record the core just wrote (`recordJob`, `applyEvent`) and its `checkCancel` answer,
    /// both as JSON: remembered against what is stored now; returns the record parsed.
    #[wasm_bindgen(method, js_name = settleWrite)]
    pub fn settle_write(this: &Memo, record: &str, check: &str) -> JsValue;

    /// The core's `jobs()` answer as JSON, each record remembered; returns it parsed.
    #[wasm_bindgen(method, js_name = settleList)]
    pub fn settle_list(this: &Memo, text: &str) -> JsValue;

    #[wasm_bindgen(method)]
    pub fn clear(this: &Memo);
}
