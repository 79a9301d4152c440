//! Browser tests (Chromium and Firefox) of `JobGuard.query()` against a stand-in of Superset's
//! chart-data endpoints behind an injected `fetch`, each answer it can give: synchronous (with
//! and without the stop endpoint), 6.1.0's async_event job read at its `result_url`, the task
//! framework's tasks asked again for the warm cache, `401`, `403`, errors; and each way a query
//! is stopped: its signal, a logout in this tab or another, a user switch, the page's end.
#![cfg(all(target_arch = "wasm32", feature = "follow"))]

use serde_json::{json, Value};
use superset_job_guard::web::JobGuard;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::wait::{pagehide, T1};
use support::*;

/// The server. `state.modes` (shifted per chart-data POST, else `state.mode`) says how it
/// answers: `sync` (200 `state.result`), `hang` (until aborted, or `state.release()`), `tasks`
/// (202 `{task_ids: [T1]}`; then `status_changes` says `state.task`), `job` (202 job metadata;
/// its event stream says `state.job`), or a status number. `state.noStop` makes the stop
/// endpoint an HTML 404 (a Superset without it; `405`: 6.1.0's, whose `OPTIONS` answers an
/// `Allow` without `POST`), `state.stopDelayMs` delays its answer to a real stop,
/// `state.stopHang` never gives one; the guard's `OPTIONS` question is counted in
/// `state.probes`, and a stop of a `client_id` no request carried is a 200.
/// `state.strict` refuses a body with a field 6.1.0's schema does not know (a 400).
const SERVER: &str = r#"
const requests = log;
const json = (body, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
state.stopped = [];
state.endedAtStop = [];
state.seen = [];
state.probes = [];
return async function fetch(url, init = {}) {
  url = String(url);
  const method = init.method ?? "GET";
  let body = null;
  try { body = init.body ? JSON.parse(init.body) : null; } catch {}
  const headers = init.headers ?? {};
  requests.push({ method, url, body, keepalive: init.keepalive === true, csrf: headers["X-CSRFToken"] ?? null });
  const { pathname } = new URL(url, "http://superset.test");
  // The task framework switched off: every task route answers a JSON 404, chart data a 200.
  if (state.tasksOff && pathname.startsWith("/api/v1/task/")) return json({ message: "Not found" }, 404);
  // A role without the Task permissions: 403 from status_changes and from cancel.
  if (state.noTaskRole && pathname.startsWith("/api/v1/task/")) return json({ message: "Forbidden" }, 403);
  // The guard's question whether the stop endpoint is there: which methods the URL takes.
  if (pathname === "/api/v1/chart/data/stop" && method === "OPTIONS") {
    state.probes.push("OPTIONS");
    if (state.noStop === true) return new Response("<html>Not Found</html>", { status: 404, headers: { "Content-Type": "text/html" } });
    return new Response(null, { status: 200, headers: { Allow: state.noStop === 405 ? "OPTIONS, HEAD, GET" : "POST, OPTIONS" } });
  }
  if (pathname === "/api/v1/chart/data/stop" && method === "POST") {
    if (state.noStop) return new Response("<html>no</html>", { status: state.noStop === 405 ? 405 : 404, headers: { "Content-Type": "text/html" } });
    // A client_id no chart-data request carried: nothing to stop (200, as main answers a miss).
    if (!state.seen.includes(body?.client_id)) return json({ message: "No query to stop" });
    if (state.stopHang) return new Promise(() => {});
    if (state.stopDelayMs) await new Promise((r) => setTimeout(r, state.stopDelayMs));
    state.stopped.push(body?.client_id);
    // Whether the request it stops was ended already (its answer, the stop's, not waited for).
    state.endedAtStop.push(state.hanging?.aborted ?? null);
    state.release?.();
    return json({ message: "Query stopped" });
  }
  if (pathname === "/api/v1/chart/data" && method === "POST") {
    // 6.1.0's and 7.0's schema: a field it does not know is a 400, the query not run.
    const known = ["datasource", "queries", "force", "result_type", "result_format", "form_data", "custom_cache_timeout", "tab_id"];
    const unknown = Object.keys(body ?? {}).filter((k) => !known.includes(k));
    if (state.strict && unknown.length) {
      return json({ message: `Request is incorrect: {'${unknown[0]}': ['Unknown field.']}` }, 400);
    }
    if (typeof body?.client_id === "string") state.seen.push(body.client_id);
    const mode = state.tasksOff ? "sync" : state.modes?.length ? state.modes.shift() : state.mode;
    if (mode === "sync") return json(state.result);
    if (mode === "hang") {
      state.hanging = init.signal ?? null;
      return new Promise((resolve, reject) => {
        state.release = () => resolve(json({ message: "canceled" }, 500));
        init.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      });
    }
    if (mode === "late") {
      return new Promise((resolve) => { state.release = () => resolve(json(state.result)); });
    }
    // Superset accepting the query 150 ms after it came (an abort before that rejects it).
    if (mode === "slow202") {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve(json({ channel_id: "c1", job_id: "job-slow", user_id: "1", status: "pending", errors: [], result_url: null }, 202)), 150);
        init.signal?.addEventListener("abort", () => { clearTimeout(timer); reject(new DOMException("aborted", "AbortError")); });
      });
    }
    // A 202 that comes whenever the test says, whatever the signal did.
    if (mode === "late202") {
      return new Promise((resolve) => {
        state.release = () => resolve(json({ channel_id: "c1", job_id: "job-late", user_id: "1", status: "pending", errors: [], result_url: null }, 202));
      });
    }
    if (mode === "tasks") return json({ task_ids: [state.taskId], cursor: "2026-12-06T10:00:00", tab_id: body?.tab_id }, 202);
    if (mode === "job") {
      return json({ channel_id: "c1", job_id: "job-1", user_id: "1", status: "pending", errors: [], result_url: null }, 202);
    }
    if (typeof mode === "number") return json(state.errorBody ?? { message: "no" }, mode);
  }
  if (pathname === "/api/v1/task/status_changes") {
    return json({ statuses: { [state.taskId]: { status: state.task ?? "pending", progress: 0 } }, cursor: "2026-12-06T10:00:01" });
  }
  const status = pathname.match(/^\/api\/v1\/task\/([^/]+)\/status$/);
  if (status) return json({ status: state.task ?? "pending" });
  const cancel = pathname.match(/^\/api\/v1\/task\/([^/]+)\/cancel$/);
  if (cancel && method === "POST") { state.task = "aborted"; return json({ message: "Task cancelled", action: "aborted", task: { uuid: cancel[1] } }); }
  if (pathname === "/api/v1/async_event/") {
    if (!state.job) return json({ result: [] });
    return json({ result: [{ id: "1-0", channel_id: "c1", job_id: "job-1", user_id: "1", status: state.job,
                             errors: [], result_url: state.job === "done" ? "/api/v1/chart/data/qc-1" : null }] });
  }
  if (pathname === "/api/v1/chart/data/qc-1" && method === "GET") return json(state.result);
  const jobCancel = pathname.match(/^\/api\/v1\/async_event\/([^/]+)\/cancel$/);
  if (jobCancel && method === "POST") return json({ result: { job_id: jobCancel[1], status: "cancelled" } });
  return new Response("not here", { status: 404 });
};
"#;

