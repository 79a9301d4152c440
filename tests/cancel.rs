//! Browser tests of `JobGuard.cancel` over an injected `fetch`, in Chromium and Firefox: which
//! requests leave the page, how each answer ends, retries, aborts and logout.
#![cfg(target_arch = "wasm32")]

use serde_json::{json, Value};
use superset_job_guard::web::{classify_cancel_response, JobGuard};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::*;

/// A scripted fetch. Each request takes the next step: `{status, retryAfter?, json?, html?}`
/// (`json` is sent as an `application/json` body, `html` as a `text/html` one), `"network"`
/// (rejects like a failed fetch), `"throw"` (throws synchronously) or `"hang"` (never answers
/// until its signal aborts). It records every request in `calls`.
struct MockFetch {
    fetch: js_sys::Function,
    calls: js_sys::Array,
}

const MOCK: &str = r#"
return function fetch(url, init) {
  calls.push({ url: String(url), method: init.method, credentials: init.credentials,
               headers: init.headers, signal: init.signal instanceof AbortSignal,
               body: init.body === undefined ? null : init.body });
  const step = script.length ? script.shift() : { status: 200 };
  if (step === "throw") throw new TypeError("fetch exploded");
  if (step === "network") return Promise.reject(new TypeError("Failed to fetch"));
  if (step === "hang") return new Promise((_, reject) => init.signal.addEventListener("abort",
      () => reject(new DOMException("The operation was aborted.", "AbortError"))));
  const headers = step.retryAfter ? { "Retry-After": step.retryAfter } : {};
  let body = null;
  if (step.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(step.json);
  } else if (step.html !== undefined) {
    headers["Content-Type"] = "text/html; charset=utf-8";
    body = step.html;
  }
  const response = new Response(body, { status: step.status, headers });
  // "lateMs": the answer comes after that long, whatever the signal says meanwhile.
  if (step.lateMs) return new Promise((resolve) => setTimeout(() => resolve(response), step.lateMs));
  return Promise.resolve(response);
};
"#;

impl MockFetch {
    fn new(script: Value) -> Self {
        let calls = js_sys::Array::new();
        let factory = js_sys::Function::new_with_args("script, calls", MOCK);
        let fetch = factory
            .call2(&JsValue::NULL, &js(script), &calls)
            .unwrap()
            .dyn_into()
            .unwrap();
        Self { fetch, calls }
    }

    fn calls(&self) -> Vec<Value> {
        self.calls.iter().map(|c| rust(&c)).collect()
    }
}

/// A guard signed in as user 1 with a running job `job-1`, sending through `mock`.
fn guard(ns: &str, mock: &MockFetch, extra: Value) -> JobGuard {
    fresh(ns);
    let options = js(json!({ "namespace": ns, "retry": {"baseDelayMs": 1, "maxDelayMs": 5} }));
    let extra = js(extra);
    js_sys::Object::assign(
        options.unchecked_ref::<js_sys::Object>(),
        extra.unchecked_ref::<js_sys::Object>(),
    );
    js_sys::Reflect::set(&options, &"fetch".into(), &mock.fetch).unwrap();
    let g = JobGuard::new(options).unwrap();
    g.login(js(json!({ "userId": 1 }))).unwrap();
    g.record_job(js(
        json!({"channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
        "status": "running", "errors": [], "result_url": null}),
    ))
    .unwrap();
    g
}

async fn cancel(g: &JobGuard, job_id: &str) -> Value {
    rust(
        &JsFuture::from(g.cancel(JsValue::from_str(job_id), JsValue::UNDEFINED))
            .await
            .unwrap(),
    )
}

/// `{ signal }`, the options of `cancel`.
fn with_signal(signal: &web_sys::AbortSignal) -> JsValue {
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &"signal".into(), signal).unwrap();
    options.into()
}

async fn cancel_with_signal(g: &JobGuard, job_id: &str, signal: &web_sys::AbortSignal) -> Value {
    rust(
        &JsFuture::from(g.cancel(JsValue::from_str(job_id), with_signal(signal)))
            .await
            .unwrap(),
    )
}

fn status_of(g: &JobGuard, job_id: &str) -> Value {
    rust(&g.job(JsValue::from_str(job_id)).unwrap())
        .get("status")
        .cloned()
        .unwrap_or(Value::Null)
}

