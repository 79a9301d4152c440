//! Browser tests of `JobGuard.waitFor` in Chromium and Firefox, against a stand-in of
//! Superset's task framework and async_event cancel behind an injected `fetch`: what settles a
//! waiter, what an abort cancels (only what no other waiter awaits, with the tab id recorded at
//! submit), what the page's end sends, and that nothing is sent for a job that is not ours.
#![cfg(all(target_arch = "wasm32", feature = "follow"))]

use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::wait::*;
use support::*;

#[wasm_bindgen_test]
async fn settles_done_through_follow_alone_and_stops_following_when_nothing_waits() {
    let ns = fresh("wait-done");
    let server = Server::new(json!({ T1: "pending", T2: "pending" }));
    let g = guard(&ns, &server, json!({}));
    // A 202 body: recorded and awaited in the same call.
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1, T2], "cursor": "2026-12-06T10:00:00+00:00", "tab_id": "tab-a" }),
        JsValue::UNDEFINED,
    );
    assert_eq!(rust(&g.jobs().unwrap()).as_array().unwrap().len(), 2);
    // The first poll one interval (500 ms) after the job was accepted, as Superset's own
    // frontend waits its polling delay first.
    sleep(300).await;
    assert_eq!(server.count(), 0, "not at once");
    sleep(400).await;
    assert!(!has_settled(&waiting).await);
    assert!(server.count() > 0, "follow() started for the waiter");
    server.set_status(T1, "success");
    sleep(300).await;
    assert!(!has_settled(&waiting).await, "T2 still runs");
    server.set_status(T2, "success");
    let outcome = settled(waiting).await;
    assert_eq!(outcome["outcome"], "done");
    assert_eq!(outcome["jobIds"], json!([T1, T2]));
    // Nothing waits: the follow the waiter started has stopped.
    let after = server.count();
    sleep(1500).await;
    assert_eq!(server.count(), after, "no polls once nothing waits");
}

#[wasm_bindgen_test]
async fn a_failed_task_settles_failed_with_its_reason_read_back() {
    let ns = fresh("wait-failed");
    let server = Server::new(json!({ T1: "pending" }));
    server.set(
        "reasons",
        json!({ T1: "Error: relation \"sales\" does not exist" }),
    );
    let g = guard(&ns, &server, json!({}));
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    server.set_status(T1, "failure");
    let outcome = settled(waiting).await;
    assert_eq!(outcome["outcome"], "failed");
    assert_eq!(outcome["jobId"], T1);
    assert_eq!(outcome["status"], "failure");
    assert!(
        outcome["errors"].to_string().contains("does not exist"),
        "{outcome}"
    );
}

#[wasm_bindgen_test]
async fn two_waiters_on_one_task_the_first_abort_sends_nothing_the_second_one_cancel_with_the_tab_id(
) {
    let ns = fresh("wait-shared");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let body = json!({ "task_ids": [T1], "cursor": "c", "tab_id": "tab-a" });
    let (first, second) = (
        web_sys::AbortController::new().unwrap(),
        web_sys::AbortController::new().unwrap(),
    );
    let one = wait(&g, body.clone(), with_signal(&first, json!({})));
    let two = wait(&g, json!(T1), with_signal(&second, json!({})));
    first.abort();
    let outcome = settled(one).await;
    assert_eq!(outcome["outcome"], "aborted");
    assert_eq!(outcome["cancelling"], json!([]));
    sleep(200).await;
    assert_eq!(
        server.posts(),
        Vec::<Value>::new(),
        "the other waiter awaits it"
    );
    assert!(!has_settled(&two).await);

    second.abort();
    let outcome = settled(two).await;
    assert_eq!(outcome["outcome"], "aborted");
    assert_eq!(outcome["cancelling"], json!([T1]));
    until(2000, || !server.posts().is_empty()).await;
    let posts = server.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0]["url"], format!("/api/v1/task/{T1}/cancel"));
    assert_eq!(posts[0]["body"], r#"{"tab_id":"tab-a"}"#);
    assert_eq!(posts[0]["csrf"], "csrf-1");
    // The cancel's outcome reaches the record.
    until(2000, || {
        rust(&g.job(T1.into()).unwrap())["status"] == "aborted"
    })
    .await;
    assert_eq!(rust(&g.job(T1.into()).unwrap())["status"], "aborted");
}

