//! Browser tests: the exported `JobGuard` against the browser's real `localStorage`, in
//! Chromium and Firefox (`wasm-pack test --headless --chrome --firefox`). Two guards in one
//! page share localStorage the way two tabs of one origin do.
#![cfg(target_arch = "wasm32")]

use serde_json::{json, Value};
use superset_job_guard::web::{is_guard_error, JobGuard};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::*;

fn guard(ns: &str) -> JobGuard {
    JobGuard::new(js(json!({ "namespace": ns }))).unwrap()
}

fn guard_with(options: Value) -> JobGuard {
    JobGuard::new(js(options)).unwrap()
}

fn login(g: &mut JobGuard, user: Value) -> Value {
    rust(&g.login(ts(js(json!({ "userId": user })))).unwrap())
}

fn meta(job: &str, user: Value, channel: &str, status: &str) -> JsValue {
    js(
        json!({"channel_id": channel, "job_id": job, "user_id": user,
              "status": status, "errors": [], "result_url": null}),
    )
}

fn record(g: &mut JobGuard, job: &str, user: Value, channel: &str, status: &str) -> Value {
    rust(&g.record_job(ts(meta(job, user, channel, status))).unwrap())
}

fn check(g: &mut JobGuard, job: &str) -> Value {
    rust(&g.check_cancel(JsValue::from_str(job)).unwrap())
}

fn reason(g: &mut JobGuard, job: &str) -> Value {
    check(g, job).get("reason").cloned().unwrap_or(Value::Null)
}

fn error_message(thrown: &JsValue) -> String {
    String::from(thrown.dyn_ref::<js_sys::Error>().unwrap().message())
}

fn ids(g: &mut JobGuard) -> Vec<String> {
    let jobs = rust(&g.jobs().unwrap());
    jobs.as_array()
        .unwrap()
        .iter()
        .map(|r| r["job_id"].as_str().unwrap().to_owned())
        .collect()
}

