//! Browser tests (Chromium and Firefox) of what issue #40 asks of `waitFor`: every wait ends,
//! and the page's end is decided for the whole browser. Each test is one finding of the issue,
//! reproduced against the stand-in server of `support::wait`:
//! - a wait's news never depends on the app's own `follow()` (started, stopped, replaced);
//! - a wait that can no longer hear anything settles at once, with why: a 401, a logout or a
//!   user switch in another tab (whatever order its storage events come in), a record that
//!   expired or went;
//! - an event whose `errors` hold a lone surrogate ends its job;
//! - the page's end and an abort cancel nothing another guard, another tab or a
//!   `cancelOnClose: false` waiter awaits, each job once, none whose cancel is in flight;
//! - bad options are refused, naming what is wrong; options with a `toJSON` are read as JSON
//!   writes them; a task id given in two cases is awaited once;
//! - a job purged when its session ended is refused to the next session, with nothing sent.
#![cfg(all(target_arch = "wasm32", feature = "follow"))]

use serde_json::{json, Value};
use superset_job_guard::web::JobGuard;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::wait::*;
use support::*;

const T3: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c03";
const T4: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c04";

/// Polls of the task stream the server saw.
fn polls(server: &Server) -> usize {
    server
        .requests
        .iter()
        .filter(|r| {
            rust(r)["url"]
                .as_str()
                .unwrap_or("")
                .contains("status_changes")
        })
        .count()
}

/// `follow(options)` as JS calls it: the `stop` function.
fn follow(g: &JobGuard, options: Value) -> js_sys::Function {
    g.follow(js(options)).unwrap().dyn_into().unwrap()
}

/// A quick cadence, so that a test does not wait for Superset's.
fn quick() -> Value {
    json!({ "intervalMs": 100, "maxIntervalMs": 200 })
}

/// The `localStorage` of a same-origin frame: its changes reach this page as `storage` events,
/// as another tab's do.
fn other_tab() -> web_sys::Storage {
    js_sys::Function::new_no_args(
        r#"const frame = document.createElement("iframe");
           document.body.appendChild(frame);
           return frame.contentWindow.localStorage;"#,
    )
    .call0(&JsValue::NULL)
    .unwrap()
    .unchecked_into()
}

