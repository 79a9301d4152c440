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

/// A scripted fetch. Each request takes the next step: `{status, retryAfter?, json?, raw?,
/// html?, redirected?, stuckBody?, declared?}` (`json` is sent as an `application/json` body, `raw` is
/// such a body's text as given, `html` a `text/html` one; `redirected` marks the answer as
/// reached by following a redirect; `stuckBody` makes its `text()` and `json()` never settle;
/// `brokenBody: "throw" | "reject"` makes them throw or reject, as a body stream that breaks;
/// `declared` is its `Content-Length`),
/// `"network"` (rejects like a failed fetch), `"throw"` (throws synchronously), `"hang"` (never
/// answers until its signal aborts) or `"ignore"` (never answers, whatever its signal says). It
/// records every request in `calls`, the signal each got in `calls.signals`, and each
/// `Response` it answered with in `calls.responses`.
struct MockFetch {
    fetch: js_sys::Function,
    calls: js_sys::Array,
}

const MOCK: &str = r#"
return function fetch(url, init) {
  calls.push({ url: String(url), method: init.method, credentials: init.credentials,
               headers: init.headers, signal: init.signal instanceof AbortSignal,
               body: init.body === undefined ? null : init.body });
  (calls.signals ??= []).push(init.signal);
  const step = script.length ? script.shift() : { status: 200 };
  if (step === "throw") throw new TypeError("fetch exploded");
  if (step === "network") return Promise.reject(new TypeError("Failed to fetch"));
  if (step === "hang") return new Promise((_, reject) => init.signal.addEventListener("abort",
      () => reject(new DOMException("The operation was aborted.", "AbortError"))));
  if (step === "ignore") return new Promise(() => {});
  const headers = step.retryAfter ? { "Retry-After": step.retryAfter } : {};
  if (step.declared) headers["Content-Length"] = step.declared;
  let body = null;
  if (step.json !== undefined || step.raw !== undefined) {
    headers["Content-Type"] = "application/json";
    body = step.raw !== undefined ? step.raw : JSON.stringify(step.json);
  } else if (step.html !== undefined) {
    headers["Content-Type"] = "text/html; charset=utf-8";
    body = step.html;
  }
  const response = new Response(body, { status: step.status, headers });
  (calls.responses ??= []).push(response);
  if (step.redirected) Object.defineProperty(response, "redirected", { value: true });
  if (step.brokenBody) {
    const broken = () => new TypeError("network error: the body stream broke");
    for (const read of ["text", "json"]) {
      Object.defineProperty(response, read, { value: step.brokenBody === "throw"
        ? () => { throw broken(); } : () => Promise.reject(broken()) });
    }
  }
  if (step.stuckBody) {
    for (const read of ["text", "json"]) {
      Object.defineProperty(response, read, { value: () => new Promise(() => {}) });
    }
  }
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

    /// Whether the signal each request got is aborted now.
    fn aborted(&self) -> Vec<bool> {
        let signals = js_sys::Reflect::get(&self.calls, &"signals".into()).unwrap();
        js_sys::Array::from(&signals)
            .iter()
            .map(|s| {
                js_sys::Reflect::get(&s, &"aborted".into())
                    .unwrap()
                    .is_truthy()
            })
            .collect()
    }

    /// Whether the body of each `Response` answered was read.
    fn bodies_used(&self) -> Vec<bool> {
        let responses = js_sys::Reflect::get(&self.calls, &"responses".into()).unwrap();
        js_sys::Array::from(&responses)
            .iter()
            .map(|r| {
                js_sys::Reflect::get(&r, &"bodyUsed".into())
                    .unwrap()
                    .is_truthy()
            })
            .collect()
    }
}

/// A guard signed in as user 1 with a running job `job-1`, sending through `mock`.
fn guard(ns: &str, mock: &MockFetch, extra: Value) -> JobGuard {
    guard_with(ns, mock, js(extra))
}

