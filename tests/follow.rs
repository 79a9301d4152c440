//! Browser tests of `JobGuard.follow` (the `follow` feature) in Chromium and Firefox, against a
//! stand-in of Superset's two event streams behind an injected `fetch`: what is polled and
//! when, the cursors, leader election among the guards of one origin, a 401, a refused cursor.
#![cfg(all(target_arch = "wasm32", feature = "follow"))]

use serde_json::{json, Value};
use superset_job_guard::web::JobGuard;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::*;

/// Superset's two streams, in the page: `state` is what the server holds (`events`, a list of
/// async events with Redis ids; `statuses`, task uuid to status; `cursor`, the task cursor it
/// answers with; `status`, the HTTP status every answer has while it is not 200;
/// `refuseCursor`, to answer the next request that has a cursor with 400 "Invalid cursor";
/// `reasons`, task uuid to its `semantic_result_error` (`GET /api/v1/task/<uuid>`; 404 for a
/// task it does not name);
/// `html`, to answer every request with a 200 HTML page, as a dev server does; `hang`, to
/// answer nothing until the request's signal aborts; `stall`, a count of requests to answer
/// never, whatever their signal says; `retryAfter`, the `Retry-After` of the answers that are
/// not 200). Every request's URL goes to `calls`, and its signal to `state.signals`.
const SERVER: &str = r#"
const calls = log;
const json = (body, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json",
    ...(status !== 200 && state.retryAfter !== undefined ? { "Retry-After": state.retryAfter } : {}) } });
const order = (id) => id.split("-").map(BigInt);
const after = (id, last) => {
  const [a, b] = order(id), [c, d] = order(last);
  return a > c || (a === c && b > d);
};
return async function fetch(url, init) {
  url = String(url);
  calls.push(url);
  (state.signals ??= []).push(init.signal);
  if (state.stall > 0) {
    state.stall -= 1;
    return new Promise(() => {});
  }
  if (state.status !== 200) return json({ message: "no" }, state.status);
  if (state.hang) return new Promise((_, reject) => init.signal.addEventListener("abort",
      () => reject(new DOMException("The operation was aborted.", "AbortError"))));
  if (state.html) return new Response("<html>app</html>", { headers: { "Content-Type": "text/html" } });
  const { pathname, searchParams } = new URL(url, "http://superset.test");
  if (pathname === "/api/v1/async_event/") {
    const last = searchParams.get("last_id");
    // Superset writes each event's `id` first.
    return json({ result: state.events.filter((e) => !last || after(e.id, last))
      .map((e) => ({ id: e.id, ...e })) });
  }
  if (pathname === "/api/v1/task/status_changes") {
    const cursor = searchParams.get("cursor");
    if (cursor && state.refuseCursor) {
      state.refuseCursor = false;
      return json({ message: "Invalid cursor" }, 400);
    }
    if (!cursor) return json({ statuses: {}, cursor: state.cursor });
    const statuses = {};
    for (const [id, status] of Object.entries(state.changes)) statuses[id] = { status, progress: 0 };
    return json({ statuses, cursor: state.cursor });
  }
  const status = pathname.match(/^\/api\/v1\/task\/([^/]+)\/status$/);
  if (status) return json({ status: state.statuses[status[1]] });
  // A task itself: why it failed, where `reasons` says (Superset's TaskResponse).
  const task = pathname.match(/^\/api\/v1\/task\/([0-9a-f-]{36})$/);
  if (task && state.reasons?.[task[1]] !== undefined) {
    return json({ result: { uuid: task[1], status: "failure",
                            semantic_result_error: state.reasons[task[1]] } });
  }
  return new Response("not here", { status: 404 });
};
"#;

struct Server {
    fetch: js_sys::Function,
    state: JsValue,
    calls: js_sys::Array,
}

impl Server {
    fn new(state: Value) -> Self {
        let calls = js_sys::Array::new();
        let state = js(state);
        let fetch = scripted_fetch(SERVER, &state, &calls);
        Self {
            fetch,
            state,
            calls,
        }
    }

    fn set(&self, key: &str, value: Value) {
        js_sys::Reflect::set(&self.state, &key.into(), &js(value)).unwrap();
    }

    fn calls(&self) -> Vec<String> {
        self.calls.iter().map(|c| c.as_string().unwrap()).collect()
    }

