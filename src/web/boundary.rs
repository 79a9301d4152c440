//! Values crossing between JS and Rust, through serde-wasm-bindgen: arguments are read from
//! JS values with the core's validating readers, answers are written as plain JS objects
//! (`null` for `None`, objects for maps), and a failure on the way out is a `GuardError`.

use serde::Serialize;
use serde_wasm_bindgen::{Deserializer, Serializer};
use wasm_bindgen::JsValue;

use super::error::to_js_error;
use crate::core::error::GuardError;

/// Reads a JS value with one of the core's readers (`JobMetadata::read`, ...); its error is
/// thrown as a JS `Error`.
pub fn from_js<T>(
    value: JsValue,
    read: impl FnOnce(Deserializer) -> Result<T, GuardError>,
) -> Result<T, JsValue> {
    read(Deserializer::from(value)).map_err(|e| to_js_error(&e))
}

/// A Rust value as a plain JS value: structs and maps as objects, `None` as `null`.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(
            &Serializer::new()
                .serialize_missing_as_null(true)
                .serialize_maps_as_objects(true),
        )
        .map_err(|e| to_js_error(&GuardError::Internal(e.to_string())))
}

/// Throws a core error as a JS `Error`.
pub fn guarded<T>(result: Result<T, GuardError>) -> Result<T, JsValue> {
    result.map_err(|e| to_js_error(&e))
}