struct Server {
    fetch: js_sys::Function,
    state: JsValue,
    requests: js_sys::Array,
}

impl Server {
    fn new(state: Value) -> Self {
        let requests = js_sys::Array::new();
        let state = js(state);
        let fetch = scripted_fetch(SERVER, &state, &requests);
        Self {
            fetch,
            state,
            requests,
        }
    }

    fn set(&self, key: &str, value: Value) {
        js_sys::Reflect::set(&self.state, &key.into(), &js(value)).unwrap();
    }

    fn release(&self) {
        let release = js_sys::Reflect::get(&self.state, &"release".into()).unwrap();
        release
            .dyn_into::<js_sys::Function>()
            .unwrap()
            .call0(&JsValue::NULL)
            .unwrap();
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.iter().map(|r| rust(&r)).collect()
    }

    /// A list the server keeps in its state (`stopped`, `probes`, `seen`).
    fn list(&self, key: &str) -> Vec<Value> {
        let value = js_sys::Reflect::get(&self.state, &key.into()).unwrap();
        rust(&value).as_array().cloned().unwrap_or_default()
    }

    fn to(&self, path: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r["url"]
                    .as_str()
                    .is_some_and(|u| u.split('?').next() == Some(path))
            })
            .collect()
    }
}

fn guard(ns: &str, server: &Server, extra: Value) -> JobGuard {
    guard_over(ns, &server.fetch, json!({}), extra)
}

const BODY: &str = r#"{"datasource": {"id": 1, "type": "table"}, "queries": [{"columns": ["region"]}], "result_type": "full"}"#;

fn body() -> JsValue {
    js_sys::JSON::parse(BODY).unwrap()
}

fn query(g: &JobGuard, options: Value) -> js_sys::Promise {
    g.query(body(), js(options))
}

fn with_signal(controller: &web_sys::AbortController, extra: Value) -> JsValue {
    let options = js(extra);
    js_sys::Reflect::set(&options, &"signal".into(), &controller.signal()).unwrap();
    options
}

async fn settled(promise: js_sys::Promise) -> (Value, JsValue) {
    let outcome = JsFuture::from(promise).await.expect("query never rejects");
    let result = js_sys::Reflect::get(&outcome, &"result".into()).unwrap();
    (rust(&outcome), result)
}

fn result() -> Value {
    json!({ "result": [{ "data": [{ "region": "EMEA", "sales": 1.5 }], "rowcount": 1, "colnames": ["region", "sales"] }] })
}