#[wasm_bindgen_test]
async fn the_apps_own_follow_stopped_or_replaced_never_stops_a_wait() {
    let ns = fresh("ends-follow");
    let server = Server::new(json!({ T1: "pending", T2: "pending" }));
    let g = guard(&ns, &server, json!({}));
    // waitFor starts polling; the app's follow() takes a turn and stops: the wait's goes on.
    let first = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    let stop = follow(&g, quick());
    stop.call0(&JsValue::NULL).unwrap();
    stop.call0(&JsValue::NULL).unwrap(); // a second stop is harmless
    sleep(300).await;
    let before = polls(&server);
    server.set_status(T1, "success");
    let outcome = settled(first).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert!(polls(&server) > before, "the wait's own follow polled");

    // The app's follow() first, a wait, then the app stops: the wait still hears.
    let stop = follow(&g, quick());
    let second = wait(
        &g,
        json!({ "task_ids": [T2], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    sleep(150).await;
    stop.call0(&JsValue::NULL).unwrap();
    server.set_status(T2, "success");
    assert_eq!(settled(second).await["outcome"], "done");

    // Nothing waits and nobody follows: no more polls.
    sleep(300).await;
    let quiet = polls(&server);
    sleep(700).await;
    assert_eq!(polls(&server), quiet, "no poll once nothing holds follow()");
}

#[wasm_bindgen_test]
async fn a_401_settles_every_wait_unauthenticated_until_the_next_login() {
    let ns = fresh("ends-401");
    let server = Server::new(json!({ T1: "pending" }));
    server.set("unauthorized", json!(true));
    let g = guard(&ns, &server, json!({}));
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    let outcome = settled(waiting).await;
    assert_eq!(outcome["outcome"], "refused", "{outcome}");
    assert_eq!(outcome["reason"], "unauthenticated");
    // Until the next login nothing is heard: a new wait is refused at once, nothing sent.
    let sent = server.count();
    let again = settled(wait(&g, json!(T1), JsValue::UNDEFINED)).await;
    assert_eq!(again["reason"], "unauthenticated");
    assert_eq!(server.count(), sent);
    // Signed in again: waits are heard again.
    server.set("unauthorized", json!(false));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let waiting = wait(&g, json!(T1), JsValue::UNDEFINED);
    server.set_status(T1, "success");
    assert_eq!(settled(waiting).await["outcome"], "done");
}

#[wasm_bindgen_test]
async fn a_record_that_expires_or_goes_settles_the_wait_at_once() {
    // Expired (ttlSeconds), with nothing heard: its timer.
    let ns = fresh("ends-expired");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({ "ttlSeconds": 0.4 }));
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    sleep(250).await;
    assert!(!has_settled(&waiting).await);
    let outcome = settled(waiting).await;
    assert_eq!(outcome["reason"], "expired", "{outcome}");
    assert_eq!(outcome["jobId"], T1);

    // Evicted over maxJobs by a record of this tab.
    let ns = fresh("ends-evicted");
    let g = guard(&ns, &server, json!({ "maxJobs": 1 }));
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    g.record_tasks(ts(js(json!({ "task_ids": [T2], "cursor": "c" }))))
        .unwrap();
    let outcome = settled(waiting).await;
    assert_eq!(outcome["reason"], "removed", "{outcome}");

    // Removed by page code in this tab (no event): heard after a round of follow().
    let ns = fresh("ends-removed");
    let g = guard(&ns, &server, json!({}));
    let _stop = follow(&g, quick());
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    sleep(200).await;
    storage().remove_item(&format!("{ns}:v1:job:{T1}")).unwrap();
    let outcome = settled(waiting).await;
    assert_eq!(outcome["reason"], "removed", "{outcome}");
}

#[wasm_bindgen_test]
async fn an_event_whose_errors_hold_a_lone_surrogate_ends_its_job() {
    let ns = fresh("ends-surrogate");
    let server = Server::new(json!({}));
    let g = guard(&ns, &server, json!({ "contract": "async_event" }));
    let meta = json!({ "channel_id": "c1", "job_id": "j1", "user_id": "1", "status": "running",
                       "errors": [], "result_url": null });
    let waiting = wait(&g, meta, JsValue::UNDEFINED);
    // As JSON.parse gives it: a JS string holding a lone surrogate.
    let event = js_sys::JSON::parse(
        r#"{ "channel_id": "c1", "job_id": "j1", "user_id": "1", "status": "error",
             "errors": [{ "message": "bad \ud800 byte" }], "result_url": null }"#,
    )
    .unwrap();
    let applied = g.apply_event(ts(event)).unwrap();
    assert_eq!(rust(&applied)["status"], "error");
    let outcome = settled(waiting).await;
    assert_eq!(outcome["outcome"], "failed", "{outcome}");
    assert_eq!(outcome["errors"][0]["message"], "bad \u{FFFD} byte");
}

#[wasm_bindgen_test]
async fn another_tabs_logout_or_switch_settles_the_wait_whatever_order_its_keys_go() {
    let other = other_tab();
    for (order, expected) in [
        (["job", "session"], "no_session"),
        (["session", "job"], "no_session"),
        (["switch", "job"], "user_changed"),
        (["job", "switch"], "user_changed"),
    ] {
        let ns = fresh("ends-tabs");
        let server = Server::new(json!({ T1: "pending" }));
        let g = guard(&ns, &server, json!({}));
        let waiting = wait(
            &g,
            json!({ "task_ids": [T1], "cursor": "c" }),
            JsValue::UNDEFINED,
        );
        sleep(50).await;
        for step in order {
            match step {
                "job" => other.remove_item(&format!("{ns}:v1:job:{T1}")).unwrap(),
                "session" => other.remove_item(&format!("{ns}:v1:session")).unwrap(),
                _ => other
                    .set_item(
                        &format!("{ns}:v1:session"),
                        r#"{"user_id":"2","channel_id":null}"#,
                    )
                    .unwrap(),
            }
            sleep(5).await;
        }
        let outcome = settled(waiting).await;
        assert_eq!(outcome["outcome"], "refused", "{order:?}: {outcome}");
        assert_eq!(outcome["reason"], expected, "{order:?}: {outcome}");
        assert!(server.posts().is_empty(), "nothing sent");
    }
}

#[wasm_bindgen_test]
async fn the_pages_end_cancels_each_job_once_and_none_another_waiter_awaits() {
    let ns = fresh("ends-close");
    let server = Server::new(json!({ T1: "pending", T2: "pending", T3: "pending", T4: "pending" }));
    server.set("hang", json!([T3]));
    let a = guard(&ns, &server, json!({}));
    let b = guard(&ns, &server, json!({}));
    let body = |t: &str| json!({ "task_ids": [t], "cursor": "c", "tab_id": "tab-a" });
    // T1: guard B lets it run on (cancelOnClose: false), guard A would cancel it.
    let _b1 = wait(&b, json!(body(T1)), js(json!({ "cancelOnClose": false })));
    let _a1 = wait(&a, json!(T1), JsValue::UNDEFINED);
    // T2: both guards would cancel it: one request.
    let _a2 = wait(&a, body(T2), JsValue::UNDEFINED);
    let _b2 = wait(&b, json!(T2), JsValue::UNDEFINED);
    // T3: its cancel() is in flight (the server never answers it).
    let _a3 = wait(&a, body(T3), JsValue::UNDEFINED);
    let _running = a.cancel(T3.into(), JsValue::UNDEFINED);
    // T4: another tab awaits it (its entry, as that tab's guard keeps it).
    let _a4 = wait(&a, body(T4), JsValue::UNDEFINED);
    storage()
        .set_item(
            &format!("{ns}:v1:waits:othertab-1"),
            &json!({ "jobs": [T4], "until": now() + 60_000 }).to_string(),
        )
        .unwrap();
    // This page's own entries list what its guards await.
    let entries: Vec<String> = keys_of(&ns)
        .into_iter()
        .filter(|k| k.contains(":v1:waits:") && !k.ends_with("othertab-1"))
        .collect();
    assert_eq!(entries.len(), 2, "{entries:?}");
    until_posts(&server, 1).await; // the running cancel of T3
    pagehide(false);
    sleep(100).await;
    let posts: Vec<String> = server
        .posts()
        .iter()
        .map(|p| p["url"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        posts,
        [
            format!("/api/v1/task/{T3}/cancel"),
            format!("/api/v1/task/{T2}/cancel")
        ],
        "T2 once; not T1 (kept), not T3 again (in flight), not T4 (another tab's)"
    );
    // The page's entries went with it; the other tab's stays.
    assert_eq!(
        keys_of(&ns)
            .iter()
            .filter(|k| k.contains(":v1:waits:"))
            .count(),
        1
    );

    drop((a, b));

    // An entry past its time is not believed: the job is cancelled, the entry removed.
    let ns = fresh("ends-close-stale");
    let server = Server::new(json!({ T4: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let _w = wait(&g, body(T4), JsValue::UNDEFINED);
    storage()
        .set_item(
            &format!("{ns}:v1:waits:crashed-1"),
            &json!({ "jobs": [T4], "until": now() - 1 }).to_string(),
        )
        .unwrap();
    pagehide(false);
    assert_eq!(server.posts().len(), 1, "{:?}", server.posts());
    assert_eq!(
        storage()
            .get_item(&format!("{ns}:v1:waits:crashed-1"))
            .unwrap(),
        None
    );
}

/// `Date.now()`, as a guard writes it in an entry.
fn now() -> u64 {
    js_sys::Date::now() as u64
}

async fn until_posts(server: &Server, n: usize) {
    until(2000, || server.posts().len() >= n).await;
    assert!(server.posts().len() >= n, "{:?}", server.posts());
}

#[wasm_bindgen_test]
async fn an_abort_cancels_nothing_another_guard_or_tab_awaits() {
    let ns = fresh("ends-abort");
    let server = Server::new(json!({ T1: "pending", T2: "pending" }));
    let a = guard(&ns, &server, json!({}));
    let b = guard(&ns, &server, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let aborted = wait(
        &a,
        json!({ "task_ids": [T1, T2], "cursor": "c", "tab_id": "tab-a" }),
        with_signal(&controller, json!({})),
    );
    let _b = wait(&b, json!(T1), JsValue::UNDEFINED);
    storage()
        .set_item(
            &format!("{ns}:v1:waits:othertab-1"),
            &json!({ "jobs": [T2], "until": now() + 60_000 }).to_string(),
        )
        .unwrap();
    controller.abort();
    let outcome = settled(aborted).await;
    assert_eq!(outcome["outcome"], "aborted");
    assert_eq!(outcome["cancelling"], json!([]), "{outcome}");
    sleep(200).await;
    assert!(server.posts().is_empty(), "{:?}", server.posts());
}

#[wasm_bindgen_test]
async fn bad_options_are_refused_naming_what_is_wrong() {
    let ns = fresh("ends-options");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({}));
    g.record_tasks(ts(js(json!({ "task_ids": [T1], "cursor": "c" }))))
        .unwrap();
    let controller = web_sys::AbortController::new().unwrap();
    let options = |script: &str| {
        js_sys::Function::new_with_args("controller", script)
            .call1(&JsValue::NULL, &controller)
            .unwrap()
    };
    for (given, says) in [
        (
            "return { signal: controller }",
            "`signal` must be an AbortSignal",
        ),
        (
            "return { signal: { aborted: false, addEventListener() {} } }",
            "`signal` must be an AbortSignal",
        ),
        (
            "return { signal: 'abort' }",
            "`signal` must be an AbortSignal",
        ),
        ("return controller.signal", "not an AbortSignal"),
        ("return 5", "must be an object"),
        ("return 'x'", "must be an object"),
        ("return [controller.signal]", "must be an object"),
        ("return () => 1", "function"),
        (
            "return { signl: controller.signal }",
            "unknown option `signl` of waitFor",
        ),
        ("return { staleTimeoutMs: '600' }", "`staleTimeoutMs`"),
    ] {
        let outcome = settled(g.wait_for(JsValue::from_str(T1), options(given))).await;
        assert_eq!(outcome["outcome"], "refused", "{given}: {outcome}");
        assert_eq!(outcome["reason"], "invalid_input", "{given}: {outcome}");
        let message = outcome["message"].as_str().unwrap();
        assert!(message.contains(says), "{given}: {message}");
    }
    assert!(server.posts().is_empty());
    // The constructor refuses an AbortSignal given as its options.
    let thrown = JobGuard::new(controller.signal().into()).thrown();
    assert_guard_error(thrown, "invalid_options");
}

#[wasm_bindgen_test]
async fn options_with_a_to_json_are_read_as_json_writes_them_and_keep_their_fetch() {
    let ns = fresh("ends-tojson");
    let server = Server::new(json!({ T1: "pending" }));
    let options = js_sys::Function::new_with_args(
        "ns, fetch",
        r#"class Opts {
             constructor() { this.fetch = fetch; this.scratch = 1; }
             toJSON() { return { namespace: ns, contract: "task",
                                 headers: { "X-CSRFToken": "csrf-1" } }; }
           }
           return new Opts();"#,
    )
    .call2(&JsValue::NULL, &JsValue::from_str(&ns), &server.fetch)
    .unwrap();
    let g = JobGuard::new(options).unwrap();
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_tasks(ts(js(json!({ "task_ids": [T1], "cursor": "c" }))))
        .unwrap();
    let outcome = rust(
        &wasm_bindgen_futures::JsFuture::from(g.cancel(T1.into(), JsValue::UNDEFINED))
            .await
            .unwrap(),
    );
    assert_eq!(outcome["outcome"], "cancelled", "{outcome}");
    let posts = server.posts();
    assert_eq!(posts.len(), 1, "through the options' own fetch");
    assert_eq!(posts[0]["csrf"], "csrf-1", "the headers its toJSON gave");
}

#[wasm_bindgen_test]
async fn a_task_id_in_two_cases_is_awaited_and_cancelled_once() {
    let ns = fresh("ends-case");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let controller = web_sys::AbortController::new().unwrap();
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1, T1.to_uppercase()], "cursor": "c" }),
        with_signal(&controller, json!({})),
    );
    let again = wait(&g, json!([T1, T1.to_uppercase()]), JsValue::UNDEFINED);
    controller.abort();
    let outcome = settled(waiting).await;
    assert_eq!(outcome["jobIds"], json!([T1]), "{outcome}");
    assert_eq!(
        outcome["cancelling"],
        json!([]),
        "the other waiter awaits it"
    );
    g.apply_task_status(ts(js(
        json!({ "task_id": T1.to_uppercase(), "status": "success" }),
    )))
    .unwrap();
    let done = settled(again).await;
    assert_eq!(done["outcome"], "done", "{done}");
    assert_eq!(done["jobIds"], json!([T1]));
}

