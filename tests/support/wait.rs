//! The stand-in server and helpers of the `waitFor` browser tests (`wait.rs`, `wait_ends.rs`).
#![allow(dead_code)] // each test file uses its own subset

use serde_json::{json, Value};
use superset_job_guard::web::JobGuard;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use super::*;

/// The server: `state.statuses` (task uuid -> status) is what `status_changes` and a task's
/// status answer; `state.reasons` (uuid -> `semantic_result_error`); `state.unauthorized`
/// makes `status_changes` answer 401; a cancel of a task in `state.hang` never answers; every
/// request goes to `requests` as `{ method, url, body, keepalive, csrf }`.
pub const SERVER: &str = r#"
const requests = log;
const json = (body, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
return async function fetch(url, init = {}) {
  url = String(url);
  const headers = init.headers ?? {};
  requests.push({ method: init.method ?? "GET", url, body: init.body ?? null,
                  keepalive: init.keepalive === true, csrf: headers["X-CSRFToken"] ?? null });
  const { pathname } = new URL(url, "http://superset.test");
  if (pathname === "/api/v1/task/status_changes") {
    if (state.unauthorized) return json({ msg: "Token has expired" }, 401);
    const statuses = {};
    for (const [id, status] of Object.entries(state.statuses)) statuses[id] = { status, progress: 0 };
    return json({ statuses, cursor: "2026-12-06T10:00:00+00:00" });
  }
  const status = pathname.match(/^\/api\/v1\/task\/([^/]+)\/status$/);
  if (status) return json({ status: state.statuses[status[1]] });
  const task = pathname.match(/^\/api\/v1\/task\/([0-9a-f-]{36})$/);
  if (task && state.reasons?.[task[1]] !== undefined) {
    return json({ result: { uuid: task[1], status: "failure", semantic_result_error: state.reasons[task[1]] } });
  }
  const cancel = pathname.match(/^\/api\/v1\/task\/([^/]+)\/cancel$/);
  if (cancel && init.method === "POST") {
    if (state.hang?.includes(cancel[1])) return new Promise(() => {});
    state.statuses[cancel[1]] = "aborted";
    return json({ message: "Task cancelled", task: { uuid: cancel[1] }, action: "aborted" });
  }
  const job = pathname.match(/^\/api\/v1\/async_event\/([^/]+)\/cancel$/);
  if (job && init.method === "POST") return json({ result: { job_id: job[1], status: "cancelled" } });
  if (pathname === "/api/v1/async_event/") return json({ result: [] });
  return new Response("not here", { status: 404 });
};
"#;

pub struct Server {
    pub fetch: js_sys::Function,
    pub state: JsValue,
    pub requests: js_sys::Array,
}

impl Server {
    pub fn new(statuses: Value) -> Self {
        let requests = js_sys::Array::new();
        let state = js(json!({ "statuses": statuses }));
        let fetch = scripted_fetch(SERVER, &state, &requests);
        Self {
            fetch,
            state,
            requests,
        }
    }

    pub fn set_status(&self, task: &str, status: &str) {
        let statuses = js_sys::Reflect::get(&self.state, &"statuses".into()).unwrap();
        js_sys::Reflect::set(&statuses, &task.into(), &status.into()).unwrap();
    }

    pub fn set(&self, key: &str, value: Value) {
        js_sys::Reflect::set(&self.state, &key.into(), &js(value)).unwrap();
    }

    /// The POSTs the server received.
    pub fn posts(&self) -> Vec<Value> {
        self.requests
            .iter()
            .map(|r| rust(&r))
            .filter(|r| r["method"] == "POST")
            .collect()
    }

    pub fn count(&self) -> usize {
        self.requests.length() as usize
    }
}

pub const T1: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01";
pub const T2: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c02";

pub fn guard(ns: &str, server: &Server, extra: Value) -> JobGuard {
    super::guard_over(ns, &server.fetch, json!({ "contract": "task" }), extra)
}

/// `waitFor(input, options)` as JS calls it; its promise.
pub fn wait(g: &JobGuard, input: Value, options: JsValue) -> js_sys::Promise {
    g.wait_for(js(input), options)
}

pub fn with_signal(controller: &web_sys::AbortController, extra: Value) -> JsValue {
    let options = js(extra);
    js_sys::Reflect::set(&options, &"signal".into(), &controller.signal()).unwrap();
    options
}

pub async fn settled(promise: js_sys::Promise) -> Value {
    rust(
        &JsFuture::from(promise)
            .await
            .expect("waitFor never rejects"),
    )
}

/// Whether the promise has settled, after the microtasks and timers that are due.
pub async fn has_settled(promise: &js_sys::Promise) -> bool {
    let marker = JsValue::from_str("pending");
    let race = js_sys::Promise::race(&js_sys::Array::of2(
        promise,
        &js_sys::Promise::resolve(&marker),
    ));
    let first = JsFuture::from(race).await.unwrap();
    first != marker
}

pub fn pagehide(persisted: bool) {
    let init = web_sys::PageTransitionEventInit::new();
    init.set_persisted(persisted);
    let event = web_sys::PageTransitionEvent::new_with_event_init_dict("pagehide", &init).unwrap();
    web_sys::window().unwrap().dispatch_event(&event).unwrap();
}
