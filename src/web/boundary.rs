//! Values crossing between JS and Rust: arguments arrive as JSON text and are read with the
//! core's validating readers; answers are written as plain JS objects through
//! serde-wasm-bindgen (`null` for `None`, objects for maps), and a failure on the way out is a
//! `GuardError`.
//!
//! An argument is written as JSON by `input.js` ([`plain`]): reading it runs the app's
//! getters, `toJSON` methods and proxy traps, which may throw. An exception thrown through
//! wasm skips Rust's cleanup and leaves the guard borrowed (wasm-bindgen's `free()` then
//! fails for good); in `input.js` it is caught and becomes a `GuardError`. The text is then
//! parsed by serde_json within the limits and the model read from its value
//! ([`crate::core::quiet`]'s two passes): one string crosses instead of one call per property.

use serde::Serialize;
use serde_wasm_bindgen::Serializer;
use tsify::Tsify;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::error::GuardError;
use crate::core::ids::quote;
use crate::core::options::GuardOptions;
use crate::core::quiet::{self, Json};
use serde_json::Value;

#[wasm_bindgen(module = "/src/web/input.js")]
extern "C" {
    /// `{ json, taken }` or `{ error }`; never throws.
    #[wasm_bindgen(js_name = plain)]
    fn plain_js(value: &JsValue, take: Option<&str>) -> JsValue;
}

/// An argument as JSON text.
pub struct Plain {
    text: String,
    /// The property `take` named (the options' `fetch` function, `waitFor`'s `signal`), as it
    /// was.
    pub taken: JsValue,
    invalid: fn(String) -> GuardError,
}

/// Writes an argument as JSON text, with the property `take` names taken out as it is; what
/// cannot be written (a getter or a proxy trap threw, a number that is not finite, a cycle)
/// is `invalid`'s error.
pub fn plain(
    value: &JsValue,
    take: Option<&str>,
    invalid: fn(String) -> GuardError,
) -> Result<Plain, JsValue> {
    let copy = plain_js(value, take);
    // `copy` is an object made by `plain`: reading it cannot throw.
    let field = |name: &str| {
        js_sys::Reflect::get(&copy, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
    };
    if let Some(error) = field("error").as_string() {
        return Err(invalid(format!("cannot read the value: {}", quote(&error))).into());
    }
    if let Some(refused) = field("refused").as_string() {
        return Err(invalid(refused).into());
    }
    Ok(Plain {
        text: field("json").as_string().unwrap_or_default(),
        taken: field("taken"),
        invalid,
    })
}

impl Plain {
    /// Reads the argument with one of the core's readers ([`quiet::read`]). A text beyond the
    /// limits (deeper than JSON from outside may be) is `invalid`'s error.
    pub fn read<T>(
        &self,
        read: impl FnOnce(Json<'_>) -> Result<T, GuardError>,
    ) -> Result<T, JsValue> {
        let invalid = self.invalid;
        Ok(quiet::read(&self.text, read, |e| {
            invalid(quote(&e.to_string()))
        })?)
    }

    /// The argument as a parsed JSON value (within the same limits).
    pub fn value(&self) -> Result<Value, JsValue> {
        quiet::parse(&self.text).map_err(|e| (self.invalid)(quote(&e.to_string())).into())
    }
}

/// Reads an argument with one of the core's readers (`JobMetadata::read`, ...): `invalid`'s
/// error if it cannot be written as JSON.
pub fn from_js<T>(
    value: &JsValue,
    invalid: fn(String) -> GuardError,
    read: impl FnOnce(Json<'_>) -> Result<T, GuardError>,
) -> Result<T, JsValue> {
    plain(value, None, invalid)?.read(read)
}

/// A Rust value as a plain JS value: structs and maps as objects, `None` as `null`.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(
            &Serializer::new()
                .serialize_missing_as_null(true)
                .serialize_maps_as_objects(true),
        )
        .map_err(|e| GuardError::Internal(e.to_string()).into())
}

/// An error's `message`, as a JS `Error` (a `GuardError`) carries it.
pub fn message_of(error: &JsValue) -> String {
    js_sys::Reflect::get(error, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_default()
}

/// The `signal` an options object held ([`plain`]'s `taken`): none for `undefined` or `null`,
/// or why it cannot be taken (its controller, a look-alike, one of another window).
pub fn signal_in(taken: JsValue) -> Result<Option<web_sys::AbortSignal>, String> {
    if taken.is_undefined() || taken.is_null() {
        return Ok(None);
    }
    taken.dyn_into().map(Some).map_err(|_| {
        "Invalid options: `signal` must be an AbortSignal (a controller's `.signal`)".to_owned()
    })
}

/// The JS value of a Rust model's TypeScript type: what tsify's `Ts<T>` wraps. Exports take and
/// return it, so the `.d.ts` names the type `T`'s declaration says. (Not `Ts<T>` itself: it hands
/// its value out only as a clone, a second JS handle made and dropped on every call.)
pub type Js<T> = <T as Tsify>::JsType;

/// A Rust value as the JS value of `T`'s TypeScript type (`T` is the model whose declaration
/// says what `value` serializes to; `tests/package/types-agree.test.mjs` checks they agree).
#[inline]
pub fn to_ts<T: Tsify>(value: &(impl Serialize + ?Sized)) -> Result<Js<T>, JsValue> {
    to_js(value).map(JsCast::unchecked_into)
}

/// Splits the constructor's options into the `fetch` function and the rest, read by the core.
pub fn guard_options(
    options: &JsValue,
) -> Result<(GuardOptions, Option<js_sys::Function>), JsValue> {
    // No options are all defaults: nothing to read (`GuardOptions::read` gives the same).
    if options.is_undefined() || options.is_null() {
        return Ok((GuardOptions::default(), None));
    }
    let options = plain(options, Some("fetch"), GuardError::InvalidOptions)?;
    let fetch = options.taken.clone();
    let fetch = if fetch.is_undefined() || fetch.is_null() {
        None
    } else {
        Some(fetch.dyn_into::<js_sys::Function>().map_err(|_| {
            JsValue::from(GuardError::InvalidOptions(
                "`fetch` must be a function like window.fetch".to_owned(),
            ))
        })?)
    };
    let options = options.read(|d| GuardOptions::read(d))?;
    Ok((options, fetch))
}

/// A listener given to `method`, which must be a function (`invalid_options` otherwise).
pub fn function(value: JsValue, method: &str) -> Result<js_sys::Function, JsValue> {
    value.dyn_into::<js_sys::Function>().map_err(|_| {
        JsValue::from(GuardError::InvalidOptions(format!(
            "{method} needs a function"
        )))
    })
}