#[wasm_bindgen_test]
async fn a_job_purged_at_a_sign_in_is_refused_to_the_next_session_with_nothing_sent() {
    let ns = fresh("ends-purged");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let body = json!({ "task_ids": [T1], "cursor": "c", "tab_id": "tab-a" });
    let first = wait(&g, body.clone(), JsValue::UNDEFINED);
    // User 2 signs in: user 1's wait ends, its task is purged.
    g.login(ts(js(json!({ "userId": 2 })))).unwrap();
    assert_eq!(settled(first).await["reason"], "user_changed");
    // User 1's 202 arrives late, handed to waitFor under user 2: refused, nothing recorded.
    let controller = web_sys::AbortController::new().unwrap();
    let late = settled(wait(&g, body, with_signal(&controller, json!({})))).await;
    assert_eq!(late["outcome"], "refused", "{late}");
    assert_eq!(late["reason"], "not_job_owner");
    controller.abort();
    assert_eq!(rust(&g.job(T1.into()).unwrap()), Value::Null);
    sleep(200).await;
    assert!(server.posts().is_empty(), "{:?}", server.posts());
    // Nothing of it stays in storage.
    g.logout().unwrap();
    assert!(keys_of(&ns).is_empty(), "{:?}", keys_of(&ns));

    // The same, when another tab signs user 2 in: this tab hears the session change, then the
    // record's removal, and remembers the job as purged.
    let ns = fresh("ends-purged-tab");
    let g = guard(&ns, &server, json!({}));
    let body = json!({ "task_ids": [T2], "cursor": "c", "tab_id": "tab-a" });
    let first = wait(&g, body.clone(), JsValue::UNDEFINED);
    let other = other_tab();
    other
        .set_item(
            &format!("{ns}:v1:session"),
            r#"{"user_id":"2","channel_id":null}"#,
        )
        .unwrap();
    other.remove_item(&format!("{ns}:v1:job:{T2}")).unwrap();
    assert_eq!(settled(first).await["reason"], "user_changed");
    // The record's removal reaches this page as its own event (in a real tab the record reads
    // as there until then, and a 202 naming it is refused for that too).
    sleep(50).await;
    let late = settled(wait(&g, body, JsValue::UNDEFINED)).await;
    assert_eq!(late["reason"], "not_job_owner", "{late}");
    assert!(server.posts().is_empty(), "{:?}", server.posts());
}