#[wasm_bindgen_test]
async fn a_happy_cancel_posts_once_and_marks_the_record_cancelled() {
    let mock = MockFetch::new(json!([{ "status": 200 }]));
    let g = guard(
        "c-happy",
        &mock,
        json!({ "headers": { "X-CSRFToken": "tok-123" } }),
    );
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        out,
        json!({"outcome": "cancelled", "jobId": "job-1", "message": "Job cancelled",
               "retryable": false, "httpStatus": 200, "attempts": 1})
    );
    let calls = mock.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["url"], "/api/v1/async_event/job-1/cancel");
    assert_eq!(calls[0]["method"], "POST");
    assert_eq!(calls[0]["credentials"], "same-origin");
    assert_eq!(calls[0]["headers"], json!({ "X-CSRFToken": "tok-123" }));
    assert_eq!(calls[0]["signal"], true);
    assert_eq!(status_of(&g, "job-1"), "cancelled");
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["reason"],
        "already_finished"
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn forbidden_is_not_job_owner_sent_once_and_the_record_removed() {
    let mock = MockFetch::new(json!([{ "status": 403 }, { "status": 200 }]));
    let g = guard(
        "c-403",
        &mock,
        json!({ "retry": { "attempts": 5, "baseDelayMs": 1 } }),
    );
    let out = cancel(&g, "job-1").await;
    assert_eq!(out["outcome"], "not_job_owner");
    assert!(out["message"]
        .as_str()
        .unwrap()
        .starts_with("Not job owner"));
    assert_eq!(out["retryable"], false);
    assert_eq!(out["httpStatus"], 403);
    assert_eq!(out["attempts"], 1);
    assert_eq!(mock.calls().len(), 1, "403 is never retried");
    assert_eq!(rust(&g.job("job-1".into()).unwrap()), Value::Null);
    // The record is gone, so a second click sends nothing.
    let again = cancel(&g, "job-1").await;
    assert_eq!(
        (again["outcome"].clone(), again["reason"].clone()),
        (json!("refused"), json!("unknown_job"))
    );
    assert_eq!(mock.calls().len(), 1);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn not_found_removes_the_record_and_unauthenticated_keeps_it() {
    let mock = MockFetch::new(json!([{ "status": 404 }]));
    let g = guard("c-404", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("not_found"), json!(1))
    );
    assert_eq!(rust(&g.job("job-1".into()).unwrap()), Value::Null);
    g.logout().unwrap();

    let mock = MockFetch::new(json!([{ "status": 401 }]));
    let g = guard("c-401", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(out["outcome"], "unauthenticated");
    assert_eq!(out["retryable"], false);
    assert_eq!(mock.calls().len(), 1);
    assert_eq!(
        status_of(&g, "job-1"),
        "running",
        "kept: sign in again and retry"
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn local_refusals_send_no_request() {
    let mock = MockFetch::new(json!([]));
    let g = guard("c-local", &mock, json!({}));
    let unknown = cancel(&g, "someone-elses-job").await;
    assert_eq!(
        unknown,
        json!({"outcome": "refused", "jobId": "someone-elses-job",
               "message": "Unknown job someone-elses-job: it was not started in this session, or its record expired",
               "retryable": false, "httpStatus": null, "attempts": 0, "reason": "unknown_job"})
    );
    // A record of another user under our namespace.
    let now = js_sys::Date::now();
    let forged = json!({"channel_id": "chan-1", "job_id": "x", "user_id": "2", "status": "running",
        "errors": [], "result_url": null, "created_at": now, "updated_at": now});
    storage()
        .set_item("c-local:v1:job:x", &forged.to_string())
        .unwrap();
    let owner = cancel(&g, "x").await;
    assert_eq!(owner["outcome"], "not_job_owner");
    assert_eq!(owner["attempts"], 0);
    assert!(owner.get("reason").is_none());
    assert!(owner["message"]
        .as_str()
        .unwrap()
        .starts_with("Not job owner"));
    g.apply_event(js(
        json!({"channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
        "status": "done", "errors": [], "result_url": "/r"}),
    ))
    .unwrap();
    assert_eq!(cancel(&g, "job-1").await["reason"], "already_finished");
    g.logout().unwrap();
    assert_eq!(cancel(&g, "job-1").await["reason"], "no_session");
    let not_a_string = JsFuture::from(g.cancel(JsValue::from_f64(5.0), JsValue::NULL)).await;
    assert_eq!(rust(&not_a_string.unwrap())["outcome"], "refused");
    assert!(mock.calls().is_empty(), "{:?}", mock.calls());
}

#[wasm_bindgen_test]
async fn transient_failures_are_retried_until_success() {
    let mock = MockFetch::new(json!([{ "status": 503 }, "network", { "status": 200 }]));
    let g = guard("c-retry", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(out["outcome"], "cancelled");
    assert_eq!(out["attempts"], 3);
    assert_eq!(mock.calls().len(), 3);
    assert_eq!(status_of(&g, "job-1"), "cancelled");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn retries_run_out_as_a_retryable_failure_and_other_statuses_are_final() {
    for (script, attempts, status) in [
        (
            json!([{ "status": 502 }, { "status": 429 }, { "status": 504 }]),
            3,
            json!(504),
        ),
        (json!(["throw", "network", "network"]), 3, Value::Null),
    ] {
        let mock = MockFetch::new(script);
        let g = guard("c-exhaust", &mock, json!({}));
        let out = cancel(&g, "job-1").await;
        assert_eq!(out["outcome"], "failed");
        assert_eq!(out["retryable"], true);
        assert_eq!(out["attempts"], attempts);
        assert_eq!(out["httpStatus"], status);
        assert_eq!(mock.calls().len(), 3);
        assert_eq!(status_of(&g, "job-1"), "running");
        g.logout().unwrap();
    }
    let mock = MockFetch::new(json!([{ "status": 400 }]));
    let g = guard("c-400", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (out["outcome"].clone(), out["retryable"].clone()),
        (json!("failed"), json!(false))
    );
    assert!(out["message"].as_str().unwrap().contains("400"));
    assert_eq!(mock.calls().len(), 1);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn retry_after_is_honoured_up_to_the_cap() {
    // Without Retry-After the backoff would be 0 ms (base 0); with it, the cap (150 ms).
    let mock = MockFetch::new(json!([{ "status": 503, "retryAfter": "30" }, { "status": 200 }]));
    let g = guard(
        "c-retry-after",
        &mock,
        json!({ "retry": { "baseDelayMs": 0, "maxDelayMs": 150 } }),
    );
    let started = js_sys::Date::now();
    let out = cancel(&g, "job-1").await;
    let waited = js_sys::Date::now() - started;
    assert_eq!(out["outcome"], "cancelled");
    assert_eq!(out["attempts"], 2);
    assert!(waited >= 140.0, "waited {waited} ms");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn an_aborted_signal_ends_the_cancel_with_no_further_request() {
    // Aborted before: nothing is sent.
    let mock = MockFetch::new(json!([]));
    let g = guard("c-abort", &mock, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    controller.abort();
    let out = cancel_with_signal(&g, "job-1", &controller.signal()).await;
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("aborted"), json!(0))
    );
    assert!(mock.calls().is_empty());

    // Aborted while the request is in flight.
    let mock = MockFetch::new(json!(["hang", { "status": 200 }]));
    let g = guard("c-abort", &mock, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let pending = g.cancel("job-1".into(), with_signal(&controller.signal()));
    sleep(20).await;
    controller.abort();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("aborted"), json!(1))
    );
    assert_eq!(mock.calls().len(), 1);
    assert_eq!(status_of(&g, "job-1"), "running");

    // Aborted while waiting to retry.
    // Retry-After (capped at maxDelayMs) makes the wait exact; jitter could make it ~0 ms.
    let mock = MockFetch::new(json!([{ "status": 503, "retryAfter": "3600" }, { "status": 200 }]));
    let g = guard(
        "c-abort",
        &mock,
        json!({ "retry": { "baseDelayMs": 60000, "maxDelayMs": 60000 } }),
    );
    let controller = web_sys::AbortController::new().unwrap();
    let pending = g.cancel("job-1".into(), with_signal(&controller.signal()));
    sleep(30).await;
    controller.abort();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("aborted"), json!(1))
    );
    sleep(30).await;
    assert_eq!(mock.calls().len(), 1, "no request after the abort");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn an_answer_that_arrives_after_an_abort_stands_but_starts_no_wait() {
    // A final answer stands: the server did act on the request.
    let mock = MockFetch::new(json!([{ "status": 403, "lateMs": 40 }]));
    let g = guard("c-late", &mock, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let pending = g.cancel("job-1".into(), with_signal(&controller.signal()));
    sleep(10).await;
    controller.abort();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(out["outcome"], "not_job_owner");
    assert_eq!(g.job("job-1".into()).unwrap(), JsValue::NULL);

    // A retryable one ends the cancel as aborted at once, not after the wait it asks for.
    let mock = MockFetch::new(json!([{ "status": 503, "retryAfter": "3600", "lateMs": 40 }]));
    let g = guard(
        "c-late",
        &mock,
        json!({ "retry": { "baseDelayMs": 60000, "maxDelayMs": 60000 } }),
    );
    let controller = web_sys::AbortController::new().unwrap();
    let started = js_sys::Date::now();
    let pending = g.cancel("job-1".into(), with_signal(&controller.signal()));
    sleep(10).await;
    controller.abort();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    let took = js_sys::Date::now() - started;
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("aborted"), json!(1))
    );
    assert!(took < 30_000.0, "waited {took} ms after the abort");
    assert_eq!(mock.calls().len(), 1);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn logout_ends_cancels_in_flight_or_waiting_as_aborted() {
    let mock = MockFetch::new(json!(["hang", { "status": 200 }]));
    let g = guard("c-logout", &mock, json!({}));
    let pending = g.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(20).await;
    g.logout().unwrap();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("aborted"), json!(1))
    );

    // Retry-After (capped at maxDelayMs) makes the wait exact; jitter could make it ~0 ms.
    let mock = MockFetch::new(json!([{ "status": 503, "retryAfter": "3600" }, { "status": 200 }]));
    let g = guard(
        "c-logout",
        &mock,
        json!({ "retry": { "baseDelayMs": 60000, "maxDelayMs": 60000 } }),
    );
    let pending = g.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(30).await;
    g.logout().unwrap();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(out["outcome"], "aborted");
    assert_eq!(mock.calls().len(), 1);
    // Signed in again (here through another guard on the same storage), the guard that
    // logged out can cancel again: its next cancel is not born aborted.
    let _again = guard("c-logout", &mock, json!({}));
    assert_eq!(cancel(&g, "job-1").await["outcome"], "cancelled");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_logout_in_another_tab_stops_the_retries() {
    // Retry-After (capped at maxDelayMs) makes the wait exact; jitter could make it ~0 ms.
    let mock = MockFetch::new(json!([{ "status": 503, "retryAfter": "3600" }, { "status": 200 }]));
    let one = guard(
        "c-tabs",
        &mock,
        json!({ "retry": { "baseDelayMs": 100, "maxDelayMs": 100 } }),
    );
    let two = JobGuard::new(js(json!({ "namespace": "c-tabs" }))).unwrap();
    let pending = one.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(10).await;
    two.logout().unwrap();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(out["outcome"], "refused");
    assert_eq!(out["reason"], "no_session");
    assert_eq!(out["attempts"], 1);
    assert_eq!(mock.calls().len(), 1);
}

#[wasm_bindgen_test]
async fn the_cancel_url_template_gets_the_encoded_job_id() {
    let mock = MockFetch::new(json!([{ "status": 200 }]));
    let g = guard(
        "c-url",
        &mock,
        json!({ "cancelUrl": "/superset/api/v1/async_event/{job_id}/cancel?via=guard" }),
    );
    g.record_job(js(
        json!({"channel_id": "chan-1", "job_id": "a/b c", "user_id": "1",
        "status": "pending", "errors": [], "result_url": null}),
    ))
    .unwrap();
    assert_eq!(cancel(&g, "a/b c").await["outcome"], "cancelled");
    assert_eq!(
        mock.calls()[0]["url"],
        "/superset/api/v1/async_event/a%2Fb%20c/cancel?via=guard"
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn without_a_fetch_option_the_pages_fetch_is_used_at_call_time() {
    let mock = MockFetch::new(json!([{ "status": 200 }]));
    fresh("c-global");
    let g = JobGuard::new(js(json!({ "namespace": "c-global" }))).unwrap();
    g.login(js(json!({ "userId": 1 }))).unwrap();
    g.record_job(js(
        json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "running"}),
    ))
    .unwrap();
    let global = js_sys::global();
    let original = js_sys::Reflect::get(&global, &"fetch".into()).unwrap();
    js_sys::Reflect::set(&global, &"fetch".into(), &mock.fetch).unwrap();
    let out = cancel(&g, "j").await;
    js_sys::Reflect::set(&global, &"fetch".into(), &original).unwrap();
    assert_eq!(out["outcome"], "cancelled");
    assert_eq!(mock.calls().len(), 1);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn classify_cancel_response_is_the_same_table() {
    let c = |s: f64| {
        rust(
            &classify_cancel_response(JsValue::from_f64(s), JsValue::UNDEFINED, JsValue::UNDEFINED)
                .unwrap(),
        )
    };
    assert_eq!(c(200.0)["outcome"], "cancelled");
    assert_eq!(
        c(403.0),
        json!({"outcome": "not_job_owner", "retryable": false,
               "message": "Not job owner: the server says this job was started by another user or in another session, so it cannot be cancelled from here"})
    );
    assert_eq!(c(404.0)["outcome"], "not_found");
    assert_eq!(c(401.0)["outcome"], "unauthenticated");
    assert_eq!(
        (c(503.0)["outcome"].clone(), c(503.0)["retryable"].clone()),
        (json!("failed"), json!(true))
    );
    assert_eq!(c(418.0)["retryable"], false);
    assert_eq!(c(f64::NAN)["outcome"], "failed");
}

#[wasm_bindgen_test]
fn a_fetch_option_that_is_not_a_function_is_invalid() {
    let options = js(json!({ "storage": "memory" }));
    js_sys::Reflect::set(&options, &"fetch".into(), &"https://example.invalid".into()).unwrap();
    let err = JobGuard::new(options).err().unwrap();
    let code = js_sys::Reflect::get(&err, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("invalid_options"));
}

#[wasm_bindgen_test]
async fn ids_that_would_leave_the_path_or_alias_another_job_send_nothing() {
    // `.` and `..` are dot segments the URL parser removes (`encodeURIComponent` keeps dots);
    // "\uD800" would reach Rust as "\uFFFD". Neither can be recorded, so nothing is sent.
    let mock = MockFetch::new(json!([]));
    let g = guard("c-path", &mock, json!({}));
    let lone = js_sys::JSON::parse(r#""\uD800""#).unwrap();
    for id in [
        JsValue::from_str("."),
        JsValue::from_str(".."),
        lone.clone(),
    ] {
        let meta = js(json!({"channel_id": "chan-1", "user_id": "1", "status": "running"}));
        js_sys::Reflect::set(&meta, &"job_id".into(), &id).unwrap();
        assert_guard_error(g.record_job(meta).unwrap_err(), "invalid_job");
        let out = rust(
            &JsFuture::from(g.cancel(id, JsValue::UNDEFINED))
                .await
                .unwrap(),
        );
        assert_eq!(out["outcome"], "refused");
        assert_eq!(out["reason"], "unknown_job");
    }
    // A record forged under "\uFFFD" is not reached through "\uD800" either.
    storage()
        .set_item(
            "c-path:v1:job:\u{FFFD}",
            &json!({"channel_id": "chan-1", "job_id": "\u{FFFD}", "user_id": "1",
                "status": "running", "errors": [], "result_url": null,
                "created_at": js_sys::Date::now(), "updated_at": js_sys::Date::now()})
            .to_string(),
        )
        .unwrap();
    assert!(g.job(lone.clone()).unwrap().is_null());
    assert_eq!(
        rust(&g.check_cancel(lone.clone()).unwrap())["reason"],
        "unknown_job"
    );
    let out = rust(
        &JsFuture::from(g.cancel(lone, JsValue::UNDEFINED))
            .await
            .unwrap(),
    );
    assert_eq!(out["reason"], "unknown_job");
    assert!(mock.calls().is_empty(), "{:?}", mock.calls());
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_math_random_that_throws_never_makes_cancel_reject() {
    let mock = MockFetch::new(json!([{ "status": 503 }, { "status": 503 }, { "status": 200 }]));
    let g = guard("c-random", &mock, json!({}));
    let restore: js_sys::Function = js_sys::Function::new_no_args(
        "const original = Math.random; Math.random = () => { throw new Error('no dice'); };
         return () => { Math.random = original; };",
    )
    .call0(&JsValue::NULL)
    .unwrap()
    .dyn_into()
    .unwrap();
    let settled = JsFuture::from(g.cancel(JsValue::from_str("job-1"), JsValue::UNDEFINED)).await;
    restore.call0(&JsValue::NULL).unwrap();
    let out = rust(&settled.expect("resolved, not rejected"));
    assert_eq!(out["outcome"], "cancelled");
    assert_eq!(out["attempts"], 3);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn free_detaches_the_other_tab_listeners_even_with_a_cancel_in_flight() {
    let mock = MockFetch::new(json!(["hang"]));
    let g = guard("c-free", &mock, json!({}));
    let seen = js_sys::Array::new();
    let record =
        js_sys::Function::new_with_args("seen", "return (change) => seen.push(change.type);")
            .call1(&JsValue::NULL, &seen)
            .unwrap();
    let _keep = g.on_change(record).unwrap();
    // Another tab signs out: the storage event this tab gets.
    let other_tab_logout = js_sys::Function::new_no_args(
        r#"window.dispatchEvent(new StorageEvent("storage", { key: "c-free:v1:session",
             oldValue: '{"user_id":"1","channel_id":"chan-1"}', newValue: null,
             storageArea: localStorage }));"#,
    );
    let _in_flight = g.cancel(JsValue::from_str("job-1"), JsValue::UNDEFINED);
    sleep(0).await;
    assert_eq!(mock.calls().len(), 1, "the request is out and hangs");
    other_tab_logout.call0(&JsValue::NULL).unwrap();
    assert_eq!(seen.length(), 1, "listening while alive");
    drop(g); // free()
    other_tab_logout.call0(&JsValue::NULL).unwrap();
    assert_eq!(
        seen.length(),
        1,
        "free() detached it, though the cancel still holds the state"
    );
}

#[wasm_bindgen_test]
async fn two_cancels_of_one_job_at_once_send_one_request_and_share_its_outcome() {
    let mock = MockFetch::new(json!([{ "status": 200, "lateMs": 20 }, { "status": 200 }]));
    let g = guard("c-twice", &mock, json!({}));
    let first = g.cancel(JsValue::from_str("job-1"), JsValue::UNDEFINED);
    let second = g.cancel(JsValue::from_str("job-1"), JsValue::UNDEFINED);
    let both = JsFuture::from(js_sys::Promise::all(&js_sys::Array::of2(&first, &second)))
        .await
        .unwrap();
    let both = rust(&both);
    assert_eq!(both[0]["outcome"], "cancelled");
    assert_eq!(both[0], both[1]);
    assert_eq!(mock.calls().len(), 1, "{:?}", mock.calls());
    // Once it ended, a new cancel is a new request (here refused: the job is cancelled).
    let again = rust(
        &JsFuture::from(g.cancel(JsValue::from_str("job-1"), JsValue::UNDEFINED))
            .await
            .unwrap(),
    );
    assert_eq!(again["reason"], "already_finished");
    g.logout().unwrap();
}

// ---- the task framework (`contract: "task"`) and servers without a cancel endpoint ----

const TASK: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";

/// A guard on the task contract, signed in as user 1, that recorded `TASK` from a chart-data
/// `202` body with `tab_id` (if any).
fn task_guard(ns: &str, mock: &MockFetch, tab_id: Option<&str>) -> JobGuard {
    fresh(ns);
    let options = js(json!({ "namespace": ns, "contract": "task",
                             "headers": {"X-CSRFToken": "tok", "content-type": "text/plain"},
                             "retry": {"baseDelayMs": 1, "maxDelayMs": 5} }));
    js_sys::Reflect::set(&options, &"fetch".into(), &mock.fetch).unwrap();
    let g = JobGuard::new(options).unwrap();
    g.login(js(json!({ "userId": 1 }))).unwrap();
    let mut body = json!({ "task_ids": [TASK], "cursor": "2026-09-01T10:00:00" });
    if let Some(tab) = tab_id {
        body["tab_id"] = json!(tab);
    }
    g.record_tasks(js(body)).unwrap();
    g
}

#[wasm_bindgen_test]
async fn a_task_cancel_posts_json_with_the_tabs_own_tab_id() {
    let mock = MockFetch::new(json!([
        { "status": 200, "json": {"message": "ok", "action": "aborted", "task": {}} }
    ]));
    let g = task_guard("t-post", &mock, Some("tab-1"));
    let out = cancel(&g, TASK).await;
    assert_eq!(out["outcome"], "cancelled");
    assert_eq!(out["action"], "aborted");
    let calls = mock.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["url"], format!("/api/v1/task/{TASK}/cancel"));
    assert_eq!(
        calls[0]["headers"],
        json!({"X-CSRFToken": "tok", "Content-Type": "application/json"}),
        "the app's own content-type is replaced"
    );
    assert_eq!(calls[0]["body"], r#"{"tab_id":"tab-1"}"#);
    assert_eq!(status_of(&g, TASK), "aborted");
    // Without a tab id the body is `{}`, never another field.
    let mock = MockFetch::new(json!([{ "status": 200, "json": {"action": "aborted"} }]));
    let g = task_guard("t-post-2", &mock, None);
    cancel(&g, TASK).await;
    assert_eq!(mock.calls()[0]["body"], "{}");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn task_answers_end_as_the_contract_says_each_after_one_request() {
    let cases = [
        (
            json!({"status": 200, "json": {"action": "unsubscribed"}}),
            "left",
            Value::Null,
        ),
        (
            json!({"status": 404, "json": {"message": "Not found"}}),
            "not_job_owner",
            Value::Null,
        ),
        (
            json!({"status": 403, "json": {"message": "Forbidden"}}),
            "refused",
            json!("pending"),
        ),
        (
            json!({"status": 422, "json": {"message": "Task could not be aborted."}}),
            "already_finished",
            Value::Null,
        ),
        (
            json!({"status": 404, "html": "<!DOCTYPE html><h1>404</h1>"}),
            "unsupported",
            json!("pending"),
        ),
        (json!({"status": 401}), "unauthenticated", json!("pending")),
    ];
    for (i, (answer, outcome, left_status)) in cases.into_iter().enumerate() {
        let mock = MockFetch::new(json!([answer, {"status": 200}]));
        let g = task_guard(&format!("t-answers-{i}"), &mock, Some("t"));
        let out = cancel(&g, TASK).await;
        assert_eq!(out["outcome"], outcome, "{answer}");
        assert_eq!(out["attempts"], 1, "{answer}: never retried");
        assert_eq!(status_of(&g, TASK), left_status, "{answer}");
        if outcome == "not_job_owner" {
            assert!(out["message"]
                .as_str()
                .unwrap()
                .starts_with("Not job owner"));
        }
        g.logout().unwrap();
    }
}

#[wasm_bindgen_test]
async fn an_html_404_on_the_async_event_contract_is_unsupported_and_keeps_the_job() {
    // Superset 6.1.0 has no cancel route: its HTML 404 page is not "job not found".
    let mock = MockFetch::new(json!([{ "status": 404, "html": "<html>Not Found</html>" }]));
    let g = guard("c-unsupported", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(out["outcome"], "unsupported");
    assert_eq!(out["retryable"], false);
    assert!(out["message"]
        .as_str()
        .unwrap()
        .contains("not available on this server"));
    assert_eq!(status_of(&g, "job-1"), "running");
    // Its `done` event still applies.
    let done = g
        .apply_event(js(
            json!({"channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
                               "status": "done", "errors": [], "result_url": "/r"}),
        ))
        .unwrap();
    assert_eq!(rust(&done)["status"], "done");
    // A JSON 404 is still the endpoint's own answer.
    let mock = MockFetch::new(json!([{ "status": 404, "json": {"message": "Job not found"} }]));
    let g = guard("c-unsupported-2", &mock, json!({}));
    assert_eq!(cancel(&g, "job-1").await["outcome"], "not_found");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn status_changes_update_the_sessions_tasks() {
    let mock = MockFetch::new(json!([]));
    let g = task_guard("t-status", &mock, None);
    let changed = g
        .apply_task_status(js(json!({"task_id": TASK, "status": "in_progress"})))
        .unwrap();
    assert_eq!(rust(&changed)["status"], "in_progress");
    let same = g
        .apply_task_status(js(json!({"task_id": TASK, "status": "in_progress"})))
        .unwrap();
    assert!(same.is_null());
    let other = "2b1e0c5d-6f7a-4b8c-9d0e-1f2a3b4c5d6e";
    let changed = g
        .apply_status_changes(js(json!({
            "statuses": {TASK: {"status": "success", "progress": 1}, other: {"status": "failure"}},
            "cursor": "2026-09-01T10:00:01"
        })))
        .unwrap();
    let changed = rust(&changed);
    assert_eq!(changed.as_array().unwrap().len(), 1);
    assert_eq!(changed[0]["status"], "success");
    assert_guard_error(
        g.apply_status_changes(js(json!({"statuses": {TASK: {"status": "done"}}})))
            .unwrap_err(),
        "invalid_job",
    );
    assert_guard_error(
        g.record_tasks(js(json!({"task_ids": [TASK, "not-a-uuid"]})))
            .unwrap_err(),
        "invalid_job",
    );
    assert_eq!(
        rust(&g.jobs().unwrap()).as_array().unwrap().len(),
        1,
        "nothing stored"
    );
    let c = |s: f64, body: Value| {
        rust(&classify_cancel_response(JsValue::from_f64(s), "task".into(), js(body)).unwrap())
    };
    assert_eq!(c(200.0, json!({"action": "detached"}))["outcome"], "left");
    assert_eq!(
        c(404.0, json!({"message": "Not found"}))["outcome"],
        "not_job_owner"
    );
    let html = classify_cancel_response(
        JsValue::from_f64(404.0),
        JsValue::UNDEFINED,
        "<html></html>".into(),
    )
    .unwrap();
    assert_eq!(rust(&html)["outcome"], "unsupported");
    g.logout().unwrap();
}

/// The page replaced `AbortSignal.prototype.aborted`, `AbortController.prototype.signal` or
/// `abort()` with ones that throw: cancels still end with an outcome, `logout()` does not throw,
/// and the guard stays usable.
#[wasm_bindgen_test]
async fn abort_getters_and_methods_that_throw_never_wedge_a_cancel() {
    let accessor = |class: &str, name: &str| -> js_sys::Function {
        js_sys::Function::new_no_args(&format!(
            r#"const original = Object.getOwnPropertyDescriptor({class}.prototype, "{name}");
               Object.defineProperty({class}.prototype, "{name}", {{ configurable: true,
                 get() {{ throw new Error("replaced by the page"); }} }});
               return () => Object.defineProperty({class}.prototype, "{name}", original);"#
        ))
        .call0(&JsValue::NULL)
        .unwrap()
        .dyn_into()
        .unwrap()
    };
    for (class, name) in [("AbortSignal", "aborted"), ("AbortController", "signal")] {
        let mock = MockFetch::new(json!([{ "status": 503 }, { "status": 200 }]));
        let g = guard("c-dom", &mock, json!({}));
        let app = web_sys::AbortController::new().unwrap();
        let app_signal = app.signal();
        let restore = accessor(class, name);
        let out = cancel_with_signal(&g, "job-1", &app_signal).await;
        restore.call0(&JsValue::NULL).unwrap();
        assert_eq!(
            (out["outcome"].clone(), out["attempts"].clone()),
            (json!("cancelled"), json!(2)),
            "{class}.{name}"
        );
        assert_eq!(status_of(&g, "job-1"), "cancelled");
        g.logout().unwrap();
    }

    // abort() that throws: logout still signs out; the cancel in flight ends when its answer
    // comes (the session checks stop it from going on).
    let mock = MockFetch::new(json!([{ "status": 503, "lateMs": 50 }, { "status": 200 }]));
    let g = guard("c-dom", &mock, json!({}));
    let pending = g.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(10).await;
    let restore: js_sys::Function = js_sys::Function::new_no_args(
        r#"const original = AbortController.prototype.abort;
           AbortController.prototype.abort = function () { throw new Error("replaced by the page"); };
           return () => { AbortController.prototype.abort = original; };"#,
    )
    .call0(&JsValue::NULL)
    .unwrap()
    .dyn_into()
    .unwrap();
    let logged_out = g.logout();
    restore.call0(&JsValue::NULL).unwrap();
    assert_eq!(
        rust(&logged_out.expect("logout does not throw")),
        json!({ "purged": 1 })
    );
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(out["attempts"], 1, "no request after the logout: {out}");
    assert_eq!(mock.calls().len(), 1);
    let _again = guard("c-dom", &mock, json!({}));
    assert_eq!(
        cancel(&g, "job-1").await["outcome"],
        "cancelled",
        "the guard goes on"
    );
    g.logout().unwrap();
}