/// [`guard`] with options that JSON cannot write (`extra` is any JS object).
fn guard_with(ns: &str, mock: &MockFetch, extra: JsValue) -> JobGuard {
    fresh(ns);
    let options = js(json!({ "namespace": ns, "retry": {"baseDelayMs": 1, "maxDelayMs": 5} }));
    js_sys::Object::assign(
        options.unchecked_ref::<js_sys::Object>(),
        extra.unchecked_ref::<js_sys::Object>(),
    );
    js_sys::Reflect::set(&options, &"fetch".into(), &mock.fetch).unwrap();
    let g = JobGuard::new(options).unwrap();
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(js(
        json!({"channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
        "status": "running", "errors": [], "result_url": null}),
    )))
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
async fn headers_given_as_a_headers_object_go_with_the_cancel() {
    // `fetch` takes a `Headers` as well as a plain object, and so do the options (JSON alone
    // would read it as `{}`, and the cancel would go without its CSRF token).
    let mock = MockFetch::new(json!([{ "status": 200 }]));
    let extra = js_sys::Function::new_no_args(
        r#"return { headers: new Headers({ "X-CSRFToken": "tok-h" }) };"#,
    )
    .call0(&JsValue::NULL)
    .unwrap();
    let g = guard_with("c-headers", &mock, extra);
    assert_eq!(cancel(&g, "job-1").await["outcome"], "cancelled");
    assert_eq!(
        mock.calls()[0]["headers"],
        json!({ "x-csrftoken": "tok-h" })
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
    let mock = MockFetch::new(json!([{ "status": 404, "json": {"message": "Job not found"} }]));
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
    g.apply_event(ts(js(
        json!({"channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
        "status": "done", "errors": [], "result_url": "/r"}),
    )))
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
async fn options_it_cannot_take_are_refused_and_nothing_is_sent() {
    let mock = MockFetch::new(json!([{ "status": 200 }]));
    let g = guard("c-options", &mock, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let with = |key: &str, value: JsValue| {
        let options = with_signal(&controller.signal());
        js_sys::Reflect::set(&options, &key.into(), &value).unwrap();
        options
    };
    let refused = [
        // The controller where its signal goes: a cancel the app could never abort.
        (with("signal", controller.clone().into()), "AbortSignal"),
        // A look-alike of a signal.
        (js(json!({ "signal": { "aborted": false } })), "AbortSignal"),
        // The signal given as the options themselves.
        (controller.signal().into(), "plain object"),
        // An unknown key beside a good signal.
        (with("timeoutMs", 5.into()), "timeoutMs"),
        // Not an object.
        (JsValue::from_str("now"), "cancel's options"),
    ];
    for (options, says) in refused {
        let pending = g.cancel("job-1".into(), options);
        let out = rust(&JsFuture::from(pending).await.unwrap());
        assert_eq!(
            (
                &out["outcome"],
                &out["reason"],
                &out["attempts"],
                &out["jobId"]
            ),
            (
                &json!("refused"),
                &json!("invalid_input"),
                &json!(0),
                &json!("job-1")
            ),
            "{out}"
        );
        let message = out["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    assert!(mock.calls().is_empty(), "nothing is sent");
    assert_eq!(status_of(&g, "job-1"), "running");
    // `{ signal: null }` is no signal: the cancel is sent.
    let out = rust(
        &JsFuture::from(g.cancel("job-1".into(), js(json!({ "signal": null }))))
            .await
            .unwrap(),
    );
    assert_eq!(out["outcome"], "cancelled");
    assert_eq!(mock.calls().len(), 1);
    // So are `undefined`, `null`, `{}` and `{ signal: undefined }`: the job has ended now, and
    // each is checked as a cancel, not refused as options.
    let undefined_signal = js_sys::Object::new();
    js_sys::Reflect::set(&undefined_signal, &"signal".into(), &JsValue::UNDEFINED).unwrap();
    for options in [
        JsValue::UNDEFINED,
        JsValue::NULL,
        js(json!({})),
        undefined_signal.into(),
    ] {
        let out = rust(
            &JsFuture::from(g.cancel("job-1".into(), options))
                .await
                .unwrap(),
        );
        assert_eq!(out["reason"], "already_finished", "{out}");
    }
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn an_abort_ends_the_wait_even_when_the_fetch_ignores_its_signal() {
    // The app's fetch answers late whatever the signal says: the abort ends the cancel at once,
    // and the late answer changes nothing.
    let mock = MockFetch::new(json!([{ "status": 403, "lateMs": 40 }]));
    let g = guard("c-late", &mock, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let pending = g.cancel("job-1".into(), with_signal(&controller.signal()));
    sleep(10).await;
    controller.abort();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("aborted"), json!(1))
    );
    sleep(50).await;
    assert_eq!(
        status_of(&g, "job-1"),
        "running",
        "the late answer changed nothing"
    );

    // Nor does a retryable one start the wait it asks for.
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
    // A guard of the same page and namespace: it hears the logout as another tab's (which
    // ends the cancels in flight at once: `aborted`, as the README says).
    let two = JobGuard::new(js(json!({ "namespace": "c-tabs" }))).unwrap();
    let pending = one.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(10).await;
    two.logout().unwrap();
    let out = rust(&JsFuture::from(pending).await.unwrap());
    assert_eq!(out["outcome"], "aborted");
    assert_eq!(out["attempts"], 1);
    assert_eq!(mock.calls().len(), 1);
    // A session that ended where this guard did not hear it (storage changed under it) is
    // found by the check before the next attempt.
    let mock = MockFetch::new(json!([{ "status": 503, "retryAfter": "3600" }, { "status": 200 }]));
    let one = guard(
        "c-tabs-unheard",
        &mock,
        json!({ "retry": { "baseDelayMs": 100, "maxDelayMs": 100 } }),
    );
    let pending = one.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(10).await;
    storage().remove_item("c-tabs-unheard:v1:session").unwrap();
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
    g.record_job(ts(js(
        json!({"channel_id": "chan-1", "job_id": "a/b c", "user_id": "1",
        "status": "pending", "errors": [], "result_url": null}),
    )))
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
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(js(
        json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "running"}),
    )))
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
        assert_guard_error(g.record_job(ts(meta)).thrown(), "invalid_job");
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
    // One outcome object, frozen: neither caller can change what the other reads.
    let shared = js_sys::Reflect::get_u32(&both, 0).unwrap();
    assert!(js_sys::Object::is_frozen(
        shared.unchecked_ref::<js_sys::Object>()
    ));
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
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let mut body = json!({ "task_ids": [TASK], "cursor": "2026-09-01T10:00:00" });
    if let Some(tab) = tab_id {
        body["tab_id"] = json!(tab);
    }
    g.record_tasks(ts(js(body))).unwrap();
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
        // Superset's 422 for a finished task: its status, read back, says so; the record
        // takes it.
        (
            json!({"status": 422, "json": {"message": "Task could not be aborted."}}),
            "already_finished",
            json!("success"),
        ),
        (
            json!({"status": 404, "html": "<!DOCTYPE html><h1>404</h1>"}),
            "unsupported",
            json!("pending"),
        ),
        (json!({"status": 401}), "unauthenticated", json!("pending")),
    ];
    for (i, (answer, outcome, left_status)) in cases.into_iter().enumerate() {
        // The second step answers a status read (after a 422); no other case sends it.
        let mock = MockFetch::new(json!([answer, {"status": 200, "json": {"status": "success"}}]));
        let g = task_guard(&format!("t-answers-{i}"), &mock, Some("t"));
        let out = cancel(&g, TASK).await;
        assert_eq!(out["outcome"], outcome, "{answer}");
        assert_eq!(out["attempts"], 1, "{answer}: never retried");
        let posts = mock
            .calls()
            .iter()
            .filter(|c| c["method"] == "POST")
            .count();
        assert_eq!(posts, 1, "{answer}: one POST");
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
        .apply_event(ts(js(
            json!({"channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
                               "status": "done", "errors": [], "result_url": "/r"}),
        )))
        .unwrap();
    assert_eq!(rust(&done)["status"], "done");
    // A bare 404 (no Content-Type, no body: a dev server's answer to a route it does not
    // have) is not "job not found" either: the job is kept.
    let mock = MockFetch::new(json!([{ "status": 404 }]));
    let g = guard("c-unsupported-bare", &mock, json!({}));
    assert_eq!(cancel(&g, "job-1").await["outcome"], "unsupported");
    assert_eq!(status_of(&g, "job-1"), "running");
    g.logout().unwrap();
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
        .apply_task_status(ts(js(json!({"task_id": TASK, "status": "in_progress"}))))
        .unwrap();
    assert_eq!(rust(&changed)["status"], "in_progress");
    let same = g
        .apply_task_status(ts(js(json!({"task_id": TASK, "status": "in_progress"}))))
        .unwrap();
    assert!(same.is_null());
    let other = "2b1e0c5d-6f7a-4b8c-9d0e-1f2a3b4c5d6e";
    let changed = g
        .apply_status_changes(ts(js(json!({
            "statuses": {TASK: {"status": "success", "progress": 1}, other: {"status": "failure"}},
            "cursor": "2026-09-01T10:00:01"
        }))))
        .unwrap();
    let changed = rust(&changed);
    assert_eq!(changed.as_array().unwrap().len(), 1);
    assert_eq!(changed[0]["status"], "success");
    assert_guard_error(
        g.apply_status_changes(ts(js(json!({"statuses": {TASK: {"status": 5}}}))))
            .thrown(),
        "invalid_job",
    );
    assert_guard_error(
        g.record_tasks(ts(js(json!({"task_ids": [TASK, "not-a-uuid"]}))))
            .thrown(),
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
        rust(&logged_out.expect("logout does not throw"))["purged"],
        json!(1)
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

/// Superset's two 422s for a task (`superset/commands/tasks/cancel.py`,
/// `superset/daos/tasks.py`): the text decides nothing; the task's status, read back once, does.
#[wasm_bindgen_test]
async fn a_tasks_422_reads_its_status_once_and_decides_by_it() {
    let running = format!(
        "Task {TASK} is in progress but has not registered an abort handler (is_abortable is not true)"
    );
    // Still running, no abort handler: a refusal the UI can show; the record kept, running.
    let mock = MockFetch::new(json!([
        { "status": 422, "json": {"message": running} },
        { "status": 200, "json": {"status": "in_progress"} },
        { "status": 200 }
    ]));
    let g = task_guard("t-422-running", &mock, Some("tab-1"));
    let out = cancel(&g, TASK).await;
    assert_eq!(
        (
            out["outcome"].clone(),
            out["reason"].clone(),
            out["httpStatus"].clone()
        ),
        (json!("refused"), json!("not_abortable"), json!(422))
    );
    assert_eq!(out["attempts"], 1);
    assert!(out["message"]
        .as_str()
        .unwrap()
        .contains("cannot be stopped"));
    assert_eq!(status_of(&g, TASK), "in_progress");
    let calls = mock.calls();
    assert_eq!(calls.len(), 2, "one POST, one status read, nothing more");
    assert_eq!(calls[1]["url"], format!("/api/v1/task/{TASK}/status"));
    assert_eq!(calls[1]["method"], "GET");
    assert_eq!(
        calls[1]["headers"],
        json!({"X-CSRFToken": "tok", "content-type": "text/plain"})
    );
    assert_eq!(calls[1]["credentials"], "same-origin");
    assert_eq!(calls[1]["body"], Value::Null);
    assert!(
        rust(&g.check_cancel(TASK.into()).unwrap())["allowed"] == true,
        "it may be cancelled again later"
    );
    g.logout().unwrap();

    // Finished: already_finished, and the record takes the final status.
    let mock = MockFetch::new(json!([
        { "status": 422, "json": {"message": "Task could not be aborted."} },
        { "status": 200, "json": {"status": "failure"} }
    ]));
    let g = task_guard("t-422-done", &mock, None);
    let out = cancel(&g, TASK).await;
    assert_eq!(out["outcome"], "already_finished");
    assert_eq!(status_of(&g, TASK), "failure");
    g.logout().unwrap();

    // No usable answer (a network error, an HTML page, a status the guard does not know, a
    // read that never ends): refused, the record unchanged, no retry of either request.
    for (i, read) in [
        json!("network"),
        json!({ "status": 200, "html": "<html>login</html>" }),
        json!({ "status": 200, "json": {"status": "paused"} }),
        json!({ "status": 404, "json": {"message": "Not found"} }),
        json!("ignore"),
    ]
    .into_iter()
    .enumerate()
    {
        let mock = MockFetch::new(json!([
            { "status": 422, "json": {"message": running} },
            read,
            { "status": 200, "json": {"status": "success"} }
        ]));
        fresh("t-422-none");
        let options =
            js(json!({ "namespace": "t-422-none", "contract": "task", "timeoutMs": 100 }));
        js_sys::Reflect::set(&options, &"fetch".into(), &mock.fetch).unwrap();
        let g = JobGuard::new(options).unwrap();
        g.login(ts(js(json!({ "userId": 1 })))).unwrap();
        g.record_tasks(ts(js(json!({ "task_ids": [TASK] }))))
            .unwrap();
        let out = cancel(&g, TASK).await;
        assert_eq!(
            (out["outcome"].clone(), out["reason"].clone()),
            (json!("refused"), Value::Null),
            "{i}"
        );
        assert_eq!(status_of(&g, TASK), "pending", "{i}");
        assert_eq!(mock.calls().len(), 2, "{i}");
        g.logout().unwrap();
    }
}

#[wasm_bindgen_test]
async fn each_record_is_cancelled_on_its_own_contracts_endpoint() {
    // A default (async_event) guard that recorded a task sends its cancel to the task endpoint,
    // with the task's body, and reads the answer by the task table.
    let mock = MockFetch::new(json!([{ "status": 200, "json": {"action": "detached"} }]));
    let g = guard("c-route", &mock, json!({}));
    g.record_tasks(ts(js(json!({ "task_ids": [TASK], "tab_id": "t1" }))))
        .unwrap();
    let out = cancel(&g, TASK).await;
    assert_eq!(out["outcome"], "left");
    let call = &mock.calls()[0];
    assert_eq!(call["url"], format!("/api/v1/task/{TASK}/cancel"));
    assert_eq!(call["body"], r#"{"tab_id":"t1"}"#);
    g.logout().unwrap();

    // A task guard that recorded an async_event job sends it to the async_event endpoint,
    // without a body.
    let mock = MockFetch::new(json!([{ "status": 200 }]));
    let g = task_guard("c-route-2", &mock, None);
    g.record_job(ts(js(
        json!({"channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
        "status": "running", "errors": [], "result_url": null}),
    )))
    .unwrap();
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (out["outcome"].clone(), out["message"].clone()),
        (json!("cancelled"), json!("Job cancelled"))
    );
    let call = &mock.calls()[0];
    assert_eq!(call["url"], "/api/v1/async_event/job-1/cancel");
    assert_eq!(call["body"], Value::Null);
    assert_eq!(status_of(&g, "job-1"), "cancelled");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_tasks_uuid_as_the_server_spelt_it_names_its_record() {
    let upper = TASK.to_uppercase();
    let mock = MockFetch::new(json!([{ "status": 200, "json": {"action": "aborted"} }]));
    fresh("t-upper");
    let options = js(json!({ "namespace": "t-upper", "contract": "task" }));
    js_sys::Reflect::set(&options, &"fetch".into(), &mock.fetch).unwrap();
    let g = JobGuard::new(options).unwrap();
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_tasks(ts(js(json!({ "task_ids": [upper] }))))
        .unwrap();
    assert_eq!(rust(&g.job(upper.as_str().into()).unwrap())["job_id"], TASK);
    assert_eq!(
        rust(&g.check_cancel(upper.as_str().into()).unwrap())["allowed"],
        true
    );
    let out = cancel(&g, &upper).await;
    assert_eq!(
        (out["outcome"].clone(), out["jobId"].clone()),
        (json!("cancelled"), json!(TASK))
    );
    assert_eq!(
        mock.calls()[0]["url"],
        format!("/api/v1/task/{TASK}/cancel")
    );
    assert_eq!(status_of(&g, TASK), "aborted");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_2xx_that_is_not_the_endpoints_answer_is_no_cancel() {
    // fetch followed a 302 to Superset's login page: signed out, the job runs on.
    let mock = MockFetch::new(json!([
        { "status": 200, "redirected": true, "html": "<!DOCTYPE html><form action=\"/login/\">" }
    ]));
    let g = guard("c-redirect", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("unauthenticated"), json!(1))
    );
    assert_eq!(status_of(&g, "job-1"), "running");
    g.logout().unwrap();
    let mock = MockFetch::new(json!([{ "status": 200, "redirected": true, "html": "<html>" }]));
    let g = task_guard("t-redirect", &mock, None);
    assert_eq!(cancel(&g, TASK).await["outcome"], "unauthenticated");
    assert_eq!(status_of(&g, TASK), "pending");
    g.logout().unwrap();
    // An HTML 200 that was not redirected: failed, not retried, the record kept.
    let mock = MockFetch::new(
        json!([{ "status": 200, "html": "<html>proxy page</html>" }, { "status": 200 }]),
    );
    let g = guard("c-html-200", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (out["outcome"].clone(), out["retryable"].clone()),
        (json!("failed"), json!(false))
    );
    assert_eq!(mock.calls().len(), 1);
    assert_eq!(status_of(&g, "job-1"), "running");
    g.logout().unwrap();
}

/// A guard whose cancels time out after `timeout_ms`.
fn guard_with_timeout(ns: &str, mock: &MockFetch, timeout_ms: u32, attempts: u32) -> JobGuard {
    guard(
        ns,
        mock,
        json!({ "timeoutMs": timeout_ms, "retry": {"attempts": attempts, "baseDelayMs": 1, "maxDelayMs": 5} }),
    )
}

#[wasm_bindgen_test]
async fn cancels_whose_fetch_or_body_never_settles_still_end() {
    // A fetch that ignores its signal: the app's signal, logout() and a user switch end it.
    let mock = MockFetch::new(json!(["ignore", "ignore", "ignore", { "status": 200 }]));
    let g = guard_with_timeout("c-stuck", &mock, 60_000, 1);
    let controller = web_sys::AbortController::new().unwrap();
    let pending = g.cancel("job-1".into(), with_signal(&controller.signal()));
    sleep(10).await;
    controller.abort();
    assert_eq!(
        rust(&JsFuture::from(pending).await.unwrap())["outcome"],
        "aborted"
    );
    // A later cancel of the job is a new one, not the stuck one.
    let pending = g.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(10).await;
    g.logout().unwrap();
    assert_eq!(
        rust(&JsFuture::from(pending).await.unwrap())["outcome"],
        "aborted"
    );
    let g = guard_with_timeout("c-stuck", &mock, 60_000, 1);
    let pending = g.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(10).await;
    g.login(ts(js(json!({ "userId": 2 })))).unwrap();
    assert_eq!(
        rust(&JsFuture::from(pending).await.unwrap())["outcome"],
        "aborted"
    );
    g.logout().unwrap();

    // A logout in another tab (its storage event) ends it too.
    let mock = MockFetch::new(json!(["ignore"]));
    let g = guard_with_timeout("c-stuck-tabs", &mock, 60_000, 1);
    let pending = g.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(10).await;
    let key = "c-stuck-tabs:v1:session";
    let marker = storage().get_item(key).unwrap().unwrap();
    storage().remove_item(key).unwrap();
    js_sys::Function::new_with_args(
        "key, oldValue",
        r#"window.dispatchEvent(new StorageEvent("storage",
             { key, oldValue, newValue: null, storageArea: localStorage }));"#,
    )
    .call2(&JsValue::NULL, &key.into(), &marker.into())
    .unwrap();
    let outcome = JsFuture::from(js_sys::Promise::race(&js_sys::Array::of2(
        &pending,
        &js_sys::Promise::new(&mut |resolve, _| {
            web_sys::window()
                .unwrap()
                .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 2000)
                .unwrap();
        }),
    )))
    .await
    .unwrap();
    assert_eq!(
        rust(&outcome)["outcome"],
        "aborted",
        "ended by the other tab's logout"
    );

    // With nobody to end it, the per-attempt timeout does: a retryable failure, retried.
    let mock = MockFetch::new(json!(["ignore", "ignore"]));
    let g = guard_with_timeout("c-timeout", &mock, 50, 2);
    let started = js_sys::Date::now();
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (
            out["outcome"].clone(),
            out["retryable"].clone(),
            out["attempts"].clone()
        ),
        (json!("failed"), json!(true), json!(2))
    );
    assert!(out["message"].as_str().unwrap().contains("50 ms"));
    assert!(js_sys::Date::now() - started < 5000.0);
    assert_eq!(status_of(&g, "job-1"), "running");
    g.logout().unwrap();

    // A Response whose body never arrives: the same, for an answer the outcome reads.
    let mock = MockFetch::new(json!([
        { "status": 200, "json": {"action": "aborted"}, "stuckBody": true },
        { "status": 404, "json": {"message": "gone"}, "stuckBody": true }
    ]));
    let g = task_guard("t-stuck-body", &mock, None);
    fresh("t-stuck-body");
    let options = js(
        json!({ "namespace": "t-stuck-body", "contract": "task", "timeoutMs": 50,
                             "retry": {"attempts": 2, "baseDelayMs": 1, "maxDelayMs": 5} }),
    );
    js_sys::Reflect::set(&options, &"fetch".into(), &mock.fetch).unwrap();
    drop(g);
    let g = JobGuard::new(options).unwrap();
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_tasks(ts(js(json!({ "task_ids": [TASK] }))))
        .unwrap();
    let out = cancel(&g, TASK).await;
    assert_eq!(
        (
            out["outcome"].clone(),
            out["retryable"].clone(),
            out["attempts"].clone()
        ),
        (json!("failed"), json!(true), json!(2))
    );
    assert_eq!(status_of(&g, TASK), "pending");
    g.logout().unwrap();
}

/// `[[[…1…]]]`, `depth` arrays deep, as JSON text.
fn nested_text(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

#[wasm_bindgen_test]
async fn answers_nested_thousands_deep_are_classified_cleanly() {
    let deep = nested_text(6000);
    let task_200 = format!(r#"{{"message": {deep}, "action": "aborted"}}"#);
    let task_200_action = format!(r#"{{"message": "ok", "action": {deep}}}"#);
    for (i, body) in [task_200, task_200_action].into_iter().enumerate() {
        let mock = MockFetch::new(json!([{ "status": 200, "raw": body }]));
        let g = task_guard(&format!("t-deep-{i}"), &mock, None);
        let out = cancel(&g, TASK).await;
        assert_eq!(
            (out["outcome"].clone(), out["retryable"].clone()),
            (json!("failed"), json!(false)),
            "{i}"
        );
        assert_eq!(status_of(&g, TASK), "pending");
        g.logout().unwrap();
    }
    let async_body = format!(r#"{{"message": {deep}}}"#);
    for (status, outcome) in [(200, "failed"), (404, "unsupported")] {
        let mock = MockFetch::new(json!([{ "status": status, "raw": async_body }]));
        let g = guard("c-deep", &mock, json!({}));
        let out = cancel(&g, "job-1").await;
        assert_eq!(out["outcome"], outcome, "{status}");
        assert_eq!(status_of(&g, "job-1"), "running");
        g.logout().unwrap();
    }
    // classifyCancelResponse: a text body or a parsed one, thousands deep: a classification.
    let text = classify_cancel_response(
        JsValue::from_f64(200.0),
        "task".into(),
        format!(r#"{{"action": {deep}}}"#).into(),
    )
    .unwrap();
    assert_eq!(rust(&text)["outcome"], "failed");
    let parsed =
        js_sys::JSON::parse(&format!(r#"{{"action": "detached", "message": {deep}}}"#)).unwrap();
    let parsed = classify_cancel_response(JsValue::from_f64(404.0), "task".into(), parsed).unwrap();
    assert_eq!(rust(&parsed)["outcome"], "unsupported");
    // An overlong body is not read.
    let long = format!(
        r#"{{"action": "aborted", "pad": "{}"}}"#,
        "x".repeat(70_000)
    );
    let long =
        classify_cancel_response(JsValue::from_f64(200.0), "task".into(), long.into()).unwrap();
    assert_eq!(rust(&long)["outcome"], "failed");
}

#[wasm_bindgen_test]
fn header_values_fetch_would_refuse_are_invalid_options() {
    for value in ["caf\u{e9} \u{2713}", "\u{1F600}"] {
        let options = js(json!({ "headers": { "X-CSRFToken": value } }));
        assert_guard_error(JobGuard::new(options).err().unwrap(), "invalid_options");
    }
    let latin1 = js(json!({ "headers": { "X-Name": "caf\u{e9}" }, "timeoutMs": 2500 }));
    assert!(JobGuard::new(latin1).is_ok());
    assert_guard_error(
        JobGuard::new(js(json!({ "timeoutMs": 0 }))).err().unwrap(),
        "invalid_options",
    );
}

#[wasm_bindgen_test]
async fn an_attempt_that_runs_out_of_time_is_aborted_before_the_next_leaves() {
    let mock = MockFetch::new(json!(["ignore", "ignore", { "status": 200 }]));
    let g = guard(
        "c-attempt-abort",
        &mock,
        json!({ "timeoutMs": 60, "retry": { "attempts": 3, "baseDelayMs": 1, "maxDelayMs": 5 } }),
    );
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (out["outcome"].clone(), out["attempts"].clone()),
        (json!("cancelled"), json!(3))
    );
    // The two that never answered were aborted; each request had a signal of its own.
    assert_eq!(mock.aborted()[..2], [true, true]);
    let signals =
        js_sys::Array::from(&js_sys::Reflect::get(&mock.calls, &"signals".into()).unwrap());
    assert!(!js_sys::Object::is(&signals.get(0), &signals.get(1)));
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_2xx_whose_body_breaks_is_the_servers_yes() {
    // async_event: the status decides; the record is cancelled, and nothing is sent again.
    for broken in ["throw", "reject"] {
        let mock = MockFetch::new(json!([
            { "status": 200, "json": {"message": "OK"}, "brokenBody": broken }
        ]));
        let g = guard(&format!("c-broken-{broken}"), &mock, json!({}));
        let out = cancel(&g, "job-1").await;
        assert_eq!(
            (
                out["outcome"].clone(),
                out["httpStatus"].clone(),
                out["attempts"].clone()
            ),
            (json!("cancelled"), json!(200), json!(1)),
            "{broken}"
        );
        assert_eq!(status_of(&g, "job-1"), "cancelled", "{broken}");
        g.logout().unwrap();
    }
    // task: the action was in the body; the task's status, read back, says what happened.
    for (read_back, outcome, left) in [
        (json!("aborted"), "cancelled", json!("aborted")),
        (json!("in_progress"), "left", json!("in_progress")),
        (json!("success"), "already_finished", json!("success")),
    ] {
        let mock = MockFetch::new(json!([
            { "status": 200, "json": {"action": "aborted"}, "brokenBody": "reject" },
            { "status": 200, "json": {"status": read_back} }
        ]));
        let g = task_guard(&format!("t-broken-{read_back}"), &mock, None);
        let out = cancel(&g, TASK).await;
        assert_eq!(out["outcome"], outcome, "{read_back}");
        assert_eq!(out["httpStatus"], 200, "{read_back}");
        let calls = mock.calls();
        assert_eq!(calls.len(), 2, "{read_back}: the cancel, then the status");
        assert!(calls[1]["url"].as_str().unwrap().ends_with("/status"));
        assert_eq!(status_of(&g, TASK), left, "{read_back}");
        g.logout().unwrap();
    }
}

#[wasm_bindgen_test]
async fn supersets_own_403_body_is_not_job_owner_never_retried() {
    // Flask-AppBuilder's `response_403()`: `{"message": "Forbidden"}`, not the seed's text.
    let mock = MockFetch::new(json!([
        { "status": 403, "json": {"message": "Forbidden"} }, { "status": 200 }
    ]));
    let g = guard(
        "c-403-forbidden",
        &mock,
        json!({ "retry": { "attempts": 5, "baseDelayMs": 1 } }),
    );
    let out = cancel(&g, "job-1").await;
    assert_eq!(
        (
            out["outcome"].clone(),
            out["retryable"].clone(),
            out["attempts"].clone()
        ),
        (json!("not_job_owner"), json!(false), json!(1))
    );
    assert_eq!(mock.calls().len(), 1, "403 is never retried");
    assert_eq!(status_of(&g, "job-1"), Value::Null);
}

/// An answer decided by its status (a 403's body is not needed) is not aborted once it came: its
/// body is read to its end, so the browser's network log shows the 403, not a failed request.
/// A 503 retried is let end the same way before the next attempt leaves.
#[wasm_bindgen_test]
async fn an_answer_decided_by_its_status_is_read_to_its_end_not_aborted() {
    let mock = MockFetch::new(json!([
        { "status": 503, "html": "<h1>busy</h1>" },
        { "status": 403, "json": {"message": "Not authorized to cancel this job"} }
    ]));
    let g = guard("c-unread-403", &mock, json!({ "retry": { "attempts": 2 } }));
    let out = cancel(&g, "job-1").await;
    assert_eq!(out["outcome"], "not_job_owner");
    until(1_000, || mock.bodies_used() == [true, true]).await;
    assert_eq!(mock.bodies_used(), [true, true]);
    assert_eq!(mock.aborted(), [false, false]);
    g.logout().unwrap();
}

/// A body not needed that does not end, or that declares more than an answer the guard reads,
/// holds no connection: the first is aborted after UNREAD_BODY_MS (2 s), the second at once.
#[wasm_bindgen_test]
async fn an_unneeded_body_that_does_not_end_or_is_long_is_aborted() {
    let mock = MockFetch::new(json!([{ "status": 403, "json": {}, "stuckBody": true }]));
    let g = guard("c-unread-stuck", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(out["outcome"], "not_job_owner");
    sleep(1_000).await;
    assert_eq!(mock.aborted(), [false], "its body may still come");
    until(2_500, || mock.aborted() == [true]).await;
    assert_eq!(mock.aborted(), [true]);
    g.logout().unwrap();

    let mock = MockFetch::new(json!([
        { "status": 403, "json": {}, "declared": "900000000" }
    ]));
    let g = guard("c-unread-long", &mock, json!({}));
    let out = cancel(&g, "job-1").await;
    assert_eq!(out["outcome"], "not_job_owner");
    assert_eq!(mock.aborted(), [true]);
    assert_eq!(mock.bodies_used(), [false]);
    g.logout().unwrap();
}