#[wasm_bindgen_test]
async fn a_synchronous_answer_is_done_with_the_servers_json_exactly_and_the_client_id_sent() {
    let ns = fresh("q-sync");
    let server = Server::new(json!({ "mode": "sync", "result": result() }));
    let g = guard(&ns, &server, json!({}));
    let (outcome, got) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert_eq!(rust(&got), result());
    let posts = server.to("/api/v1/chart/data");
    assert_eq!(posts.len(), 1);
    let sent = &posts[0]["body"];
    assert_eq!(sent["datasource"]["id"], 1, "the app's body, as it was");
    assert_eq!(sent["client_id"], outcome["clientId"]);
    assert!(
        sent.get("tab_id").is_none(),
        "no tab id on the async_event contract"
    );
    assert_eq!(posts[0]["csrf"], "csrf-1");
}

#[wasm_bindgen_test]
async fn tasks_are_waited_for_and_the_warm_cache_read_with_the_tab_id_sent() {
    let ns = fresh("q-tasks");
    let server =
        Server::new(json!({ "modes": ["tasks", "sync"], "taskId": T1, "result": result() }));
    let g = guard(
        &ns,
        &server,
        json!({ "contract": "task", "tabId": "tab-q" }),
    );
    let _stop = g
        .follow(js(json!({ "intervalMs": 100, "maxIntervalMs": 200 })))
        .unwrap();
    let promise = query(&g, json!({}));
    sleep(300).await;
    server.set("task", json!("success"));
    let (outcome, got) = settled(promise).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert_eq!(outcome["jobIds"], json!([T1]));
    assert_eq!(rust(&got), result());
    let posts = server.to("/api/v1/chart/data");
    assert_eq!(
        posts.len(),
        2,
        "the query, then the same again for the warm cache"
    );
    assert_eq!(posts[0]["body"]["tab_id"], "tab-q");
    assert_eq!(posts[1]["body"], posts[0]["body"]);
}

#[wasm_bindgen_test]
async fn a_job_is_waited_for_and_its_result_url_read() {
    let ns = fresh("q-job");
    let server = Server::new(json!({ "mode": "job", "result": result() }));
    let g = guard(&ns, &server, json!({}));
    let _stop = g
        .follow(js(json!({ "intervalMs": 100, "maxIntervalMs": 200 })))
        .unwrap();
    let promise = query(&g, json!({}));
    sleep(300).await;
    server.set("job", json!("done"));
    let (outcome, got) = settled(promise).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert_eq!(rust(&got), result());
    assert_eq!(server.to("/api/v1/chart/data/qc-1").len(), 1);
}

#[wasm_bindgen_test]
async fn errors_401_and_403_settle_as_themselves_and_nothing_is_retried() {
    for (status, outcome_kind, reason) in [
        (401, "unauthenticated", Value::Null),
        (403, "refused", json!("forbidden")),
        (400, "failed", Value::Null),
        (500, "failed", Value::Null),
    ] {
        let ns = fresh("q-errors");
        let server = Server::new(json!({ "mode": status,
            "errorBody": { "errors": [{ "message": "relation \"x\" does not exist", "error_type": "GENERIC_DB_ENGINE_ERROR" }] } }));
        let g = guard(&ns, &server, json!({}));
        let (outcome, got) = settled(query(&g, json!({}))).await;
        assert_eq!(outcome["outcome"], outcome_kind, "{status}: {outcome}");
        assert_eq!(outcome["reason"], reason, "{status}");
        assert_eq!(outcome["httpStatus"], status);
        assert!(got.is_null());
        // A 400 to a body with the guard's client_id is sent once more without it (the
        // server may refuse the field alone); nothing else is sent twice.
        let posts = server.to("/api/v1/chart/data");
        let expected = if status == 400 { 2 } else { 1 };
        assert_eq!(posts.len(), expected, "{status}: not retried");
        assert!(posts[expected - 1]["body"].get("client_id").is_none() == (status == 400));
        if outcome_kind == "failed" {
            assert_eq!(
                outcome["errors"][0]["error_type"],
                "GENERIC_DB_ENGINE_ERROR"
            );
        }
    }
}