    fn count(&self) -> usize {
        self.calls.length() as usize
    }

    /// Whether each request's signal (as `fetch` got it) is aborted now.
    fn aborted(&self) -> Vec<bool> {
        let signals = js_sys::Reflect::get(&self.state, &"signals".into()).unwrap();
        js_sys::Array::from(&signals)
            .iter()
            .map(|s| {
                js_sys::Reflect::get(&s, &"aborted".into())
                    .unwrap()
                    .as_bool()
                    .unwrap()
            })
            .collect()
    }
}

fn guard(ns: &str, server: &Server, extra: Value) -> JobGuard {
    let options = js(json!({ "namespace": ns }));
    js_sys::Object::assign(
        options.unchecked_ref::<js_sys::Object>(),
        js(extra).unchecked_ref::<js_sys::Object>(),
    );
    js_sys::Reflect::set(&options, &"fetch".into(), &server.fetch).unwrap();
    JobGuard::new(options).unwrap()
}

const FAST: &str = r#"{"intervalMs": 100, "maxIntervalMs": 200}"#;

fn follow(g: &JobGuard) -> js_sys::Function {
    let options = js(serde_json::from_str(FAST).unwrap());
    g.follow(options).unwrap().dyn_into().unwrap()
}

fn job(id: &str, status: &str) -> Value {
    json!({"channel_id": "chan-1", "job_id": id, "user_id": "1",
           "status": status, "errors": [], "result_url": null})
}

fn event(id: &str, job_id: &str, status: &str) -> Value {
    let mut e = job(job_id, status);
    e["id"] = json!(id);
    if status == "done" {
        e["result_url"] = json!(format!("/api/v1/chart/data/qc-{job_id}"));
    }
    e
}

fn status_of(g: &JobGuard, id: &str) -> Value {
    rust(&g.job(JsValue::from_str(id)).unwrap())["status"].clone()
}

fn last_event_id() -> Option<String> {
    storage().get_item("last_async_event_id").unwrap()
}

#[wasm_bindgen_test]
async fn follows_the_async_event_stream_with_supersets_cursor_and_goes_quiet() {
    let ns = fresh("follow-events");
    storage().remove_item("last_async_event_id").unwrap();
    let server = Server::new(json!({"status": 200, "events": []}));
    let g = guard(&ns, &server, json!({}));
    let stop = follow(&g);
    // No session: no request.
    sleep(300).await;
    assert_eq!(server.count(), 0);
    g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    sleep(300).await;
    assert_eq!(
        server.count(),
        0,
        "a session without running jobs polls nothing"
    );
    g.record_job(ts(js(job("job-1", "pending")))).unwrap();
    sleep(150).await;
    assert!(server.count() >= 1);
    assert_eq!(server.calls()[0], "/api/v1/async_event/");
    // Another user's event changes nothing; the job's own ends it.
    let mut foreign = event("1700000000000-0", "job-1", "error");
    foreign["user_id"] = json!("2");
    server.set(
        "events",
        json!([foreign, event("1700000000001-0", "job-1", "done")]),
    );
    sleep(400).await;
    assert_eq!(status_of(&g, "job-1"), "done");
    assert_eq!(last_event_id().as_deref(), Some("1700000000001-0"));
    // Nothing left running: the polling stops.
    let seen = server.count();
    sleep(500).await;
    assert_eq!(server.count(), seen);
    // A new job resumes it from Superset's cursor.
    g.record_job(ts(js(job("job-2", "pending")))).unwrap();
    server.set(
        "events",
        json!([
            event("1700000000001-0", "job-1", "done"),
            event("1700000000002-0", "job-2", "error")
        ]),
    );
    sleep(400).await;
    let resumed = &server.calls()[seen];
    assert_eq!(resumed, "/api/v1/async_event/?last_id=1700000000001-0");
    assert_eq!(status_of(&g, "job-2"), "error");
    stop.call0(&JsValue::UNDEFINED).unwrap();
    g.logout().unwrap();
    assert_eq!(last_event_id(), None, "logout clears Superset's cursor too");
}