#[wasm_bindgen_test]
fn records_superset_metadata_in_local_storage_under_documented_keys() {
    let ns = fresh("t-keys");
    let mut g = guard(&ns);
    assert_eq!(login(&mut g, json!(1)), json!({ "purged": 0 }));
    // Exactly the 202 body from the contract file.
    let meta = js(json!({"channel_id": "1095c1c9-b6b1-444d-aa83-8e323b32831f",
        "job_id": "10a0bd9a-03c8-4737-9345-f4234ba86512", "user_id": "1",
        "status": "pending", "errors": [], "result_url": null}));
    let rec = rust(&g.record_job(ts(meta)).unwrap());
    assert_eq!(rec["job_id"], "10a0bd9a-03c8-4737-9345-f4234ba86512");
    assert_eq!(rec["user_id"], "1");
    assert_eq!(rec["result_url"], Value::Null);
    assert_eq!(rec["errors"], json!([]));
    let created = rec["created_at"].as_f64().unwrap();
    assert!((created - js_sys::Date::now()).abs() < 60_000.0);
    assert_eq!(rec["updated_at"], rec["created_at"]);
    assert_eq!(
        keys_of(&ns),
        [
            format!("{ns}:v1:job:10a0bd9a-03c8-4737-9345-f4234ba86512"),
            format!("{ns}:v1:session"),
        ]
    );
    let stored = storage()
        .get_item(&format!("{ns}:v1:job:10a0bd9a-03c8-4737-9345-f4234ba86512"))
        .unwrap()
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&stored).unwrap(), rec);
    assert_eq!(
        rust(&g.session().unwrap()),
        json!({"userId": "1", "channelId": "1095c1c9-b6b1-444d-aa83-8e323b32831f", "guestKey": null})
    );
    assert_eq!(
        rust(
            &g.job(JsValue::from_str("10a0bd9a-03c8-4737-9345-f4234ba86512"))
                .unwrap()
        ),
        rec
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn default_options_use_the_documented_namespace() {
    let ns = fresh("superset-job-guard");
    let mut g = JobGuard::new(JsValue::UNDEFINED).unwrap();
    login(&mut g, json!("5"));
    assert_eq!(keys_of(&ns), ["superset-job-guard:v1:session"]);
    g.logout().unwrap();
    assert!(keys_of(&ns).is_empty());
}

#[wasm_bindgen_test]
fn misuse_throws_guard_errors_with_codes() {
    let ns = fresh("t-errors");
    for bad in [
        json!({"namespace": "a:b"}),
        json!({"ttlSeconds": 0}),
        json!({"maxJobs": 1.5}),
        json!({"storage": "cookie"}),
        json!({"ttlSecond": 60}),
        json!("local"),
    ] {
        assert_guard_error(JobGuard::new(js(bad)).err().unwrap(), "invalid_options");
    }
    let mut g = guard(&ns);
    let no_session = g
        .record_job(ts(meta("j", json!("1"), "c", "pending")))
        .thrown();
    assert!(error_message(&no_session).contains("login"));
    assert_guard_error(no_session, "no_session");
    for bad in [
        json!(null),
        json!({}),
        json!({"userId": true}),
        json!({"userId": 1, "channelId": 5}),
    ] {
        assert_guard_error(g.login(ts(js(bad))).thrown(), "invalid_session");
    }
    login(&mut g, json!("1"));
    for bad in [
        json!({"job_id": "j", "user_id": "1", "status": "pending"}),
        json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "queued"}),
        json!({"channel_id": "c", "job_id": "", "user_id": "1", "status": "pending"}),
        json!(42),
    ] {
        assert_guard_error(g.record_job(ts(js(bad))).thrown(), "invalid_job");
    }
    assert_guard_error(g.record_job(ts(JsValue::UNDEFINED)).thrown(), "invalid_job");
    assert_guard_error(
        g.apply_event(ts(js(json!({"job_id": 1})))).thrown(),
        "invalid_job",
    );
    assert!(!is_guard_error(&js_sys::Error::new("plain").into()));
    assert!(!is_guard_error(&JsValue::NULL));
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn refuses_to_store_another_users_job() {
    let ns = fresh("t-foreign");
    let mut g = guard(&ns);
    login(&mut g, json!(1));
    let err = g
        .record_job(ts(meta("b-job", json!("2"), "c", "pending")))
        .thrown();
    assert!(error_message(&err).starts_with("Not job owner"));
    assert_guard_error(err, "not_job_owner");
    assert_guard_error(
        g.record_job(ts(meta("guest-job", Value::Null, "c", "pending")))
            .thrown(),
        "not_job_owner",
    );
    assert_eq!(keys_of(&ns), [format!("{ns}:v1:session")]);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn user_ids_compare_as_strings() {
    let ns = fresh("t-ids");
    let mut g = guard(&ns);
    login(&mut g, json!(7));
    record(&mut g, "j", json!("7"), "c", "running");
    let rec = record(&mut g, "k", json!(7), "c", "running");
    assert_eq!(rec["user_id"], "7");
    assert_eq!(check(&mut g, "j")["allowed"], true);
    assert_eq!(rust(&g.session().unwrap())["userId"], "7");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn logout_clears_the_namespace_and_supersets_last_event_id() {
    let ns = fresh("t-logout");
    let mut g = guard(&ns);
    login(&mut g, json!("1"));
    record(&mut g, "j1", json!("1"), "c", "running");
    record(&mut g, "j2", json!("1"), "c", "done");
    let store = storage();
    store
        .set_item(&format!("{ns}:v2:job:future"), "{}")
        .unwrap();
    store
        .set_item("last_async_event_id", "1607471525180-0")
        .unwrap();
    store
        .set_item(&format!("{ns}-other:v1:session"), "{}")
        .unwrap();
    store.set_item("unrelated-app-key", "keep me").unwrap();
    assert_eq!(rust(&g.logout().unwrap())["purged"], json!(2));
    assert!(keys_of(&ns).is_empty());
    assert_eq!(store.get_item("last_async_event_id").unwrap(), None);
    assert_eq!(
        store.get_item("unrelated-app-key").unwrap().as_deref(),
        Some("keep me")
    );
    assert!(store
        .get_item(&format!("{ns}-other:v1:session"))
        .unwrap()
        .is_some());
    assert_eq!(rust(&g.session().unwrap()), Value::Null);
    assert_eq!(
        rust(&g.logout().unwrap())["purged"],
        json!(0),
        "second logout is harmless"
    );
    assert_eq!(reason(&mut g, "j1"), "no_session");
    store.remove_item("unrelated-app-key").unwrap();
    store
        .remove_item(&format!("{ns}-other:v1:session"))
        .unwrap();
}

#[wasm_bindgen_test]
fn the_seeds_bug_user_b_never_sees_user_as_job() {
    let ns = fresh("t-seed");
    let mut g = guard(&ns);
    login(&mut g, json!("1"));
    record(&mut g, "a-job", json!("1"), "chan-a", "running");
    assert_eq!(rust(&g.logout().unwrap())["purged"], json!(1));
    login(&mut g, json!("2"));
    assert_eq!(
        rust(&g.job(JsValue::from_str("a-job")).unwrap()),
        Value::Null
    );
    assert_eq!(ids(&mut g), Vec::<String>::new());
    let refused = check(&mut g, "a-job");
    assert_eq!(refused["allowed"], false);
    assert_eq!(refused["reason"], "unknown_job");
    assert!(refused["message"].as_str().unwrap().contains("a-job"));
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn login_as_another_user_without_logout_purges_every_record() {
    let ns = fresh("t-switch");
    let mut g = guard(&ns);
    login(&mut g, json!("1"));
    record(&mut g, "a1", json!("1"), "chan-a", "running");
    record(&mut g, "a2", json!("1"), "chan-a", "error");
    assert_eq!(login(&mut g, json!("2")), json!({ "purged": 2 }));
    assert_eq!(keys_of(&ns), [format!("{ns}:v1:session")]);
    assert_eq!(reason(&mut g, "a1"), "unknown_job");
    // The same user again (a reload) keeps what it owns.
    record(&mut g, "b1", json!("2"), "chan-b", "running");
    assert_eq!(login(&mut g, json!(2)), json!({ "purged": 0 }));
    assert_eq!(check(&mut g, "b1")["allowed"], true);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn a_new_channel_is_adopted_and_the_old_channels_records_dropped() {
    let ns = fresh("t-channel");
    let mut g = guard(&ns);
    login(&mut g, json!("1"));
    record(&mut g, "old", json!("1"), "chan-a", "running");
    record(&mut g, "new", json!("1"), "chan-b", "pending");
    assert_eq!(rust(&g.session().unwrap())["channelId"], "chan-b");
    assert_eq!(reason(&mut g, "old"), "unknown_job");
    assert_eq!(ids(&mut g), ["new"]);
    // A login naming a new channel does the same.
    assert_eq!(
        rust(
            &g.login(ts(js(json!({"userId": "1", "channelId": "chan-c"}))))
                .unwrap()
        ),
        json!({ "purged": 1 })
    );
    assert_eq!(reason(&mut g, "new"), "unknown_job");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn guests_own_jobs_through_their_channel() {
    let ns = fresh("t-guest");
    let mut g = guard(&ns);
    g.login(ts(js(json!({"userId": null, "channelId": "guest-aa"}))))
        .unwrap();
    assert_eq!(
        rust(&g.session().unwrap()),
        json!({"userId": null, "channelId": "guest-aa", "guestKey": null})
    );
    let rec = record(&mut g, "g1", Value::Null, "guest-aa", "running");
    assert_eq!(rec["user_id"], Value::Null);
    assert_eq!(check(&mut g, "g1")["allowed"], true);
    g.login(ts(js(json!({"userId": null, "channelId": "guest-bb"}))))
        .unwrap();
    assert_eq!(reason(&mut g, "g1"), "unknown_job");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn guests_of_one_shared_channel_are_told_apart_by_their_guest_key() {
    // Superset 6.1.0: every guest is user null, and two guest tokens share one channel.
    let ns = fresh("t-guest-key");
    let mut a = guard(&ns);
    let mut b = guard(&ns);
    a.login(ts(js(json!({"userId": null, "guestKey": "key-a"}))))
        .unwrap();
    let rec = record(&mut a, "g1", Value::Null, "shared-chan", "running");
    assert_eq!(rec["guest_key"], "key-a");
    assert_eq!(
        check(&mut b, "g1")["allowed"],
        true,
        "the same guest, another tab"
    );
    // Another guest signs in (another tab): the first guest's record is gone in both tabs.
    let purged = rust(
        &b.login(ts(js(json!({"userId": null, "guestKey": "key-b"}))))
            .unwrap(),
    );
    assert_eq!(purged["purged"], 1);
    assert_eq!(reason(&mut a, "g1"), "unknown_job");
    assert_eq!(rust(&a.session().unwrap())["guestKey"], "key-b");
    a.logout().unwrap();
}

#[wasm_bindgen_test]
fn check_cancel_gives_every_reason() {
    let ns = fresh("t-check");
    let mut g = guard(&ns);
    assert_eq!(reason(&mut g, "j"), "no_session");
    login(&mut g, json!("1"));
    assert_eq!(reason(&mut g, "j"), "unknown_job");
    assert_eq!(
        rust(&g.check_cancel(JsValue::from_f64(3.0)).unwrap())["reason"],
        "unknown_job"
    );
    let rec = record(&mut g, "j", json!("1"), "c", "running");
    assert_eq!(check(&mut g, "j"), json!({"allowed": true, "job": rec}));
    record(&mut g, "d", json!("1"), "c", "done");
    let finished = check(&mut g, "d");
    assert_eq!(finished["reason"], "already_finished");
    assert!(finished["message"].as_str().unwrap().contains("done"));
    // A record of another user under our namespace (forged, or left by a buggy writer).
    let forged = json!({"channel_id": "c", "job_id": "x", "user_id": "2", "status": "running",
        "errors": [], "result_url": null, "created_at": js_sys::Date::now(),
        "updated_at": js_sys::Date::now()});
    storage()
        .set_item(&format!("{ns}:v1:job:x"), &forged.to_string())
        .unwrap();
    let refused = check(&mut g, "x");
    assert_eq!(refused["reason"], "not_job_owner");
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .starts_with("Not job owner"));
    assert_eq!(rust(&g.job(JsValue::from_str("x")).unwrap()), Value::Null);
    // Both were recorded within a millisecond or two: compare as a set.
    let mut own = ids(&mut g);
    own.sort();
    assert_eq!(own, ["d", "j"], "the forged record is not listed");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn events_update_the_sessions_records_only() {
    let ns = fresh("t-events");
    let mut g = guard(&ns);
    login(&mut g, json!("1"));
    let created = record(&mut g, "j", json!("1"), "c", "pending");
    let ev = js(
        json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "done",
        "errors": [], "result_url": "/api/v1/chart/data/qc-ecd766dd461f294e1bcdaa321e0e8463",
        "id": "1607477697866-0"}),
    );
    let updated = rust(&g.apply_event(ts(ev)).unwrap());
    assert_eq!(updated["status"], "done");
    assert_eq!(
        updated["result_url"],
        "/api/v1/chart/data/qc-ecd766dd461f294e1bcdaa321e0e8463"
    );
    assert_eq!(updated["created_at"], created["created_at"]);
    assert_eq!(rust(&g.job(JsValue::from_str("j")).unwrap()), updated);
    assert_eq!(reason(&mut g, "j"), "already_finished");
    // A terminal record keeps its final status.
    let late = rust(
        &g.apply_event(ts(meta("j", json!("1"), "c", "running")))
            .unwrap(),
    );
    assert_eq!(late["status"], "done");
    // Error events keep Superset's errors.
    record(&mut g, "e", json!("1"), "c", "running");
    let err_ev = js(
        json!({"channel_id": "c", "job_id": "e", "user_id": "1", "status": "error",
        "errors": [{"message": "Error: relation 'foo' does not exist"}], "result_url": null}),
    );
    let failed = rust(&g.apply_event(ts(err_ev)).unwrap());
    assert_eq!(
        failed["errors"][0]["message"],
        "Error: relation 'foo' does not exist"
    );
    // Events of others change nothing and return null.
    record(&mut g, "k", json!("1"), "c", "running");
    for ev in [
        meta("k", json!("2"), "c", "error"),
        meta("k", json!("1"), "other-channel", "error"),
        meta("never-recorded", json!("1"), "c", "done"),
    ] {
        assert_eq!(rust(&g.apply_event(ts(ev)).unwrap()), Value::Null);
    }
    assert_eq!(check(&mut g, "k")["allowed"], true);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn re_recording_a_job_keeps_created_at() {
    let ns = fresh("t-rerecord");
    let mut g = guard(&ns);
    login(&mut g, json!("1"));
    let first = record(&mut g, "j", json!("1"), "c", "pending");
    // Rewind the stored created_at so the kept value is recognisable.
    let mut stored = first.clone();
    stored["created_at"] = json!(first["created_at"].as_f64().unwrap() - 5000.0);
    storage()
        .set_item(&format!("{ns}:v1:job:j"), &stored.to_string())
        .unwrap();
    let second = record(&mut g, "j", json!("1"), "c", "running");
    assert_eq!(second["created_at"].as_f64(), stored["created_at"].as_f64());
    assert!(second["updated_at"].as_f64() > second["created_at"].as_f64());
    assert_eq!(second["status"], "running");
    assert_eq!(ids(&mut g), ["j"]);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn records_older_than_the_ttl_are_not_returned_and_are_removed() {
    let ns = fresh("t-ttl");
    let mut g = guard_with(json!({"namespace": ns, "ttlSeconds": 60}));
    login(&mut g, json!("1"));
    record(&mut g, "fresh", json!("1"), "c", "running");
    let now = js_sys::Date::now();
    let old = json!({"channel_id": "c", "job_id": "old", "user_id": "1", "status": "running",
        "errors": [], "result_url": null, "created_at": now - 61_000.0, "updated_at": now});
    storage()
        .set_item(&format!("{ns}:v1:job:old"), &old.to_string())
        .unwrap();
    assert_eq!(ids(&mut g), ["fresh"]);
    assert_eq!(
        storage().get_item(&format!("{ns}:v1:job:old")).unwrap(),
        None
    );
    assert_eq!(reason(&mut g, "old"), "unknown_job");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn max_jobs_evicts_terminal_records_first_then_the_oldest() {
    let ns = fresh("t-max");
    let mut g = guard_with(json!({"namespace": ns, "maxJobs": 3}));
    login(&mut g, json!("1"));
    // Records made in one millisecond tie on created_at; rewrite them with distinct times.
    let now = js_sys::Date::now();
    for (i, (job, status)) in [("r1", "running"), ("d1", "done"), ("r2", "running")]
        .into_iter()
        .enumerate()
    {
        let rec = json!({"channel_id": "c", "job_id": job, "user_id": "1", "status": status,
            "errors": [], "result_url": null, "created_at": now - 1000.0 + i as f64,
            "updated_at": now});
        storage()
            .set_item(&format!("{ns}:v1:job:{job}"), &rec.to_string())
            .unwrap();
    }
    record(&mut g, "r3", json!("1"), "c", "running");
    assert_eq!(
        ids(&mut g),
        ["r1", "r2", "r3"],
        "the terminal record went first"
    );
    record(&mut g, "r4", json!("1"), "c", "running");
    assert_eq!(ids(&mut g), ["r2", "r3", "r4"], "then the oldest");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn two_tabs_share_one_session_and_honour_each_others_logout() {
    let ns = fresh("t-tabs");
    let mut one = guard(&ns);
    let mut two = guard(&ns);
    login(&mut one, json!("1"));
    // A guard made later (another tab) picks the session up without login.
    let mut three = guard(&ns);
    assert_eq!(rust(&three.session().unwrap())["userId"], "1");
    // Two tabs recording at once lose neither record.
    record(&mut one, "from-one", json!("1"), "c", "running");
    record(&mut two, "from-two", json!("1"), "c", "running");
    let mut both = ids(&mut three);
    both.sort();
    assert_eq!(both, ["from-one", "from-two"]);
    assert_eq!(check(&mut two, "from-one")["allowed"], true);
    // Logout in one tab: the others refuse at once.
    one.logout().unwrap();
    assert_eq!(reason(&mut two, "from-one"), "no_session");
    assert_eq!(reason(&mut three, "from-two"), "no_session");
    assert_eq!(rust(&two.session().unwrap()), Value::Null);
    assert_guard_error(
        two.record_job(ts(meta("late", json!("1"), "c", "running")))
            .thrown(),
        "no_session",
    );
}

#[wasm_bindgen_test]
fn a_user_switch_in_another_tab_is_honoured_at_once() {
    let ns = fresh("t-tab-switch");
    let mut one = guard(&ns);
    let mut two = guard(&ns);
    login(&mut one, json!("1"));
    record(&mut one, "a", json!("1"), "c", "running");
    login(&mut two, json!("2"));
    assert_eq!(reason(&mut one, "a"), "unknown_job");
    assert_eq!(rust(&one.session().unwrap())["userId"], "2");
    assert_guard_error(
        one.record_job(ts(meta("a2", json!("1"), "c", "running")))
            .thrown(),
        "not_job_owner",
    );
    two.logout().unwrap();
}

#[wasm_bindgen_test]
fn malformed_stored_values_are_treated_as_absent_and_removed() {
    let ns = fresh("t-corrupt");
    let store = storage();
    store
        .set_item(&format!("{ns}:v1:session"), "{not json")
        .unwrap();
    let mut g = guard(&ns);
    assert_eq!(rust(&g.session().unwrap()), Value::Null);
    assert_eq!(store.get_item(&format!("{ns}:v1:session")).unwrap(), None);
    login(&mut g, json!("1"));
    record(&mut g, "good", json!("1"), "c", "running");
    store.set_item(&format!("{ns}:v1:job:bad"), "[1,2").unwrap();
    store
        .set_item(&format!("{ns}:v1:job:wrong-types"), r#"{"job_id":5}"#)
        .unwrap();
    let good = store
        .get_item(&format!("{ns}:v1:job:good"))
        .unwrap()
        .unwrap();
    store
        .set_item(&format!("{ns}:v1:job:swapped"), &good)
        .unwrap();
    assert_eq!(ids(&mut g), ["good"]);
    assert_eq!(
        keys_of(&ns),
        [format!("{ns}:v1:job:good"), format!("{ns}:v1:session")]
    );
    assert_eq!(check(&mut g, "good")["allowed"], true);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn memory_storage_never_touches_local_storage() {
    let ns = fresh("t-memory");
    let mut g = guard_with(json!({"namespace": ns, "storage": "memory"}));
    login(&mut g, json!("1"));
    record(&mut g, "j", json!("1"), "c", "running");
    assert_eq!(check(&mut g, "j")["allowed"], true);
    assert!(keys_of(&ns).is_empty());
    storage().set_item("last_async_event_id", "1-0").unwrap();
    assert_eq!(rust(&g.logout().unwrap())["purged"], json!(1));
    assert_eq!(
        storage()
            .get_item("last_async_event_id")
            .unwrap()
            .as_deref(),
        Some("1-0"),
        "a memory guard leaves the page's storage alone"
    );
    storage().remove_item("last_async_event_id").unwrap();
}

#[wasm_bindgen_test]
fn subscribe_hears_this_tabs_changes_and_survives_its_listeners() {
    let ns = fresh("t-subscribe");
    let g = guard(&ns);
    let heard = js_sys::Array::new();
    // A listener that records, one that throws, one that unsubscribes itself while called.
    let record = js_sys::Function::new_with_args(
        "heard",
        "return (c) => heard.push(c.type + ':' + c.source)",
    )
    .call1(&JsValue::NULL, &heard)
    .unwrap();
    let throws = js_sys::Function::new_no_args("throw new Error('listener bug')");
    let once_calls = js_sys::Array::new();
    let holder = js_sys::Object::new();
    let once = js_sys::Function::new_with_args(
        "calls, holder",
        "return () => { calls.push(1); holder.off(); }",
    )
    .call2(&JsValue::NULL, &once_calls, &holder)
    .unwrap();
    g.subscribe(throws.into()).unwrap();
    let off_once = g.subscribe(once).unwrap();
    js_sys::Reflect::set(&holder, &"off".into(), &off_once).unwrap();
    let off = g.subscribe(record).unwrap();
    // onChange hears other tabs only.
    let other_tabs = js_sys::Array::new();
    let on_change = js_sys::Function::new_with_args("a", "return (c) => a.push(c.type)")
        .call1(&JsValue::NULL, &other_tabs)
        .unwrap();
    g.on_change(on_change).unwrap();

    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.login(ts(js(json!({ "userId": 1 })))).unwrap(); // the same user again: nothing changed
    g.record_job(ts(meta("s1", json!("1"), "c", "running")))
        .unwrap();
    g.apply_event(ts(meta("s1", json!("1"), "c", "done")))
        .unwrap();
    assert!(g
        .apply_event(ts(meta("not-ours", json!("1"), "c", "done")))
        .unwrap()
        .is_null());
    g.logout().unwrap();
    assert_eq!(
        rust(&JsValue::from(heard)),
        json!([
            "user_changed:local",
            "jobs_changed:local",
            "jobs_changed:local",
            "logout:local"
        ])
    );
    assert_eq!(once_calls.length(), 1, "unsubscribed during its first call");
    assert_eq!(other_tabs.length(), 0, "onChange hears other tabs only");
    // The guard is fine after a throwing listener, and unsubscribing stops the calls.
    js_sys::Function::from(off).call0(&JsValue::NULL).unwrap();
    g.login(ts(js(json!({ "userId": 2 })))).unwrap();
    assert_eq!(
        rust(&g.session().unwrap())["userId"],
        "2",
        "the guard goes on"
    );
    assert_guard_error(g.subscribe(JsValue::from(3)).thrown(), "invalid_options");
    g.logout().unwrap();
}