#[wasm_bindgen_test]
async fn an_aborted_synchronous_query_is_stopped_by_its_client_id_and_a_server_without_the_endpoint_is_asked_once(
) {
    let ns = fresh("q-stop");
    let server = Server::new(json!({ "mode": "hang" }));
    let g = guard(&ns, &server, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let promise = g.query(body(), with_signal(&controller, json!({})));
    sleep(100).await;
    controller.abort();
    let (outcome, _) = settled(promise).await;
    assert_eq!(outcome["outcome"], "aborted", "{outcome}");
    assert_eq!(outcome["reason"], "signal");
    assert_eq!(outcome["stop"], "stopped");
    let stops = server.to("/api/v1/chart/data/stop");
    assert_eq!(
        stops.len(),
        2,
        "the question whether it is there, then the stop"
    );
    assert_eq!(server.list("probes").len(), 1);
    assert_eq!(stops[1]["body"]["client_id"], outcome["clientId"]);
    assert_eq!(server.list("stopped"), vec![outcome["clientId"].clone()]);
    assert_eq!(stops[1]["csrf"], "csrf-1");

    // The endpoint gone (an HTML 404): `unsupported`, and not asked again.
    server.set("noStop", json!(true));
    for expected_stops in [3, 3] {
        let controller = web_sys::AbortController::new().unwrap();
        let promise = g.query(body(), with_signal(&controller, json!({})));
        sleep(100).await;
        controller.abort();
        let (outcome, _) = settled(promise).await;
        assert_eq!(outcome["stop"], "unsupported", "{outcome}");
        assert_eq!(server.to("/api/v1/chart/data/stop").len(), expected_stops);
    }
}

/// A stopped request to a URL that has answered synchronously is ended before its stop leaves
/// (its answer is the stop's 400, which would reach the browser's console); before the URL has
/// answered, it stays in flight for a late `202` (next test).
#[wasm_bindgen_test]
async fn a_stopped_synchronous_request_is_ended_before_its_stop_once_the_url_is_known_synchronous()
{
    let ns = fresh("q-ended");
    let server = Server::new(json!({ "modes": ["hang", "sync", "hang"], "result": result() }));
    let g = guard(&ns, &server, json!({}));
    for expected in [json!([false]), Value::Null, json!([false, true])] {
        let controller = web_sys::AbortController::new().unwrap();
        let promise = g.query(body(), with_signal(&controller, json!({})));
        if expected.is_null() {
            let (outcome, _) = settled(promise).await;
            assert_eq!(outcome["outcome"], "done", "{outcome}");
            continue;
        }
        sleep(100).await;
        controller.abort();
        let (outcome, _) = settled(promise).await;
        assert_eq!(outcome["stop"], "stopped", "{outcome}");
        assert_eq!(Value::Array(server.list("endedAtStop")), expected);
    }
}

/// Superseded while Superset is accepting it: the request is left in flight for its answer, and
/// the job the 202 names is cancelled (it would run on otherwise), never recorded; a logout's
/// `stopped` waits for that cancel.
#[wasm_bindgen_test]
async fn a_query_stopped_while_superset_accepts_it_has_its_job_cancelled() {
    let ns = fresh("q-accepting");
    let server = Server::new(json!({ "mode": "slow202" }));
    let g = guard(&ns, &server, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let promise = g.query(body(), with_signal(&controller, json!({})));
    sleep(60).await;
    controller.abort();
    let (outcome, _) = settled(promise).await;
    assert_eq!(outcome["reason"], "signal", "{outcome}");
    until(2_000, || {
        !server.to("/api/v1/async_event/job-slow/cancel").is_empty()
    })
    .await;
    assert_eq!(server.to("/api/v1/async_event/job-slow/cancel").len(), 1);
    assert_eq!(rust(&g.jobs().unwrap()), json!([]));

    let promise = query(&g, json!({}));
    sleep(60).await;
    let result = JsValue::from(g.logout().unwrap());
    let stopped: js_sys::Promise = js_sys::Reflect::get(&result, &"stopped".into())
        .unwrap()
        .dyn_into()
        .unwrap();
    JsFuture::from(stopped).await.unwrap();
    assert_eq!(
        server.to("/api/v1/async_event/job-slow/cancel").len(),
        2,
        "sent before stopped settles"
    );
    assert_eq!(settled(promise).await.0["reason"], "logout");
}

/// A guard of the async_event contract given the task framework's 202 (no `contract: "task"`):
/// it would never hear the task end, so the query is refused at once, saying which option to
/// change, and its task is cancelled.
#[wasm_bindgen_test]
async fn tasks_on_a_guard_of_the_other_stream_are_refused_at_once_and_cancelled() {
    let ns = fresh("q-stream");
    let server = Server::new(json!({ "mode": "tasks", "taskId": T1 }));
    let g = guard(&ns, &server, json!({}));
    let start = js_sys::Date::now();
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert!(js_sys::Date::now() - start < 2_000.0);
    assert_eq!(outcome["outcome"], "refused", "{outcome}");
    assert_eq!(outcome["reason"], "unsupported");
    assert!(
        outcome["message"].as_str().unwrap().contains("contract"),
        "{outcome}"
    );
    until(1_000, || {
        !server.to(&format!("/api/v1/task/{T1}/cancel")).is_empty()
    })
    .await;
    assert_eq!(server.to(&format!("/api/v1/task/{T1}/cancel")).len(), 1);
    // waitFor on the same body says the same.
    let body = js(json!({ "task_ids": [T1], "cursor": "2026-12-06T10:00:00" }));
    let waited = rust(
        &JsFuture::from(g.wait_for(body, JsValue::UNDEFINED))
            .await
            .unwrap(),
    );
    assert_eq!(waited["reason"], "unsupported", "{waited}");
}

/// The guard asks the stop URL once, whatever happens to the query that first needed the
/// answer: queries stopped at once do not make it ask again.
#[wasm_bindgen_test]
async fn the_stop_url_is_asked_once_even_when_the_first_queries_are_stopped_at_once() {
    let ns = fresh("q-once");
    let server = Server::new(json!({ "mode": "sync", "result": result() }));
    let g = guard(&ns, &server, json!({}));
    for n in 0..3 {
        let controller = web_sys::AbortController::new().unwrap();
        let promise = g.query(body(), with_signal(&controller, json!({})));
        controller.abort();
        let (outcome, _) = settled(promise).await;
        assert_eq!(outcome["outcome"], "aborted", "{outcome}");
        if n == 0 {
            // Stopped while the question was out: nothing of it left.
            assert_eq!(outcome["stop"], "not_sent", "{outcome}");
        }
    }
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert_eq!(server.list("probes").len(), 1, "{:?}", server.requests());
    let asked = server.to("/api/v1/chart/data/stop");
    assert_eq!(
        asked.iter().filter(|r| r["method"] == "OPTIONS").count(),
        1,
        "{asked:?}"
    );
}

/// A signal's stop leaves in the abort's own tick: before the request the app sends next (a new
/// filter's query), so that a browser's queue of requests per server does not hold it back.
#[wasm_bindgen_test]
async fn a_signals_stop_leaves_before_the_apps_next_query() {
    let ns = fresh("q-order");
    let server = Server::new(json!({ "mode": "hang" }));
    let g = guard(&ns, &server, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let first = g.query(body(), with_signal(&controller, json!({})));
    sleep(100).await;
    controller.abort();
    let next = query(&g, json!({}));
    let (outcome, _) = settled(first).await;
    assert_eq!(outcome["stop"], "stopped", "{outcome}");
    let order: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| r["url"].as_str().map(str::to_owned))
        .collect();
    let stop = order
        .iter()
        .rposition(|u| u == "/api/v1/chart/data/stop")
        .unwrap();
    let second_post = order
        .iter()
        .enumerate()
        .filter(|(_, u)| *u == "/api/v1/chart/data")
        .nth(1)
        .map(|(i, _)| i)
        .unwrap();
    assert!(stop < second_post, "{order:?}");
    server.release();
    settled(next).await;
}

/// Superset 6.1.0 and 7.0: no stop endpoint, and a schema that refuses a `client_id` (a 400).
/// The guard asks the endpoint once, before the first query (the queries that come meanwhile
/// wait for the answer), and sends no `client_id` after its 404; an abort then stops nothing
/// on the server and says so.
#[wasm_bindgen_test]
async fn a_superset_without_the_stop_endpoint_is_never_sent_a_client_id() {
    let ns = fresh("q-610");
    let server =
        // A real 6.1.0 answers the stop 405: its GET /api/v1/chart/data/<cache_key> takes the path.
        Server::new(json!({ "mode": "sync", "result": result(), "strict": true, "noStop": 405 }));
    let g = guard(&ns, &server, json!({}));
    let first = [
        query(&g, json!({})),
        query(&g, json!({})),
        query(&g, json!({})),
    ];
    for promise in first {
        let (outcome, got) = settled(promise).await;
        assert_eq!(outcome["outcome"], "done", "{outcome}");
        assert_eq!(outcome["clientId"], Value::Null);
        assert_eq!(rust(&got), result());
    }
    assert_eq!(server.to("/api/v1/chart/data/stop").len(), 1, "asked once");
    let posts = server.to("/api/v1/chart/data");
    assert_eq!(posts.len(), 3, "no 400, nothing sent twice: {posts:?}");
    assert!(posts.iter().all(|p| p["body"].get("client_id").is_none()));

    server.set("mode", json!("hang"));
    let controller = web_sys::AbortController::new().unwrap();
    let promise = g.query(body(), with_signal(&controller, json!({})));
    sleep(100).await;
    controller.abort();
    let (outcome, _) = settled(promise).await;
    assert_eq!(outcome["outcome"], "aborted");
    assert_eq!(outcome["stop"], "unsupported", "{outcome}");
    assert_eq!(
        server.to("/api/v1/chart/data/stop").len(),
        1,
        "nothing more asked"
    );

    // A server with the endpoint that still refuses the field: found out from two queries
    // each answered 400 with it and then without it (one such query may be a 400 of its
    // moment, a CSRF token not there yet); never sent again.
    let ns = fresh("q-field");
    let server = Server::new(json!({ "mode": "sync", "result": result(), "strict": true }));
    let g = guard(&ns, &server, json!({}));
    let (outcome, got) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert_eq!(outcome["clientId"], Value::Null);
    assert_eq!(rust(&got), result());
    let posts = server.to("/api/v1/chart/data");
    assert_eq!(posts.len(), 2);
    assert!(posts[0]["body"]["client_id"].is_string());
    assert!(posts[1]["body"].get("client_id").is_none());
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "done");
    let posts = server.to("/api/v1/chart/data");
    assert_eq!(posts.len(), 4, "with it again, then without");
    assert!(posts[2]["body"]["client_id"].is_string());
    assert!(posts[3]["body"].get("client_id").is_none());
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "done");
    let posts = server.to("/api/v1/chart/data");
    assert_eq!(posts.len(), 5, "sent once, without");
    assert!(posts[4]["body"].get("client_id").is_none());

    // The query's own 400: the same again without the field is a 400 too; it fails as itself.
    let ns = fresh("q-bad");
    let server = Server::new(json!({ "mode": 400, "errorBody": { "message": "bad query" } }));
    let g = guard(&ns, &server, json!({}));
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "failed", "{outcome}");
    assert_eq!(outcome["httpStatus"], 400);
    settled(query(&g, json!({}))).await;
    let posts = server.to("/api/v1/chart/data");
    assert_eq!(posts.len(), 4, "each sent with, then without: {posts:?}");
    assert!(
        posts[2]["body"]["client_id"].is_string(),
        "still sent with one first"
    );
}