#[wasm_bindgen_test]
async fn one_guard_of_the_origin_polls_and_another_takes_over_when_it_stops() {
    let ns = fresh("follow-leader");
    storage().remove_item("last_async_event_id").unwrap();
    let (a_server, b_server) = (
        Server::new(json!({"status": 200, "events": []})),
        Server::new(json!({"status": 200, "events": []})),
    );
    let a = guard(&ns, &a_server, json!({}));
    let b = guard(&ns, &b_server, json!({}));
    a.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    a.record_job(ts(js(job("job-1", "running")))).unwrap();
    let stop_a = follow(&a);
    sleep(50).await;
    let stop_b = follow(&b);
    sleep(600).await;
    assert!(a_server.count() >= 3, "the first to follow leads");
    assert_eq!(b_server.count(), 0, "the other waits for the lock");
    stop_a.call0(&JsValue::UNDEFINED).unwrap();
    let stopped = a_server.count();
    sleep(600).await;
    assert!(
        a_server.count() <= stopped + 1,
        "a stopped leader polls no more"
    );
    assert!(b_server.count() >= 2, "the next in line took over");
    // The new leader applies what comes.
    b_server.set("events", json!([event("1700000000005-0", "job-1", "done")]));
    sleep(400).await;
    assert_eq!(status_of(&a, "job-1"), "done");
    stop_b.call0(&JsValue::UNDEFINED).unwrap();
    a.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_logout_in_another_tab_stops_the_leader() {
    let ns = fresh("follow-logout-elsewhere");
    storage().remove_item("last_async_event_id").unwrap();
    let server = Server::new(json!({"status": 200, "events": []}));
    // Two guards of one namespace in one page: each has its own BroadcastChannel object, as two
    // tabs have, and they share localStorage.
    let leader = guard(&ns, &server, json!({}));
    let other = guard(&ns, &server, json!({}));
    leader
        .login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    leader.record_job(ts(js(job("job-1", "running")))).unwrap();
    let stop = follow(&leader);
    sleep(400).await;
    assert!(server.count() >= 2, "the leader polls");
    other.logout().unwrap();
    sleep(100).await;
    let after = server.count();
    sleep(700).await;
    assert_eq!(
        server.count(),
        after,
        "no polls once another tab signed out"
    );
    assert!(rust(&leader.session().unwrap()).is_null());
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
async fn a_401_stops_following_until_the_next_login_in_any_tab_and_logout_stops_it() {
    let ns = fresh("follow-401");
    let server = Server::new(json!({"status": 401, "events": []}));
    let g = guard(&ns, &server, json!({"storage": "memory"}));
    g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    g.record_job(ts(js(job("job-1", "running")))).unwrap();
    // Another tab of the same user (a guard of the same namespace: its BroadcastChannel is
    // another object, as another tab's is).
    let same = guard(&ns, &server, json!({"storage": "memory"}));
    same.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    let heard = |g: &JobGuard| {
        let seen = js_sys::Array::new();
        let push =
            js_sys::Function::new_with_args("c", "this.push(c.type + ':' + c.source)").bind0(&seen);
        g.subscribe(push.into()).unwrap();
        seen
    };
    let (here, there) = (heard(&g), heard(&same));
    // The other tab's login reaches this one by a channel message, a moment later: a login
    // heard after a 401 resumes the follow, so let it arrive first.
    sleep(50).await;
    let stop = follow(&g);
    sleep(500).await;
    assert_eq!(server.count(), 1, "one 401, then no more requests");
    let list = |a: &js_sys::Array| a.iter().map(|v| v.as_string().unwrap()).collect::<Vec<_>>();
    assert_eq!(list(&here), ["unauthorized:local"], "announced once, here");
    assert_eq!(
        list(&there),
        ["unauthorized:other_tab"],
        "and to the user's other tabs"
    );
    assert!(
        rust(&same.session().unwrap()).is_object(),
        "another tab's session is the app's to end"
    );
    server.set("status", json!(200));
    // The user signs in again in the other tab, not the one that polled: it resumes there.
    same.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    sleep(300).await;
    assert!(
        server.count() >= 2,
        "the next login, in any tab of the session, resumes it"
    );
    // Another 401; then a tab opens (a reload) and signs in at once, before its channel to
    // the other tabs has opened: the message waits for it, and the poller resumes.
    server.set("status", json!(401));
    sleep(400).await;
    let stopped = server.count();
    sleep(300).await;
    assert_eq!(server.count(), stopped, "stopped by the second 401");
    server.set("status", json!(200));
    let reloaded = guard(&ns, &server, json!({"storage": "memory"}));
    reloaded
        .login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    sleep(300).await;
    assert!(
        server.count() > stopped,
        "a new tab's first login resumes it"
    );
    g.logout().unwrap();
    let out = server.count();
    sleep(400).await;
    assert!(server.count() <= out + 1, "no polling without a session");
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
async fn a_tab_that_takes_over_after_a_401_waits_for_the_next_login() {
    let ns = fresh("follow-401-hand-over");
    storage().remove_item("last_async_event_id").unwrap();
    let server = Server::new(json!({"status": 401, "events": []}));
    let a = guard(&ns, &server, json!({}));
    let b = guard(&ns, &server, json!({}));
    a.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    a.record_job(ts(js(job("job-1", "running")))).unwrap();
    sleep(50).await;
    let stop_a = follow(&a);
    sleep(50).await;
    let stop_b = follow(&b);
    sleep(400).await;
    assert_eq!(server.count(), 1, "the leader's one 401");
    // The polling tab goes; the next in line heard the 401 and does not poll it again.
    stop_a.call0(&JsValue::UNDEFINED).unwrap();
    sleep(500).await;
    assert_eq!(server.count(), 1, "the new leader waits for a login");
    server.set("status", json!(200));
    b.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    sleep(300).await;
    assert!(server.count() >= 2, "the login resumes the new leader");
    stop_b.call0(&JsValue::UNDEFINED).unwrap();
    a.logout().unwrap();
}

const TA: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";
const TB: &str = "2b1e0c5d-6f7a-4b8c-9d0e-1f2a3b4c5d6e";

#[wasm_bindgen_test]
async fn follows_status_changes_from_a_fresh_cursor_losing_nothing() {
    let ns = fresh("follow-tasks");
    let server = Server::new(json!({
        "status": 200, "cursor": "2026-09-01T10:00:00.250", "changes": {},
        "statuses": {TA: "in_progress", TB: "success"}
    }));
    let g = guard(
        &ns,
        &server,
        json!({"contract": "task", "storage": "memory"}),
    );
    g.login(ts(js(json!({"userId": 1})))).unwrap();
    g.record_tasks(ts(js(
        json!({"task_ids": [TA, TB], "cursor": "2026-09-01T09:59:59"}),
    )))
    .unwrap();
    let stop = follow(&g);
    sleep(300).await;
    let calls = server.calls();
    assert_eq!(calls[0], "/api/v1/task/status_changes");
    // The fresh cursor's start: each running task's status read back.
    assert!(calls.contains(&format!("/api/v1/task/{TA}/status")));
    assert!(calls.contains(&format!("/api/v1/task/{TB}/status")));
    assert_eq!(status_of(&g, TA), "in_progress");
    assert_eq!(status_of(&g, TB), "success");
    // Then the answer's cursor, floored to the second.
    assert!(
        calls.contains(&"/api/v1/task/status_changes?cursor=2026-09-01T10%3A00%3A00".to_owned())
    );
    // A refused cursor starts again from a fresh one.
    server.set("refuseCursor", json!(true));
    server.set("changes", json!({TA: "aborting"}));
    server.set("statuses", json!({TA: "failure"}));
    sleep(800).await;
    assert_eq!(status_of(&g, TA), "failure");
    let seen = server.count();
    sleep(400).await;
    assert_eq!(server.count(), seen, "every task ended: quiet");
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
fn follow_refuses_bad_options() {
    let ns = fresh("follow-options");
    let server = Server::new(json!({"status": 200, "events": []}));
    let g = guard(&ns, &server, json!({}));
    for bad in [
        json!({"intervalMs": 5}),
        json!({"maxIntervalMs": "30000"}),
        json!({"every": 500}),
        json!(7),
    ] {
        assert_guard_error(g.follow(js(bad)).thrown(), "invalid_options");
    }
    let stop: js_sys::Function = g.follow(JsValue::UNDEFINED).unwrap().dyn_into().unwrap();
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
async fn events_it_cannot_read_are_skipped_and_pages_that_are_not_json_change_nothing() {
    let ns = fresh("follow-hostile");
    let server = Server::new(json!({"status": 200, "html": true, "events": []}));
    let g = guard(&ns, &server, json!({"storage": "memory"}));
    g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    g.record_job(ts(js(job("job-1", "running")))).unwrap();
    let stop = follow(&g);
    sleep(400).await;
    assert!(
        server.count() >= 2,
        "an HTML page is a failure, tried again"
    );
    assert_eq!(status_of(&g, "job-1"), "running");
    let deep = (0..100).fold(json!(1), |v, _| json!([v]));
    server.set("html", json!(false));
    server.set(
        "events",
        json!([
            {"id": "1700000000009-0", "job_id": 5},
            {"id": "1700000000010-0", "channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
             "status": "error", "errors": [deep]},
            {"id": "1700000000011-0", "channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
             "status": "paused"},
            event("1700000000012-0", "job-1", "done"),
        ]),
    );
    sleep(500).await;
    assert_eq!(status_of(&g, "job-1"), "done");
    // The memory guard kept its cursor to itself: the next request asked after the last id.
    g.record_job(ts(js(job("job-2", "running")))).unwrap();
    sleep(300).await;
    assert!(server
        .calls()
        .contains(&"/api/v1/async_event/?last_id=1700000000012-0".to_owned()));
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
async fn a_follower_stopped_while_waiting_never_polls_and_a_freed_leader_hands_over() {
    let ns = fresh("follow-free");
    storage().remove_item("last_async_event_id").unwrap();
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::new(json!({"status": 200, "events": []})))
        .collect();
    let a = guard(&ns, &servers[0], json!({}));
    let b = guard(&ns, &servers[1], json!({}));
    let c = guard(&ns, &servers[2], json!({}));
    a.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    a.record_job(ts(js(job("job-1", "running")))).unwrap();
    let _stop_a = follow(&a);
    sleep(50).await;
    let stop_c = follow(&c);
    sleep(50).await;
    let stop_b = follow(&b);
    sleep(300).await;
    stop_c.call0(&JsValue::UNDEFINED).unwrap();
    // The leader's guard goes (its page's `free()`): the lock goes with its follow.
    drop(a);
    sleep(600).await;
    assert_eq!(servers[2].count(), 0, "stopped while waiting: never led");
    assert!(
        servers[1].count() >= 2,
        "the next in line took over from the freed leader"
    );
    stop_b.call0(&JsValue::UNDEFINED).unwrap();
    b.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_logout_during_a_poll_ends_the_request_and_the_next_login_follows_again() {
    let ns = fresh("follow-logout-in-flight");
    let server = Server::new(json!({"status": 200, "hang": true, "events": []}));
    let g = guard(&ns, &server, json!({"storage": "memory"}));
    g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    g.record_job(ts(js(job("job-1", "running")))).unwrap();
    let stop = follow(&g);
    sleep(200).await;
    assert_eq!(server.count(), 1, "one poll, in flight");
    g.logout().unwrap();
    server.set("hang", json!(false));
    sleep(300).await;
    assert_eq!(server.count(), 1, "no session: nothing more");
    g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    g.record_job(ts(js(job("job-2", "running")))).unwrap();
    server.set("events", json!([event("1700000000020-0", "job-2", "done")]));
    sleep(300).await;
    assert_eq!(
        status_of(&g, "job-2"),
        "done",
        "the follow outlived the logout"
    );
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

/// Page code's `fetch`, in place of the page's own while `f` runs.
async fn with_page_fetch<F: std::future::Future<Output = ()>>(server: &Server, f: F) {
    let global = js_sys::global();
    let page_fetch = js_sys::Reflect::get(&global, &"fetch".into()).unwrap();
    js_sys::Reflect::set(&global, &"fetch".into(), &server.fetch).unwrap();
    f.await;
    js_sys::Reflect::set(&global, &"fetch".into(), &page_fetch).unwrap();
}

#[wasm_bindgen_test]
async fn a_poll_that_runs_out_of_time_is_aborted_and_the_next_leaves_on_time() {
    // The app's fetch, then the page's: the first poll never answers; `timeoutMs` ends it.
    for page in [false, true] {
        let ns = fresh(&format!("follow-timeout-{page}"));
        storage().remove_item("last_async_event_id").unwrap();
        let server = Server::new(json!({"status": 200, "events": [], "stall": 1}));
        let run = async {
            let options = json!({"namespace": ns, "timeoutMs": 300, "storage": "memory"});
            let g = if page {
                JobGuard::new(js(options)).unwrap()
            } else {
                guard(&ns, &server, json!({"timeoutMs": 300, "storage": "memory"}))
            };
            g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
                .unwrap();
            g.record_job(ts(js(job("job-1", "running")))).unwrap();
            server.set("events", json!([event("1700000000001-0", "job-1", "done")]));
            let stop = follow(&g);
            sleep(150).await;
            assert_eq!(server.aborted(), [false], "page {page}: in flight");
            sleep(600).await;
            let aborted = server.aborted();
            assert!(aborted[0], "page {page}: the timed-out poll was aborted");
            assert!(aborted.len() >= 2, "page {page}: the next poll left");
            assert_eq!(status_of(&g, "job-1"), "done", "page {page}");
            stop.call0(&JsValue::UNDEFINED).unwrap();
        };
        if page {
            with_page_fetch(&server, run).await;
        } else {
            run.await;
        }
    }
}

#[wasm_bindgen_test]
async fn retry_after_zero_or_a_past_date_never_shortens_the_backoff() {
    for hint in ["0", "Thu, 01 Jan 1970 00:00:00 GMT"] {
        let ns = fresh("follow-retry-after");
        let server = Server::new(json!({"status": 503, "events": [], "retryAfter": hint}));
        let g = guard(&ns, &server, json!({"storage": "memory"}));
        g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
            .unwrap();
        g.record_job(ts(js(job("job-1", "running")))).unwrap();
        // 100 ms doubling to 1.6 s: the waits are at least 100, 200, 400, 800 ms after
        // failures (equal jitter), so at most 5 polls in 1.2 s; with no pause, hundreds.
        let options = js(json!({"intervalMs": 100, "maxIntervalMs": 1600}));
        let stop: js_sys::Function = g.follow(options).unwrap().dyn_into().unwrap();
        sleep(1200).await;
        let polls = server.count();
        assert!((2..=5).contains(&polls), "{hint}: {polls} polls in 1.2 s");
        stop.call0(&JsValue::UNDEFINED).unwrap();
    }
}

/// A page of Superset's size: an error event for each of `jobs`, with a message of
/// `message_len` characters (Superset puts the query's error messages there), `id` first.
fn error_events(jobs: std::ops::Range<usize>, message_len: usize) -> Value {
    let message = "m".repeat(message_len);
    Value::Array(
        jobs.map(|i| {
            let mut e = event(&format!("17000000{i:05}-0"), &format!("job-{i}"), "error");
            e["errors"] = json!([{"message": message, "error_type": "GENERIC_DB_ENGINE_ERROR"}]);
            e
        })
        .collect(),
    )
}

fn stat(g: &JobGuard, name: &str) -> u64 {
    rust(&g.stats().unwrap())[name].as_u64().unwrap()
}

#[wasm_bindgen_test]
async fn pages_of_supersets_size_and_larger_are_read_and_never_stop_the_stream() {
    let ns = fresh("follow-big-pages");
    let server = Server::new(json!({"status": 200, "events": []}));
    let g = guard(&ns, &server, json!({"storage": "memory"}));
    g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    for i in 0..200 {
        g.record_job(ts(js(job(&format!("job-{i}"), "running"))))
            .unwrap();
    }
    // 100 error events with 1.2 KB messages: a 140 KB page, over the 64 KiB of a cancel's
    // answer; read whole.
    let page = error_events(0..100, 1200);
    assert!(page.to_string().len() > 130_000);
    server.set("events", page);
    let stop = follow(&g);
    sleep(400).await;
    for i in 0..100 {
        assert_eq!(status_of(&g, &format!("job-{i}")), "error", "job-{i}");
    }
    assert_eq!(stat(&g, "partialPages"), 0);
    // 100 events of 30 KB each: a 3 MB page, over the 2 Mi page limit. Its start is read,
    // then the rest from the last id read.
    let polls = server.count();
    server.set("events", error_events(100..200, 30_000));
    until(3000, || status_of(&g, "job-199") == "error").await;
    for i in 100..200 {
        assert_eq!(status_of(&g, &format!("job-{i}")), "error", "job-{i}");
    }
    assert!(stat(&g, "partialPages") >= 1);
    assert_eq!(stat(&g, "skippedEvents"), 0);
    assert!(server.count() >= polls + 2);
    stop.call0(&JsValue::UNDEFINED).unwrap();
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn an_event_larger_than_a_page_is_passed_over_and_the_stream_goes_on() {
    let ns = fresh("follow-huge-event");
    let server = Server::new(json!({"status": 200, "events": []}));
    let g = guard(&ns, &server, json!({"storage": "memory"}));
    g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
        .unwrap();
    g.record_job(ts(js(job("job-0", "running")))).unwrap();
    g.record_job(ts(js(job("job-1", "running")))).unwrap();
    let mut events = error_events(0..1, 2_500_000);
    events
        .as_array_mut()
        .unwrap()
        .push(event("1700000000001-0", "job-1", "done"));
    server.set("events", events);
    let stop = follow(&g);
    until(3000, || status_of(&g, "job-1") == "done").await;
    assert_eq!(status_of(&g, "job-1"), "done", "the stream went on");
    assert_eq!(
        status_of(&g, "job-0"),
        "running",
        "the event too large to read"
    );
    assert_eq!(stat(&g, "skippedEvents"), 1);
    assert!(stat(&g, "partialPages") >= 1);
    let calls = server.calls();
    assert!(
        calls.iter().any(|c| c.ends_with("last_id=1700000000000-0")),
        "{calls:?}"
    );
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
async fn a_failed_tasks_reason_is_read_back_and_kept_with_its_record() {
    let ns = fresh("follow-task-reason");
    let long = "x".repeat(3000);
    let server = Server::new(json!({
        "status": 200, "cursor": "2026-09-01T10:00:00", "changes": {},
        "statuses": {TA: "in_progress", TB: "in_progress"},
        "reasons": {TA: "Error: column \"x\" does not exist", TB: long}
    }));
    let g = guard(
        &ns,
        &server,
        json!({"contract": "task", "storage": "memory"}),
    );
    g.login(ts(js(json!({"userId": 1})))).unwrap();
    g.record_tasks(ts(js(json!({"task_ids": [TA, TB]}))))
        .unwrap();
    let stop = follow(&g);
    sleep(250).await;
    server.set("changes", json!({TA: "failure", TB: "failure"}));
    until(2000, || status_of(&g, TB) == "failure").await;
    sleep(100).await;
    let record = |id: &str| rust(&g.job(JsValue::from_str(id)).unwrap());
    assert_eq!(
        record(TA)["errors"],
        json!([{"message": "Error: column \"x\" does not exist"}])
    );
    let kept = record(TB)["errors"][0]["message"].as_str().unwrap().len();
    assert_eq!(kept, 1024, "a bounded prefix");
    assert!(server.calls().contains(&format!("/api/v1/task/{TA}")));
    stop.call0(&JsValue::UNDEFINED).unwrap();
}

#[wasm_bindgen_test]
async fn records_written_in_a_burst_or_during_a_backoff_bring_no_burst_of_polls() {
    for status in [200, 503] {
        let ns = fresh(&format!("follow-burst-{status}"));
        let server = Server::new(json!({"status": status, "events": [], "retryAfter": "0"}));
        let g = guard(&ns, &server, json!({"storage": "memory"}));
        g.login(ts(js(json!({"userId": 1, "channelId": "chan-1"}))))
            .unwrap();
        let options = js(json!({"intervalMs": 500, "maxIntervalMs": 8000}));
        let stop: js_sys::Function = g.follow(options).unwrap().dyn_into().unwrap();
        sleep(50).await;
        // 30 records at once, then one every 100 ms for a second.
        for i in 0..30 {
            g.record_job(ts(js(job(&format!("job-{i}"), "running"))))
                .unwrap();
        }
        sleep(10).await;
        for i in 30..40 {
            g.record_job(ts(js(job(&format!("job-{i}"), "running"))))
                .unwrap();
            sleep(100).await;
        }
        // Healthy: a poll at the first record, then at most one each 500 ms (3 in ~1.05 s);
        // failing: the backoff (500 to 1000 ms, then 1000 to 2000) stands whatever is written.
        let polls = server.count();
        assert!((1..=3).contains(&polls), "{status}: {polls} polls");
        stop.call0(&JsValue::UNDEFINED).unwrap();
    }
}