#[wasm_bindgen_test]
async fn the_apps_slow_cadence_or_a_guard_of_the_other_contract_never_keeps_a_wait_waiting() {
    // The app's own follow() with the slowest cadence, after a wait: the wait's still polls at
    // Superset's.
    let ns = fresh("ends-cadence");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        js(json!({ "staleTimeoutMs": 6000 })),
    );
    let _stop = follow(&g, json!({ "intervalMs": 600000, "maxIntervalMs": 600000 }));
    sleep(300).await;
    server.set_status(T1, "success");
    let outcome = settled(waiting).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");

    // An async_event guard of the same namespace follows first: a task guard's wait still polls
    // its own stream (each stream has its own poller lock).
    let ns = fresh("ends-contracts");
    let server = Server::new(json!({ T2: "pending" }));
    let events = JobGuard::new(js(json!({ "namespace": ns }))).unwrap();
    events.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let _events_follow = events.follow(JsValue::UNDEFINED).unwrap();
    let tasks = guard(&ns, &server, json!({}));
    let waiting = wait(
        &tasks,
        json!({ "task_ids": [T2], "cursor": "c" }),
        js(json!({ "staleTimeoutMs": 6000 })),
    );
    sleep(300).await;
    server.set_status(T2, "success");
    let outcome = settled(waiting).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
}