#[wasm_bindgen_test]
async fn an_aborted_task_query_cancels_its_task_and_an_answer_after_the_stop_is_dropped() {
    let ns = fresh("q-abort-task");
    let server = Server::new(json!({ "mode": "tasks", "taskId": T1 }));
    let g = guard(
        &ns,
        &server,
        json!({ "contract": "task", "tabId": "tab-q" }),
    );
    let controller = web_sys::AbortController::new().unwrap();
    let promise = g.query(body(), with_signal(&controller, json!({})));
    until(2000, || !server.to("/api/v1/chart/data").is_empty()).await;
    sleep(100).await;
    controller.abort();
    let (outcome, _) = settled(promise).await;
    assert_eq!(outcome["outcome"], "aborted", "{outcome}");
    assert_eq!(outcome["stop"], "cancelling");
    assert_eq!(outcome["cancelling"], json!([T1]));
    until(2000, || {
        !server.to(&format!("/api/v1/task/{T1}/cancel")).is_empty()
    })
    .await;
    let cancels = server.to(&format!("/api/v1/task/{T1}/cancel"));
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["body"]["tab_id"], "tab-q");
}

#[wasm_bindgen_test]
async fn a_logout_stops_the_query_before_the_session_ends_and_its_late_answer_is_dropped() {
    let ns = fresh("q-logout");
    let server = Server::new(json!({ "mode": "hang" }));
    let g = guard(&ns, &server, json!({}));
    let promise = query(&g, json!({}));
    sleep(100).await;
    let before = server.requests().len();
    g.logout().unwrap();
    // Sent within logout(), with keepalive and the session's CSRF header.
    let sent: Vec<Value> = server.requests()[before..].to_vec();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["url"], "/api/v1/chart/data/stop");
    assert_eq!(sent[0]["keepalive"], true);
    let (outcome, got) = settled(promise).await;
    assert_eq!(outcome["outcome"], "aborted", "{outcome}");
    assert_eq!(outcome["reason"], "logout");
    assert_eq!(outcome["stop"], "sent");
    assert!(got.is_null());

    // An answer that comes after a user switch is never handed over, and nothing is sent.
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    server.set("mode", json!("late"));
    server.set("result", result());
    let promise = query(&g, json!({}));
    sleep(100).await;
    let before = server.requests().len();
    g.login(ts(js(json!({ "userId": 2 })))).unwrap();
    server.release();
    let (outcome, got) = settled(promise).await;
    assert_eq!(outcome["reason"], "user_changed", "{outcome}");
    assert_eq!(outcome["stop"], "not_sent");
    assert!(
        got.is_null(),
        "user 1's answer is not handed to user 2's page"
    );
    assert_eq!(
        server.requests().len(),
        before,
        "nothing sent as the new user"
    );
}

