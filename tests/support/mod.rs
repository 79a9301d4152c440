//! Helpers shared by the browser test files (`web.rs`, `cancel.rs`, `hostile.rs`, `follow.rs`, `wait.rs`).
#![allow(dead_code)] // each test file uses its own subset

use serde_json::Value;
use superset_job_guard::web::{is_guard_error, JobGuard};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

#[cfg(feature = "follow")]
pub mod wait;

/// A value an export returned: a `JsValue`, or a model's typed JS value.
pub trait AsJs {
    fn as_js(&self) -> JsValue;
}

impl<T: AsRef<JsValue>> AsJs for T {
    fn as_js(&self) -> JsValue {
        self.as_ref().clone()
    }
}

/// A JSON value as a plain JS value.
pub fn js(value: Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).unwrap()
}

/// A JS value as an export's typed argument, unchecked, as JS would pass it.
pub fn ts<J: JsCast>(value: impl Into<JsValue>) -> J {
    value.into().unchecked_into()
}

/// A plain JS value as JSON (`undefined` as `null`), to compare with `json!`.
pub fn rust(value: &impl AsJs) -> Value {
    let value = value.as_js();
    if value.is_undefined() {
        return Value::Null;
    }
    serde_json::from_str(&String::from(js_sys::JSON::stringify(&value).unwrap())).unwrap()
}

pub fn storage() -> web_sys::Storage {
    web_sys::window().unwrap().local_storage().unwrap().unwrap()
}

/// The keys under `<ns>:`, sorted.
pub fn keys_of(ns: &str) -> Vec<String> {
    let store = storage();
    let prefix = format!("{ns}:");
    let mut keys: Vec<String> = (0..store.length().unwrap())
        .filter_map(|i| store.key(i).unwrap())
        .filter(|k| k.starts_with(&prefix))
        .collect();
    keys.sort();
    keys
}

/// Removes everything under `<ns>:` and returns `ns`: a fresh namespace for one test.
pub fn fresh(ns: &str) -> String {
    for k in keys_of(ns) {
        storage().remove_item(&k).unwrap();
    }
    ns.to_owned()
}

/// The thrown value is a JS `Error` named `GuardError` with this `code`.
pub fn assert_guard_error(thrown: JsValue, code: &str) {
    assert!(is_guard_error(&thrown));
    let err: js_sys::Error = thrown.dyn_into().expect("an Error instance");
    assert_eq!(String::from(err.name()), "GuardError");
    let got = js_sys::Reflect::get(&err, &JsValue::from_str("code")).unwrap();
    assert_eq!(
        got.as_string().as_deref(),
        Some(code),
        "{}",
        String::from(err.message())
    );
}

/// Waits until `done` holds, or `ms` have passed.
pub async fn until(ms: i32, done: impl Fn() -> bool) {
    for _ in 0..ms / 25 {
        if done() {
            return;
        }
        sleep(25).await;
    }
}

/// Waits `ms` on the page's timer.
pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .unwrap()
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .unwrap();
    });
    JsFuture::from(promise).await.unwrap();
}

/// What an export threw, for results whose success value has no `Debug` (tsify's typed JS
/// values): `unwrap_err` for them.
pub trait Thrown {
    fn thrown(self) -> JsValue;
}

impl<T> Thrown for Result<T, JsValue> {
    fn thrown(self) -> JsValue {
        match self {
            Ok(_) => panic!("expected the export to throw"),
            Err(e) => e,
        }
    }
}

/// A scripted stand-in server's `fetch`: `script` is the body of a function of `state` (what
/// the server holds, changed by the test) and `log` (what it saw), returning the `fetch`.
pub fn scripted_fetch(script: &str, state: &JsValue, log: &js_sys::Array) -> js_sys::Function {
    js_sys::Function::new_with_args("state, log", script)
        .call2(&JsValue::NULL, state, log)
        .unwrap()
        .dyn_into()
        .unwrap()
}

/// A guard over `fetch` in namespace `ns` with the CSRF header, `base` options (a contract, say)
/// and then `extra`'s over them, signed in as user 1.
pub fn guard_over(ns: &str, fetch: &js_sys::Function, base: Value, extra: Value) -> JobGuard {
    let options =
        js(serde_json::json!({ "namespace": ns, "headers": { "X-CSRFToken": "csrf-1" } }));
    for more in [base, extra] {
        js_sys::Object::assign(
            options.unchecked_ref::<js_sys::Object>(),
            js(more).unchecked_ref::<js_sys::Object>(),
        );
    }
    js_sys::Reflect::set(&options, &"fetch".into(), fetch).unwrap();
    let g = JobGuard::new(options).unwrap();
    g.login(ts(js(serde_json::json!({ "userId": 1 })))).unwrap();
    g
}