#[wasm_bindgen_test]
async fn a_superseded_query_is_cancelled_and_the_new_one_runs_to_success() {
    let ns = fresh("wait-supersede");
    let server = Server::new(json!({ T1: "pending", T2: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let old = web_sys::AbortController::new().unwrap();
    let first = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c", "tab_id": "tab-a" }),
        with_signal(&old, json!({})),
    );
    // The filter changed: the old waiter is aborted, the new query awaited.
    old.abort();
    let second = wait(
        &g,
        json!({ "task_ids": [T2], "cursor": "c", "tab_id": "tab-a" }),
        JsValue::UNDEFINED,
    );
    assert_eq!(settled(first).await["cancelling"], json!([T1]));
    server.set_status(T2, "success");
    assert_eq!(settled(second).await["outcome"], "done");
    let posts = server.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0]["url"], format!("/api/v1/task/{T1}/cancel"));
}

#[wasm_bindgen_test]
async fn a_job_that_is_not_the_sessions_is_refused_with_no_request() {
    let ns = fresh("wait-refused");
    let server = Server::new(json!({}));
    let g = guard(&ns, &server, json!({ "contract": "async_event" }));
    let unknown = settled(wait(&g, json!("job-9"), JsValue::UNDEFINED)).await;
    assert_eq!(unknown["outcome"], "refused");
    assert_eq!(unknown["reason"], "unknown_job");
    assert_eq!(unknown["jobId"], "job-9");

    // Another user's record in storage (as another tab's session left it).
    let meta = json!({ "channel_id": "chan-1", "job_id": "job-1", "user_id": "1",
                       "status": "pending", "errors": [], "result_url": null });
    g.record_job(ts(js(meta))).unwrap();
    let key = format!("{ns}:v1:job:job-1");
    let stored = storage().get_item(&key).unwrap().unwrap();
    storage()
        .set_item(
            &key,
            &stored.replace(r#""user_id":"1""#, r#""user_id":"2""#),
        )
        .unwrap();
    let foreign = settled(wait(&g, json!(["job-1"]), JsValue::UNDEFINED)).await;
    assert_eq!(foreign["outcome"], "refused");
    assert_eq!(foreign["reason"], "not_job_owner");

    // Another user's 202 body is not recorded.
    let theirs = json!({ "channel_id": "chan-1", "job_id": "job-2", "user_id": "2",
                         "status": "pending", "errors": [], "result_url": null });
    let body = settled(wait(&g, theirs, JsValue::UNDEFINED)).await;
    assert_eq!(body["reason"], "not_job_owner");
    for bad in [json!(null), json!(5), json!([]), json!({ "task_ids": "x" })] {
        let outcome = settled(wait(&g, bad, JsValue::UNDEFINED)).await;
        assert_eq!(outcome["reason"], "invalid_input", "{outcome}");
    }
    g.logout().unwrap();
    let signed_out = settled(wait(&g, json!("job-1"), JsValue::UNDEFINED)).await;
    assert_eq!(signed_out["reason"], "no_session");
    sleep(100).await;
    assert_eq!(server.count(), 0, "nothing sent, nothing polled");
}

#[wasm_bindgen_test]
async fn stale_after_the_timeout_without_progress_and_progress_restarts_the_clock() {
    let ns = fresh("wait-stale");
    let server = Server::new(json!({}));
    // The app feeds the statuses itself; follow() polls a server that knows nothing.
    let g = guard(&ns, &server, json!({}));
    let started = js_sys::Date::now();
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        js(json!({ "staleTimeoutMs": 600 })),
    );
    sleep(400).await;
    g.apply_task_status(ts(js(json!({ "task_id": T1, "status": "in_progress" }))))
        .unwrap();
    sleep(400).await;
    assert!(
        !has_settled(&waiting).await,
        "progress at 400 ms moved the deadline to 1000"
    );
    let outcome = settled(waiting).await;
    let took = js_sys::Date::now() - started;
    assert_eq!(outcome["outcome"], "stale");
    assert!((950.0..2500.0).contains(&took), "{took} ms");
    assert_eq!(
        rust(&g.job(T1.into()).unwrap())["status"],
        "in_progress",
        "not cancelled"
    );
    let refused = settled(wait(&g, json!(T1), js(json!({ "staleTimeoutMs": -1 })))).await;
    assert_eq!(refused["reason"], "invalid_input");
}

