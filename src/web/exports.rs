//! The package's free functions: `isGuardError`, `classifyCancelResponse` (the cancel table for
//! apps that send the request themselves), and the error `js/freeable.js` throws for a call on
//! a freed guard.

use wasm_bindgen::prelude::*;

use super::boundary::{from_js, plain, to_ts, Js};
use crate::core::endpoints::MAX_BODY_CHARS;
use crate::core::error::GuardError;
use crate::core::quiet::Json;
use crate::core::response::{classify, Classification, Contract, Reply};

/// The error a call on a freed guard throws (for `js/freeable.js`, which the package's entries
/// use to answer such calls: wasm-bindgen's own check throws "null pointer passed to rust").
#[wasm_bindgen(js_name = __freedError, skip_typescript)]
pub fn freed_error() -> JsValue {
    JsValue::from(GuardError::Freed)
}

/// Whether `error` was thrown by the guard (an `Error` named `"GuardError"` with a `code`).
#[wasm_bindgen(js_name = isGuardError, unchecked_return_type = "error is GuardError")]
pub fn is_guard_error(#[wasm_bindgen(unchecked_param_type = "unknown")] error: &JsValue) -> bool {
    super::error::is_guard_error(error)
}

/// What an answer from the cancel endpoint means: the same table `cancel` uses, for apps that
/// send the request through their own client. `contract` is `"async_event"` (the default) or
/// `"task"`; `body` is the answer's parsed JSON, or its text (an HTML page is not JSON: a 404
/// with one is `unsupported`); without it a 404 counts as the endpoint's own answer.
#[wasm_bindgen(js_name = classifyCancelResponse)]
pub fn classify_cancel_response(
    #[wasm_bindgen(js_name = httpStatus, unchecked_param_type = "number")] http_status: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "Contract")] contract: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "unknown")] body: JsValue,
) -> Result<Js<Classification>, JsValue> {
    // A whole number from 0 to 999; anything else (not a number: a BigInt, a Symbol, ...) reads
    // as 0, a failure that is not retried. Taken as any value: a number parameter would make
    // wasm-bindgen's glue throw a TypeError for a Symbol or a BigInt.
    let status = http_status
        .as_f64()
        .and_then(crate::core::endpoints::http_status)
        .unwrap_or(0);
    let contract = from_js(&contract, GuardError::InvalidOptions, |d| Contract::read(d))?;
    // Every body is read with the guard's limits (length, depth): beyond them, or one that
    // cannot be copied, it is not the endpoint's answer.
    let reply = if let Some(text) = body.dyn_ref::<js_sys::JsString>() {
        if text.length() as usize > MAX_BODY_CHARS {
            Reply::NotJson
        } else {
            Reply::from_text(&String::from(text))
        }
    } else if body.is_undefined() {
        Reply::Unread
    } else {
        match plain(&body, None, GuardError::InvalidJob) {
            // A body is read in two passes, as every answer body is.
            Ok(copy) => copy
                .value()
                .map_or(Reply::NotJson, |v| Reply::from_json(Json(&v))),
            Err(_) => Reply::NotJson,
        }
    };
    to_ts::<Classification>(&classify(status, contract, &reply))
}