/// A `202` that comes after its query was stopped (a `fetch` that ignores the abort) is never
/// recorded; what it started is cancelled as the session that sent it (after its logout, or
/// its own abort), and never once another user has signed in here.
#[wasm_bindgen_test]
async fn a_late_202_is_not_recorded_and_is_cancelled_only_as_the_session_that_sent_it() {
    let jobs_of = |g: &JobGuard| rust(&g.jobs().unwrap());
    // After a logout and another user's login: dropped, nothing sent, nothing recorded.
    let ns = fresh("q-late-switch");
    let server = Server::new(json!({ "mode": "late202" }));
    let g = guard(&ns, &server, json!({}));
    let promise = query(&g, json!({}));
    sleep(100).await;
    g.logout().unwrap();
    g.login(ts(js(json!({ "userId": 2 })))).unwrap();
    server.release();
    let (outcome, got) = settled(promise).await;
    assert_eq!(outcome["reason"], "logout", "{outcome}");
    assert!(got.is_null());
    sleep(200).await;
    assert_eq!(jobs_of(&g), json!([]), "not recorded for the new user");
    assert!(server.to("/api/v1/async_event/job-late/cancel").is_empty());

    // After a logout alone: cancelled (keepalive), not recorded.
    let ns = fresh("q-late-logout");
    let server = Server::new(json!({ "mode": "late202" }));
    let g = guard(&ns, &server, json!({}));
    let promise = query(&g, json!({}));
    sleep(100).await;
    g.logout().unwrap();
    server.release();
    let (outcome, _) = settled(promise).await;
    assert_eq!(outcome["reason"], "logout", "{outcome}");
    // The query settled at once; the 202 that came after is cancelled then.
    until(1_000, || {
        !server.to("/api/v1/async_event/job-late/cancel").is_empty()
    })
    .await;
    let cancels = server.to("/api/v1/async_event/job-late/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["keepalive"], true);
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    assert_eq!(jobs_of(&g), json!([]));

    // Its own abort: cancelled as the same user, not recorded.
    let ns = fresh("q-late-abort");
    let server = Server::new(json!({ "mode": "late202" }));
    let g = guard(&ns, &server, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let promise = g.query(body(), with_signal(&controller, json!({})));
    sleep(100).await;
    controller.abort();
    server.release();
    let (outcome, _) = settled(promise).await;
    assert_eq!(outcome["reason"], "signal", "{outcome}");
    until(1_000, || {
        !server.to("/api/v1/async_event/job-late/cancel").is_empty()
    })
    .await;
    assert_eq!(server.to("/api/v1/async_event/job-late/cancel").len(), 1);
    assert_eq!(jobs_of(&g), json!([]));
}

/// A logout from the page's own listener, as the query's `202` is recorded: the query's waiter
/// is known as its own by then, so its job is cancelled before the session ends.
#[wasm_bindgen_test]
async fn a_logout_from_a_listener_as_the_202_is_recorded_cancels_the_querys_job() {
    let ns = fresh("q-listener");
    let server = Server::new(json!({ "mode": "job" }));
    let g = std::rc::Rc::new(guard(&ns, &server, json!({})));
    let weak = std::rc::Rc::downgrade(&g);
    let on_change =
        wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |change: JsValue| {
            let change = rust(&change);
            if change["type"] == "jobs_changed" && change["source"] == "local" {
                if let Some(g) = weak.upgrade() {
                    let _ = g.logout();
                }
            }
        });
    let listener: JsValue = on_change.as_ref().clone();
    let _unsubscribe = g.subscribe(listener).unwrap();
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "aborted", "{outcome}");
    assert_eq!(outcome["reason"], "logout");
    assert_eq!(outcome["cancelling"], json!(["job-1"]));
    let cancels = server.to("/api/v1/async_event/job-1/cancel");
    assert_eq!(cancels.len(), 1, "{:?}", server.requests());
    assert_eq!(cancels[0]["keepalive"], true);
    drop(on_change);
}