#[wasm_bindgen_test]
async fn the_pages_end_sends_keepalive_cancels_and_the_back_forward_cache_sends_nothing() {
    let ns = fresh("wait-close");
    let server = Server::new(json!({ T1: "pending", T2: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1, T2], "cursor": "c", "tab_id": "tab-a" }),
        JsValue::UNDEFINED,
    );
    server.set_status(T2, "success");
    g.apply_task_status(ts(js(json!({ "task_id": T2, "status": "success" }))))
        .unwrap();
    pagehide(true);
    sleep(50).await;
    assert_eq!(
        server.posts(),
        Vec::<Value>::new(),
        "into the bfcache: nothing"
    );
    pagehide(false);
    let posts = server.posts();
    assert_eq!(posts.len(), 1, "T1 only (T2 ended): {posts:?}");
    assert_eq!(posts[0]["url"], format!("/api/v1/task/{T1}/cancel"));
    assert_eq!(posts[0]["keepalive"], true);
    assert_eq!(posts[0]["csrf"], "csrf-1");
    assert_eq!(posts[0]["body"], r#"{"tab_id":"tab-a"}"#);
    drop(g);
    // A freed guard's waiters settle.
    assert_eq!(settled(waiting).await["outcome"], "aborted");

    let ns = fresh("wait-close-off");
    let server = Server::new(json!({ T1: "pending", T2: "pending" }));
    let g = guard(&ns, &server, json!({ "cancelOnClose": false }));
    let _waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    pagehide(false);
    sleep(50).await;
    assert_eq!(
        server.posts(),
        Vec::<Value>::new(),
        "the guard's cancelOnClose: false"
    );
    // A waiter's own option wins over the guard's, and a job a waiter keeps is not cancelled.
    let _closing = wait(
        &g,
        json!({ "task_ids": [T2], "cursor": "c" }),
        js(json!({ "cancelOnClose": true })),
    );
    let _keeping = wait(&g, json!([T1]), js(json!({ "cancelOnClose": false })));
    pagehide(false);
    let posts = server.posts();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0]["url"], format!("/api/v1/task/{T2}/cancel"));
    let refused = settled(wait(&g, json!([T1]), js(json!({ "cancelOnClose": "no" })))).await;
    assert_eq!(refused["reason"], "invalid_input");
    drop(g);
}

#[wasm_bindgen_test]
async fn an_aborted_signal_records_and_cancels_and_a_listener_may_wait_from_inside() {
    let ns = fresh("wait-hostile");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    controller.abort();
    // A 202 that came after its query was superseded: recorded, and its task cancelled.
    let outcome = settled(wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c", "tab_id": "tab-a" }),
        with_signal(&controller, json!({})),
    ))
    .await;
    assert_eq!(outcome["outcome"], "aborted");
    assert_eq!(outcome["cancelling"], json!([T1]));
    until(2000, || !server.posts().is_empty()).await;
    assert_eq!(server.posts().len(), 1);
    assert_eq!(server.posts()[0]["body"], r#"{"tab_id":"tab-a"}"#);
    until(2000, || {
        rust(&g.job(T1.into()).unwrap())["status"] == "aborted"
    })
    .await;
    const T3: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c03";
    server.set_status(T3, "pending");

    // A subscriber that calls waitFor for every change: each call answers, nothing breaks.
    let g = std::rc::Rc::new(g);
    let inner = std::rc::Rc::clone(&g);
    let outcomes = js_sys::Array::new();
    let seen = outcomes.clone();
    let listener = wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |_| {
        if seen.length() < 3 {
            seen.push(&inner.wait_for(JsValue::from_str(T3), JsValue::UNDEFINED));
        }
    });
    let _off = g.subscribe(listener.as_ref().clone()).unwrap();
    let waiting = wait(
        &g,
        json!({ "task_ids": [T3], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    g.apply_task_status(ts(js(json!({ "task_id": T3, "status": "success" }))))
        .unwrap();
    assert_eq!(settled(waiting).await["outcome"], "done");
    assert!(outcomes.length() >= 1);
    for p in outcomes.iter() {
        let outcome = settled(p.dyn_into().unwrap()).await;
        assert!(
            ["done", "refused"].contains(&outcome["outcome"].as_str().unwrap()),
            "{outcome}"
        );
    }
    drop(listener);
}