#[wasm_bindgen_test]
async fn a_page_kept_in_the_back_forward_cache_lets_polling_go_and_takes_it_up_when_shown() {
    let ns = fresh("ends-bfcache");
    let server = Server::new(json!({ T1: "pending" }));
    let g = guard(&ns, &server, json!({}));
    let waiting = wait(
        &g,
        json!({ "task_ids": [T1], "cursor": "c" }),
        JsValue::UNDEFINED,
    );
    let _stop = follow(&g, quick());
    sleep(300).await;
    assert!(polls(&server) > 0);
    let show = |persisted: bool| {
        let init = web_sys::PageTransitionEventInit::new();
        init.set_persisted(persisted);
        let event =
            web_sys::PageTransitionEvent::new_with_event_init_dict("pageshow", &init).unwrap();
        web_sys::window().unwrap().dispatch_event(&event).unwrap();
    };
    pagehide(true);
    sleep(100).await;
    let frozen = polls(&server);
    sleep(600).await;
    assert_eq!(polls(&server), frozen, "no poll while kept in the cache");
    show(true);
    server.set_status(T1, "success");
    let outcome = settled(waiting).await;
    assert_eq!(outcome["outcome"], "done", "{outcome}");
    assert!(polls(&server) > frozen, "polling again once shown");
}