/// `logout()`'s `stopped`: settles once its stops are answered (so the app's own sign-out
/// cannot overtake them), at once when nothing was sent, and at most 3 s after a stop that is
/// never answered.
#[wasm_bindgen_test]
async fn logouts_stopped_settles_when_the_stops_are_answered_and_never_later_than_3_s() {
    let ns = fresh("q-stopped");
    let server = Server::new(json!({ "mode": "hang", "stopDelayMs": 400 }));
    let g = guard(&ns, &server, json!({}));
    let promises = [query(&g, json!({})), query(&g, json!({}))];
    sleep(100).await;
    let stopped = |result: &JsValue| -> js_sys::Promise {
        js_sys::Reflect::get(result, &"stopped".into())
            .unwrap()
            .dyn_into()
            .unwrap()
    };
    let now = js_sys::Date::now;
    let result = JsValue::from(g.logout().unwrap());
    assert_eq!(rust(&result)["purged"], 0);
    let start = now();
    let value = JsFuture::from(stopped(&result)).await.unwrap();
    assert!(value.is_undefined());
    let stops = js_sys::Reflect::get(&server.state, &"stopped".into()).unwrap();
    assert_eq!(
        rust(&stops).as_array().map(Vec::len),
        Some(2),
        "both stops answered before it settles"
    );
    assert!(now() - start >= 350.0, "{}", now() - start);
    for promise in promises {
        assert_eq!(settled(promise).await.0["reason"], "logout");
    }

    // Nothing running: settles at once.
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let start = now();
    JsFuture::from(stopped(&JsValue::from(g.logout().unwrap())))
        .await
        .unwrap();
    assert!(now() - start < 200.0, "{}", now() - start);

    // A stop never answered holds the sign-out 3 s, no longer.
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    server.set("stopHang", json!(true));
    let promise = query(&g, json!({}));
    sleep(100).await;
    let start = now();
    JsFuture::from(stopped(&JsValue::from(g.logout().unwrap())))
        .await
        .unwrap();
    let took = now() - start;
    assert!((2_900.0..4_000.0).contains(&took), "{took}");
    assert_eq!(settled(promise).await.0["reason"], "logout");
}

