//! Reading a model from any serde deserializer (a JS value through serde-wasm-bindgen, JSON
//! text, a `serde_json::Value`) with a message that names the field at fault.

use serde::{Deserialize, Deserializer};

/// What one model says about its fields, for messages.
pub struct Rules {
    /// What the whole value must be, when it is not even an object.
    pub expected: &'static str,
    /// The rule a field (a path such as `retry.attempts`) breaks, if the model states one.
    pub field: fn(&str) -> Option<String>,
}

/// Reads a `T`. A field of the wrong type gets the field's own rule as its message (the same
/// message validation gives for a wrong value); anything else gets serde's message, with the
/// path in front when it is about a field.
pub fn read<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
    rules: &Rules,
) -> Result<T, String> {
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let about_keys = inner.starts_with("unknown field") || inner.starts_with("missing field");
        if path == "." {
            return if inner.starts_with("invalid type") {
                rules.expected.to_owned()
            } else {
                inner
            };
        }
        if about_keys {
            return format!("in `{path}`: {inner}");
        }
        (rules.field)(&path).unwrap_or_else(|| format!("`{path}` {inner}"))
    })
}
