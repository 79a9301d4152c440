//! Values crossing between JS and Rust, through serde-wasm-bindgen: arguments are read from
//! JS values with the core's validating readers, answers are written as plain JS objects
//! (`null` for `None`, objects for maps), and a failure on the way out is a `GuardError`.
//!
//! An argument object is first copied into plain data by `input.js` ([`plain`]): reading it
//! runs the app's getters and proxy traps, which may throw, and serde-wasm-bindgen reads
//! properties with no way to catch that. An exception thrown through wasm skips Rust's
//! cleanup and leaves the guard borrowed (wasm-bindgen's `free()` then fails for good); in
//! `input.js` it is caught and becomes a `GuardError`.

use serde::Serialize;
use serde_wasm_bindgen::{Deserializer, Serializer};
use tsify::Tsify;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::error::GuardError;
use crate::core::ids::quote;

#[wasm_bindgen(module = "/src/web/input.js")]
extern "C" {
    /// `{ value, taken }` or `{ error }`; never throws.
    #[wasm_bindgen(js_name = plain)]
    fn plain_js(value: &JsValue, take: Option<&str>) -> JsValue;
}

/// An argument as plain data.
pub struct Plain {
    pub value: JsValue,
    /// The property `take` named (the options' `fetch` function), as it was.
    pub taken: JsValue,
}

/// Copies an argument into plain data, with the property `take` names taken out as it is; what
/// cannot be read (a getter or a proxy trap threw, a value that cannot be copied) is
/// `invalid`'s error.
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
    Ok(Plain {
        value: field("value"),
        taken: field("taken"),
    })
}

/// Reads a JS value with one of the core's readers (`JobMetadata::read`, ...).
pub fn from_js<T>(
    value: JsValue,
    read: impl FnOnce(Deserializer) -> Result<T, GuardError>,
) -> Result<T, GuardError> {
    read(Deserializer::from(value))
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
