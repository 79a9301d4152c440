//! The JS boundary under arbitrary values (a property test, in the browser): strings with lone
//! surrogates, `.`/`..`, U+FFFD, numbers such as NaN, ±Infinity, -0 and 2^53 + 1, BigInts,
//! Symbols, functions, nested and cyclic objects, throwing getters and proxies, for every
//! argument of every export. Whatever comes in, nothing panics, nothing but a `GuardError` is
//! thrown, `cancel()` resolves, and no id reads a record recorded under another id.
#![cfg(target_arch = "wasm32")]

use superset_job_guard::web::{classify_cancel_response, is_guard_error, JobGuard};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::*;

/// `values(seed, n)`: `n` arbitrary JS values, the same for the same seed.
const VALUES: &str = r#"
let s = seed >>> 0;
const rnd = () => { s = (s + 0x6D2B79F5) >>> 0; let t = s; t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
const strings = ["", ".", "..", "...", "\uD800", "\uDC00", "a\uD800b", "\uFFFD", "job-1", "j",
  "1", "2", "c", "chan-1", "__proto__", "constructor", "a/b", "%2E%2E", "x".repeat(300),
  "\u0000", "é", "😀", "running", "done", "pending", "guest-1", "k".repeat(5000)];
const numbers = [0, -0, 1, 7, 1.5, -3, NaN, Infinity, -Infinity, 2 ** 53 + 1, 1e300, 403, 999, 1000];
const keys = ["channel_id", "job_id", "user_id", "status", "errors", "result_url", "id",
  "userId", "channelId", "namespace", "ttlSeconds", "maxJobs", "storage", "cancelUrl",
  "headers", "retry", "fetch", "attempts", "__proto__", "toString", "x"];
function value(depth) {
  switch (Math.floor(rnd() * (depth > 3 ? 8 : 12))) {
    case 0: case 1: return pick(strings);
    case 2: return pick(numbers);
    case 3: return pick([true, false, null, undefined]);
    case 4: return pick([10n, -1n, Symbol("s"), () => 1, new Date(0), /x/]);
    case 5: return pick(strings) + pick(strings);
    case 6: return pick(numbers) * pick([1, -1]);
    case 7: return pick(["local", "memory", "/c/{job_id}", "{job_id}"]);
    case 8: case 9: { const o = {}; const n = Math.floor(rnd() * 6);
      for (let i = 0; i < n; i++) Object.defineProperty(o, pick(keys),
        { value: value(depth + 1), enumerable: true, configurable: true, writable: true });
      if (rnd() < 0.1) o.self = o;
      if (rnd() < 0.1) Object.defineProperty(o, pick(keys), { get() { throw new Error("get"); }, enumerable: true });
      return o; }
    case 10: return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    default: return rnd() < 0.5 ? new Proxy({}, { get() { throw 1; }, ownKeys() { throw 2; } })
                                : new Proxy({ job_id: "j" }, {});
  }
}
/** Metadata-shaped objects: the fields a guard reads, each one arbitrary now and then. */
function meta() {
  const m = { channel_id: "chan-1", job_id: pick(strings), user_id: "1", status: "running",
              errors: [], result_url: null };
  for (const k of Object.keys(m)) if (rnd() < 0.3) m[k] = value(1);
  return m;
}
return Array.from({ length: n }, (_, i) => (i % 2 ? meta() : value(0)));
"#;

fn values(seed: u32, n: u32) -> Vec<JsValue> {
    let make = js_sys::Function::new_with_args("seed, n", VALUES);
    let array: js_sys::Array = make
        .call2(&JsValue::NULL, &seed.into(), &n.into())
        .unwrap()
        .dyn_into()
        .unwrap();
    array.iter().collect()
}

/// Whatever a call threw is a GuardError.
fn only_guard_errors<T>(what: &str, v: &JsValue, result: Result<T, JsValue>) {
    if let Err(thrown) = result {
        assert!(
            is_guard_error(&thrown),
            "{what} threw something else for {v:?}: {thrown:?}"
        );
    }
}

#[wasm_bindgen_test]
async fn arbitrary_values_at_every_export_are_answers_or_guard_errors() {
    fresh("b-any");
    let g = JobGuard::new(js(serde_json::json!({ "namespace": "b-any" }))).unwrap();
    g.login(ts(js(serde_json::json!({ "userId": 1 })))).unwrap();
    let mut recorded: Vec<JsValue> = Vec::new();
    for (i, v) in values(7, 400).into_iter().enumerate() {
        only_guard_errors("new JobGuard", &v, JobGuard::new(v.clone()));
        only_guard_errors(
            "classifyCancelResponse",
            &v,
            classify_cancel_response(v.clone(), JsValue::UNDEFINED, JsValue::UNDEFINED),
        );
        only_guard_errors(
            "classifyCancelResponse(404, contract, body)",
            &v,
            classify_cancel_response(JsValue::from_f64(404.0), v.clone(), v.clone()),
        );
        only_guard_errors(
            "classifyCancelResponse(200, task, body)",
            &v,
            classify_cancel_response(JsValue::from_f64(200.0), "task".into(), v.clone()),
        );
        only_guard_errors("recordTasks", &v, g.record_tasks(ts(v.clone())));
        only_guard_errors("applyTaskStatus", &v, g.apply_task_status(ts(v.clone())));
        only_guard_errors(
            "applyStatusChanges",
            &v,
            g.apply_status_changes(ts(v.clone())),
        );
        only_guard_errors("job", &v, g.job(v.clone()));
        only_guard_errors("checkCancel", &v, g.check_cancel(v.clone()));
        only_guard_errors("onChange", &v, g.on_change(v.clone()));
        only_guard_errors("applyEvent", &v, g.apply_event(ts(v.clone())));
        match g.record_job(ts(v.clone())) {
            Ok(record) => {
                recorded.push(js_sys::Reflect::get(&record.as_js(), &"job_id".into()).unwrap())
            }
            Err(thrown) => assert!(is_guard_error(&thrown), "recordJob: {v:?}: {thrown:?}"),
        }
        if i % 50 == 0 {
            // login with anything, then the session back (a logout would drop the records).
            only_guard_errors("login", &v, g.login(ts(v.clone())));
            g.login(ts(js(serde_json::json!({ "userId": 1 })))).unwrap();
        }
        let settled = JsFuture::from(g.cancel(v.clone(), v.clone())).await;
        assert!(settled.is_ok(), "cancel rejected for {v:?}");
    }
    assert!(!recorded.is_empty(), "some metadata was valid");
    // No id reads a record recorded under another id: every answer's job_id is the id asked.
    for v in values(8, 400) {
        if let Ok(record) = g.job(v.clone()) {
            if !record.is_null() {
                let id = js_sys::Reflect::get(&record, &"job_id".into()).unwrap();
                assert!(
                    js_sys::Object::is(&id, &v),
                    "job({v:?}) answered for {id:?}"
                );
            }
        }
    }
    g.logout().unwrap();
}