#[wasm_bindgen_test]
async fn the_pages_end_stops_a_synchronous_query_with_keepalive() {
    let ns = fresh("q-close");
    let server = Server::new(json!({ "mode": "hang" }));
    let g = guard(&ns, &server, json!({}));
    let promise = query(&g, json!({}));
    sleep(100).await;
    pagehide(true);
    sleep(50).await;
    // Before the query: the question whether the stop endpoint is there.
    assert_eq!(server.to("/api/v1/chart/data/stop").len(), 1);
    assert_eq!(server.list("probes").len(), 1, "bfcache: nothing");
    pagehide(false);
    let stops = server.to("/api/v1/chart/data/stop");
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert_eq!(stops[1]["keepalive"], true);
    assert_eq!(server.list("stopped").len(), 1);
    let (outcome, _) = settled(promise).await;
    assert_eq!(outcome["reason"], "page_end", "{outcome}");
}

#[wasm_bindgen_test]
async fn bad_inputs_are_refused_and_nothing_is_sent() {
    let ns = fresh("q-bad");
    let server = Server::new(json!({ "mode": "sync", "result": result() }));
    let g = guard(&ns, &server, json!({}));
    for (body, options) in [
        (js(json!([1])), js(json!({}))),
        (js(json!("x")), js(json!({}))),
        (body(), js(json!({ "url": "https://evil.test/data" }))),
        (body(), js(json!({ "signal": "abort" }))),
        (body(), js(json!({ "staleTimeoutMs": 0 }))),
        (body(), js(json!({ "unknown": 1 }))),
    ] {
        let (outcome, _) = settled(g.query(body, options)).await;
        assert_eq!(outcome["outcome"], "refused", "{outcome}");
        assert_eq!(outcome["reason"], "invalid_input", "{outcome}");
    }
    g.logout().unwrap();
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["reason"], "no_session");
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[wasm_bindgen_test]
async fn the_task_framework_switched_off_answers_synchronously_and_its_404s_are_no_invisible_task()
{
    let ns = fresh("q-off");
    let server = Server::new(json!({ "mode": "tasks", "taskId": T1, "result": result() }));
    let g = guard(
        &ns,
        &server,
        json!({ "contract": "task", "tabId": "tab-q" }),
    );
    // A task recorded while the framework was on; then it is switched off.
    g.record_tasks(ts(js(json!({ "task_ids": [T1], "cursor": "c" }))))
        .unwrap();
    server.set("tasksOff", json!(true));
    let waiting = g.wait_for(JsValue::from_str(T1), JsValue::UNDEFINED);
    let outcome = rust(&JsFuture::from(waiting).await.unwrap());
    assert_eq!(outcome["outcome"], "refused", "{outcome}");
    assert_eq!(outcome["reason"], "unsupported");
    // follow() stops: no poll loops on the 404s.
    let polls = server.to("/api/v1/task/status_changes").len();
    sleep(800).await;
    assert_eq!(
        server.to("/api/v1/task/status_changes").len(),
        polls,
        "no more polls"
    );
    // A 202 asked for, a 200 answered: done.
    let (outcome, got) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert_eq!(rust(&got), result());
    // A cancel's 404 is told apart from an invisible task: unsupported, the record kept.
    let cancelled = rust(
        &JsFuture::from(g.cancel(T1.into(), JsValue::UNDEFINED))
            .await
            .unwrap(),
    );
    assert_eq!(cancelled["outcome"], "unsupported", "{cancelled}");
    assert!(!rust(&g.job(T1.into()).unwrap()).is_null(), "kept");
}

#[wasm_bindgen_test]
async fn a_403_from_status_changes_stops_follow_with_a_forbidden_change_and_settles_waits() {
    let ns = fresh("q-forbidden");
    let server = Server::new(json!({ "mode": "tasks", "taskId": T1 }));
    let g = guard(
        &ns,
        &server,
        json!({ "contract": "task", "tabId": "tab-q" }),
    );
    let changes = js_sys::Array::new();
    let seen = changes.clone();
    let listener = wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |c: JsValue| {
        seen.push(&js_sys::Reflect::get(&c, &"type".into()).unwrap());
    });
    let _off = g.subscribe(listener.as_ref().clone()).unwrap();
    server.set("noTaskRole", json!(true));
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "refused", "{outcome}");
    assert_eq!(outcome["reason"], "forbidden");
    assert!(
        changes.iter().any(|c| c == "forbidden"),
        "{:?}",
        rust(&changes)
    );
    let polls = server.to("/api/v1/task/status_changes").len();
    assert_eq!(polls, 1, "never retried");
    sleep(700).await;
    assert_eq!(server.to("/api/v1/task/status_changes").len(), polls);
    // The next login follows again.
    server.set("noTaskRole", json!(false));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    server.set("task", json!("success"));
    server.set("modes", json!(["tasks", "sync"]));
    server.set("result", result());
    let (outcome, _) = settled(query(&g, json!({}))).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    drop(listener);
}
