//! The one place where core errors become JS values.

use wasm_bindgen::JsValue;

use crate::core::error::GuardError;

// The JS shape of the errors `From<GuardError> for JsValue` builds. `GuardErrorCode` lists
// `GuardError::code()`'s names, and the three the package's entry (js/index.js) throws before
// the module is loaded: tests/package/types-agree.test.mjs checks each of them.
#[wasm_bindgen::prelude::wasm_bindgen(typescript_custom_section)]
const GUARD_ERROR_TS: &'static str = r#"
/** The `code` of an error thrown by the guard. */
export type GuardErrorCode =
  | "invalid_options"
  | "invalid_session"
  | "invalid_job"
  | "no_session"
  | "not_job_owner"
  | "internal"
  | "freed"
  | "not_initialized"
  | "wasm_not_found"
  | "wasm_blocked";

/** Every error the guard throws is an `Error` of this shape. */
export interface GuardError extends Error {
  name: "GuardError";
  code: GuardErrorCode;
}
"#;

/// The `name` of every error the guard throws.
pub const GUARD_ERROR_NAME: &str = "GuardError";

/// A JS `Error` whose `name` is `"GuardError"`, whose `message` is the error's text, and which
/// carries the stable `code` (`"invalid_options"`, `"no_session"`, ...). The one conversion:
/// exports return `Result<_, JsValue>` and use `?` on core results.
impl From<GuardError> for JsValue {
    fn from(err: GuardError) -> JsValue {
        let js = js_sys::Error::new(&err.message());
        js.set_name(GUARD_ERROR_NAME);
        // Reflect.set on a fresh, extensible Error cannot fail; if it ever did, the error would
        // still be thrown, just without its code.
        let _ = js_sys::Reflect::set(
            &js,
            &JsValue::from_str("code"),
            &JsValue::from_str(err.code()),
        );
        js.into()
    }
}

/// Whether `value` is an error thrown by the guard.
pub fn is_guard_error(value: &JsValue) -> bool {
    let field = |name: &str| js_sys::Reflect::get(value, &JsValue::from_str(name)).ok();
    value.is_object()
        && field("name").and_then(|v| v.as_string()).as_deref() == Some(GUARD_ERROR_NAME)
        && field("code").is_some_and(|v| v.is_string())
}
