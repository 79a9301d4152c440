//! Browser tests of hostile storage and many tabs, in Chromium and Firefox. Failures are made
//! the way browsers make them: by replacing the `localStorage` getter or `Storage.prototype`
//! methods from JS, restored after each test.
#![cfg(target_arch = "wasm32")]

use serde_json::{json, Value};
use superset_job_guard::web::JobGuard;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::*;

/// Runs JS that breaks something and returns a function that mends it.
fn sabotage(body: &str) -> js_sys::Function {
    js_sys::Function::new_no_args(body)
        .call0(&JsValue::NULL)
        .unwrap()
        .dyn_into()
        .unwrap()
}

fn mend(restore: js_sys::Function) {
    restore.call0(&JsValue::NULL).unwrap();
}

const GETTER_THROWS: &str = r#"
  const original = Object.getOwnPropertyDescriptor(window, "localStorage");
  Object.defineProperty(window, "localStorage", { configurable: true,
    get() { throw new DOMException("The operation is insecure.", "SecurityError"); } });
  return () => Object.defineProperty(window, "localStorage", original);
"#;

const GETTER_NULL: &str = r#"
  const original = Object.getOwnPropertyDescriptor(window, "localStorage");
  Object.defineProperty(window, "localStorage", { configurable: true, get() { return null; } });
  return () => Object.defineProperty(window, "localStorage", original);
"#;

fn patch_method(method: &str, body: &str) -> js_sys::Function {
    sabotage(&format!(
        r#"const original = Storage.prototype.{method};
           Storage.prototype.{method} = function (...args) {{ {body} }};
           const call = (self, args) => original.apply(self, args);
           window.__original = call;
           return () => {{ Storage.prototype.{method} = original; delete window.__original; }};"#
    ))
}

const QUOTA: &str =
    r#"throw new DOMException("The quota has been exceeded.", "QuotaExceededError");"#;

fn guard(options: Value) -> JobGuard {
    JobGuard::new(js(options)).unwrap()
}

fn meta(job: &str, status: &str) -> JsValue {
    js(
        json!({"channel_id": "c", "job_id": job, "user_id": "1", "status": status,
              "errors": [], "result_url": null}),
    )
}

/// Signs in as user 1, records a job and checks it: the guard keeps its rules whatever the storage.
fn exercise(g: &JobGuard) {
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let rec = rust(&g.record_job(ts(meta("job-1", "running"))).unwrap());
    assert_eq!(rec["job_id"], "job-1");
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["allowed"],
        true
    );
    assert_eq!(
        rust(&g.check_cancel("someone-else".into()).unwrap())["reason"],
        "unknown_job"
    );
    assert_guard_error(
        g.record_job(ts(js(
            json!({"channel_id": "c", "job_id": "b", "user_id": "2",
        "status": "running"}),
        )))
        .thrown(),
        "not_job_owner",
    );
    assert_eq!(rust(&g.logout().unwrap())["purged"], json!(1));
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["reason"],
        "no_session"
    );
}

/// The guard goes on after what a test did to it: it signs in, records and allows a cancel.
fn still_works(g: &JobGuard) {
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("after", "running"))).unwrap();
    assert_eq!(
        rust(&g.check_cancel("after".into()).unwrap())["allowed"],
        true
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn a_local_storage_getter_that_throws_falls_back_to_memory() {
    let restore = sabotage(GETTER_THROWS);
    let g = JobGuard::new(js(json!({ "namespace": "h-getter" })));
    mend(restore);
    let g = g.expect("constructing never throws for storage reasons");
    let status = rust(&g.storage().unwrap());
    assert_eq!(status["kind"], "memory");
    assert!(
        status["reason"].as_str().unwrap().contains("SecurityError"),
        "{status}"
    );
    exercise(&g);
    assert!(
        keys_of("h-getter").is_empty(),
        "nothing reached localStorage"
    );
}

#[wasm_bindgen_test]
fn a_null_local_storage_falls_back_to_memory() {
    let restore = sabotage(GETTER_NULL);
    let g = JobGuard::new(js(json!({ "namespace": "h-null" })));
    mend(restore);
    let g = g.unwrap();
    let status = rust(&g.storage().unwrap());
    assert_eq!(status["kind"], "memory");
    assert!(status["reason"].as_str().unwrap().contains("null"));
    exercise(&g);
}

#[wasm_bindgen_test]
fn an_empty_storage_that_refuses_every_write_falls_back_to_memory() {
    // Safari's old private mode: an empty localStorage whose setItem always throws.
    let saved: Vec<(String, String)> = {
        let s = storage();
        (0..s.length().unwrap())
            .filter_map(|i| s.key(i).unwrap())
            .map(|k| (k.clone(), s.get_item(&k).unwrap().unwrap()))
            .collect()
    };
    storage().clear().unwrap();
    let restore = patch_method("setItem", QUOTA);
    let g = JobGuard::new(js(json!({ "namespace": "h-private" })));
    let status = rust(&g.as_ref().unwrap().storage().unwrap());
    let g = g.unwrap();
    exercise(&g);
    mend(restore);
    for (k, v) in saved {
        storage().set_item(&k, &v).unwrap();
    }
    assert_eq!(status["kind"], "memory");
    assert!(
        status["reason"]
            .as_str()
            .unwrap()
            .contains("QuotaExceededError"),
        "{status}"
    );
}

#[wasm_bindgen_test]
fn writes_refused_mid_session_are_kept_in_memory_and_reported_as_degraded() {
    fresh("h-degraded");
    let g = guard(json!({ "namespace": "h-degraded" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    assert_eq!(
        rust(&g.storage().unwrap()),
        json!({"kind": "local", "reason": null})
    );
    let restore = patch_method("setItem", QUOTA);
    let rec = g.record_job(ts(meta("job-1", "running")));
    mend(restore);
    let rec = rust(&rec.unwrap());
    assert_eq!(
        rust(&g.job("job-1".into()).unwrap()),
        rec,
        "recordJob never loses the job"
    );
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["allowed"],
        true
    );
    let status = rust(&g.storage().unwrap());
    assert_eq!(status["kind"], "degraded");
    assert!(status["reason"]
        .as_str()
        .unwrap()
        .contains("QuotaExceededError"));
    // The record and the session marker (which adopted the job's channel).
    assert_eq!(rust(&g.stats().unwrap())["keptInMemory"], 2);
    assert_eq!(keys_of("h-degraded"), ["h-degraded:v1:session"]);
    let stored = storage()
        .get_item("h-degraded:v1:session")
        .unwrap()
        .unwrap();
    assert!(
        !stored.contains("\"c\""),
        "storage still has the old marker: {stored}"
    );
    // Once storage takes writes again, the next write hands back what memory kept.
    g.record_job(ts(meta("job-2", "running"))).unwrap();
    assert_eq!(rust(&g.storage().unwrap())["kind"], "local");
    assert_eq!(keys_of("h-degraded").len(), 3);
    let stored = storage()
        .get_item("h-degraded:v1:session")
        .unwrap()
        .unwrap();
    assert!(stored.contains("\"c\""), "{stored}");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn a_full_storage_evicts_terminal_records_oldest_first_then_retries_once() {
    fresh("h-full");
    let g = guard(json!({ "namespace": "h-full" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let now = js_sys::Date::now();
    for (i, (job, status)) in [
        ("old-done", "done"),
        ("running", "running"),
        ("new-done", "error"),
    ]
    .into_iter()
    .enumerate()
    {
        let rec = json!({"channel_id": "c", "job_id": job, "user_id": "1", "status": status,
            "errors": [], "result_url": null, "created_at": now - 100.0 + i as f64, "updated_at": now});
        storage()
            .set_item(&format!("h-full:v1:job:{job}"), &rec.to_string())
            .unwrap();
    }
    storage()
        .set_item("h-full:v1:session", r#"{"user_id":"1","channel_id":"c"}"#)
        .unwrap();
    // A quota of three job records in this namespace.
    let restore = patch_method(
        "setItem",
        r#"const [key] = args;
           const jobs = Object.keys(localStorage).filter((k) => k.startsWith("h-full:v1:job:"));
           if (key.startsWith("h-full:v1:job:") && !jobs.includes(key) && jobs.length >= 3)
             throw new DOMException("The quota has been exceeded.", "QuotaExceededError");
           return window.__original(this, args);"#,
    );
    let rec = g.record_job(ts(meta("fresh", "pending")));
    mend(restore);
    assert!(rec.is_ok());
    assert_eq!(
        keys_of("h-full"),
        [
            "h-full:v1:job:fresh",
            "h-full:v1:job:new-done",
            "h-full:v1:job:running",
            "h-full:v1:session"
        ],
        "only the oldest terminal record went"
    );
    let stats = rust(&g.stats().unwrap());
    assert_eq!(stats["removed"]["evictedForSpace"], 1);
    assert_eq!(stats["keptInMemory"], 0);
    assert_eq!(rust(&g.storage().unwrap())["kind"], "local");
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn reads_that_throw_are_absent_values_not_exceptions() {
    fresh("h-reads");
    let g = guard(json!({ "namespace": "h-reads" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    let restore = patch_method(
        "getItem",
        r#"throw new DOMException("denied", "SecurityError");"#,
    );
    let session = g.session();
    let check = g.check_cancel("job-1".into());
    let jobs = g.jobs();
    mend(restore);
    assert_eq!(rust(&session.unwrap()), Value::Null);
    assert_eq!(
        rust(&check.unwrap())["reason"],
        "no_session",
        "fails closed"
    );
    assert_eq!(rust(&jobs.unwrap()), json!([]));

    let restore = patch_method("key", r#"throw new Error("key() broke");"#);
    let jobs = g.jobs();
    mend(restore);
    assert_eq!(
        rust(&jobs.unwrap()),
        json!([]),
        "cannot list: nothing listed, no throw"
    );
    assert_eq!(
        rust(&g.jobs().unwrap()).as_array().unwrap().len(),
        1,
        "the record survived"
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn thrown_values_that_are_not_errors_never_escape_or_wedge_the_guard() {
    // gloo-storage converts what `setItem` throws only if it is an `Error` (anything else
    // reaches its `unreachable!`), and `expect_throw`s on the other methods: the adapter its
    // `raw()` hands out must absorb all of it.
    fresh("h-odd");
    let g = guard(json!({ "namespace": "h-odd" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-0", "running"))).unwrap();
    let restore = patch_method("getItem", "throw 42;");
    let check = g.check_cancel("job-0".into());
    mend(restore);
    assert_eq!(
        rust(&check.unwrap())["reason"],
        "no_session",
        "fails closed"
    );

    let restore = patch_method("setItem", r#"throw "no room";"#);
    let recorded = g.record_job(ts(meta("job-1", "running")));
    mend(restore);
    assert_eq!(rust(&recorded.unwrap())["job_id"], "job-1");
    assert_eq!(
        rust(&g.job("job-1".into()).unwrap())["job_id"],
        "job-1",
        "kept in memory"
    );
    let status = rust(&g.storage().unwrap());
    assert_eq!(status["kind"], "degraded");
    assert!(
        status["reason"].as_str().unwrap().contains("no room"),
        "{status}"
    );

    let restore = patch_method("getItem", "throw 42;");
    let check = g.check_cancel("job-1".into());
    mend(restore);
    assert_eq!(
        rust(&check.unwrap())["reason"],
        "no_session",
        "fails closed"
    );

    let restore = patch_method("removeItem", "throw { odd: true };");
    let out = g.logout();
    mend(restore);
    assert_eq!(rust(&out.unwrap())["purged"], 2);
    assert_eq!(rust(&g.session().unwrap()), Value::Null);

    // Still usable: a new session, a job, and a clean logout.
    g.login(ts(js(json!({ "userId": 2 })))).unwrap();
    g.record_job(ts(js(
        json!({"channel_id": "chan-1", "job_id": "job-2", "user_id": "2",
        "status": "running", "errors": [], "result_url": null}),
    )))
    .unwrap();
    assert_eq!(
        rust(&g.check_cancel("job-2".into()).unwrap())["allowed"],
        true
    );
    g.logout().unwrap();
    assert!(keys_of("h-odd").is_empty(), "{:?}", keys_of("h-odd"));
}

/// A JS value nested `depth` levels deep (`{ a: [{ a: [ ... ] }] }`), built in JS.
fn nested(depth: u32) -> JsValue {
    js_sys::Function::new_with_args(
        "depth",
        "let v = 'bottom'; for (let i = 0; i < depth; i++) v = { a: [v] }; return v;",
    )
    .call1(&JsValue::NULL, &depth.into())
    .unwrap()
}

#[wasm_bindgen_test]
fn deeply_nested_and_cyclic_values_are_refused_and_the_guard_goes_on() {
    // Without a depth limit of the guard's own, `errors` 100,000 levels deep or a cycle would
    // overflow the wasm stack and leave the module unusable.
    fresh("h-deep");
    let g = guard(json!({ "namespace": "h-deep" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let cyclic =
        js_sys::Function::new_no_args("const e = { message: 'loop' }; e.self = e; return e;")
            .call0(&JsValue::NULL)
            .unwrap();
    // Whether the value can be written as JSON at all (a cycle cannot; 100,000 levels may not).
    for (bad, writable) in [
        (nested(1_000), Some(true)),
        (nested(100_000), None),
        (cyclic, Some(false)),
    ] {
        let errors = js_sys::Array::of1(&bad);
        let meta = js(json!({"channel_id": "c", "job_id": "deep", "user_id": "1",
            "status": "error", "result_url": null}));
        js_sys::Reflect::set(&meta, &"errors".into(), &errors).unwrap();
        let refused = g.record_job(ts(meta.clone())).thrown();
        let message = String::from(refused.dyn_ref::<js_sys::Error>().unwrap().message());
        // Past the guard's own limit (64 levels, for the whole argument), or (in a browser
        // whose stack is smaller than 100,000 levels) too deep even to write as JSON.
        let past_the_limit = message == "Invalid job: nested more than 64 levels deep";
        let unwritable = message.starts_with("Invalid job: cannot read the value");
        match writable {
            Some(true) => assert!(past_the_limit, "{message}"),
            Some(false) => assert!(unwritable, "{message}"),
            None => assert!(past_the_limit || unwritable, "{message}"),
        }
        assert_guard_error(refused, "invalid_job");
        assert_guard_error(g.apply_event(ts(meta)).thrown(), "invalid_job");
        let options = js(json!({ "namespace": "h-deep-2" }));
        js_sys::Reflect::set(&options, &"headers".into(), &bad).unwrap();
        assert_guard_error(JobGuard::new(options).err().unwrap(), "invalid_options");
    }
    // `__proto__` inside errors (as JSON.parse makes it: an own key) never becomes the
    // prototype of the object handed back.
    let event = js_sys::JSON::parse(
        r#"{"channel_id": "c", "job_id": "proto", "user_id": "1", "status": "running",
            "errors": [{"message": "m", "__proto__": {"polluted": true}}], "result_url": null}"#,
    )
    .unwrap();
    let rec = g.record_job(ts(event)).unwrap();
    let error = js_sys::Reflect::get(
        &js_sys::Reflect::get(&rec.as_js(), &"errors".into()).unwrap(),
        &0.into(),
    )
    .unwrap();
    assert!(js_sys::Reflect::get(&error, &"polluted".into())
        .unwrap()
        .is_undefined());
    assert_eq!(
        js_sys::Object::get_prototype_of(&error),
        js_sys::Object::get_prototype_of(&js_sys::Object::new())
    );
    assert_eq!(rust(&error), json!({"message": "m"}));

    // A few levels are fine, and the guard was never wedged.
    let meta = js(
        json!({"channel_id": "c", "job_id": "shallow", "user_id": "1",
        "status": "error", "result_url": null}),
    );
    js_sys::Reflect::set(&meta, &"errors".into(), &js_sys::Array::of1(&nested(10))).unwrap();
    let rec = rust(&g.record_job(ts(meta)).unwrap());
    assert_eq!(
        rec["errors"][0]["a"][0]["a"][0]["a"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(rust(&g.jobs().unwrap()).as_array().unwrap().len(), 2);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn nan_and_infinite_user_ids_are_refused_not_guests() {
    fresh("h-nan");
    let g = guard(json!({ "namespace": "h-nan" }));
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let login = js_sys::Object::new();
        js_sys::Reflect::set(&login, &"userId".into(), &bad.into()).unwrap();
        assert_guard_error(g.login(ts(login)).thrown(), "invalid_session");
        assert!(rust(&g.session().unwrap()).is_null(), "no guest session");
    }
    g.login(ts(js(json!({ "userId": null, "channelId": "guest-1" }))))
        .unwrap();
    let meta = js(json!({"channel_id": "guest-1", "job_id": "j", "status": "running"}));
    js_sys::Reflect::set(&meta, &"user_id".into(), &f64::NAN.into()).unwrap();
    assert_guard_error(g.record_job(ts(meta)).thrown(), "invalid_job");
    g.logout().unwrap();
}

/// Replaces `Date.now` with a function that throws; returns what puts it back.
fn break_the_clock() -> js_sys::Function {
    js_sys::Function::new_no_args(
        "const original = Date.now; Date.now = () => { throw new Error('clock broke'); };
         return () => { Date.now = original; };",
    )
    .call0(&JsValue::NULL)
    .unwrap()
    .dyn_into()
    .unwrap()
}

#[wasm_bindgen_test]
fn a_clock_that_throws_never_wedges_the_guard() {
    fresh("h-clock");
    let g = guard(json!({ "namespace": "h-clock" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("before", "running"))).unwrap();
    let restore = break_the_clock();
    let recorded = g.record_job(ts(meta("during", "running")));
    let check = g.check_cancel("before".into());
    let jobs = g.jobs();
    let out = g.logout();
    mend(restore);
    // Every call answered (the clock read as its last good reading), none threw.
    assert_eq!(rust(&recorded.unwrap())["job_id"], "during");
    assert_eq!(rust(&check.unwrap())["allowed"], true);
    assert_eq!(rust(&jobs.unwrap()).as_array().unwrap().len(), 2);
    assert_eq!(rust(&out.unwrap())["purged"], 2);
    assert!(keys_of("h-clock").is_empty(), "logout cleared the keys");
    still_works(&g);
}

#[wasm_bindgen_test]
fn arguments_whose_getters_or_proxy_traps_throw_are_guard_errors() {
    fresh("h-getters");
    let g = guard(json!({ "namespace": "h-getters" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let make = |body: &str| {
        js_sys::Function::new_no_args(body)
            .call0(&JsValue::NULL)
            .unwrap()
    };
    let getter = make(
        r#"return { channel_id: "c", get job_id() { throw new Error("getter broke"); },
                    user_id: "1", status: "running" };"#,
    );
    let proxy = make(r#"return new Proxy({}, { get() { throw 7; }, ownKeys() { throw 8; } });"#);
    for bad in [getter, proxy] {
        assert_guard_error(g.record_job(ts(bad.clone())).thrown(), "invalid_job");
        assert_guard_error(g.apply_event(ts(bad.clone())).thrown(), "invalid_job");
        assert_guard_error(g.login(ts(bad.clone())).thrown(), "invalid_session");
        assert_guard_error(JobGuard::new(bad).err().unwrap(), "invalid_options");
    }
    // Nothing was left borrowed: every call goes on.
    g.record_job(ts(meta("fine", "running"))).unwrap();
    assert_eq!(
        rust(&g.check_cancel("fine".into()).unwrap())["allowed"],
        true
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn removals_that_throw_still_log_out_this_tab() {
    fresh("h-remove");
    let g = guard(json!({ "namespace": "h-remove" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    let restore = patch_method("removeItem", r#"throw new Error("removeItem broke");"#);
    let out = g.logout();
    let session = g.session();
    let check = g.check_cancel("job-1".into());
    let status = g.storage();
    mend(restore);
    assert_eq!(rust(&out.unwrap())["purged"], json!(1));
    assert_eq!(rust(&session.unwrap()), Value::Null);
    assert_eq!(rust(&check.unwrap())["reason"], "no_session");
    assert_eq!(rust(&status.unwrap())["kind"], "degraded");
    g.logout().unwrap();
    assert!(keys_of("h-remove").is_empty());
}

#[wasm_bindgen_test]
fn corrupt_and_forged_entries_are_removed_counted_and_never_thrown() {
    fresh("h-corrupt");
    let g = guard(json!({ "namespace": "h-corrupt" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("good", "running"))).unwrap();
    let good = storage()
        .get_item("h-corrupt:v1:job:good")
        .unwrap()
        .unwrap();
    let now = js_sys::Date::now();
    let foreign = json!({"channel_id": "c", "job_id": "foreign", "user_id": "2", "status": "running",
        "errors": [], "result_url": null, "created_at": now, "updated_at": now});
    let entries = [
        ("unparseable", "{nope".to_owned()),
        (
            "wrong-types",
            r#"{"channel_id":1,"job_id":"wrong-types"}"#.to_owned(),
        ),
        (
            "missing-fields",
            r#"{"job_id":"missing-fields","status":"done"}"#.to_owned(),
        ),
        ("swapped", good.clone()),
        (
            "huge",
            good.replace(
                r#""errors":[]"#,
                &format!(r#""errors":["{}"]"#, "x".repeat(20_000)),
            ),
        ),
        ("__proto__", good.replace(r#""good""#, r#""__proto__""#)),
        ("constructor", good.replace(r#""good""#, r#""constructor""#)),
        ("foreign", foreign.to_string()),
    ];
    for (id, text) in &entries {
        storage()
            .set_item(&format!("h-corrupt:v1:job:{id}"), text)
            .unwrap();
    }
    storage().set_item("h-corrupt:v2:job:future", "{}").unwrap();
    let jobs = rust(&g.jobs().unwrap());
    assert_eq!(jobs.as_array().unwrap().len(), 1);
    assert_eq!(jobs[0]["job_id"], "good");
    assert_eq!(
        keys_of("h-corrupt"),
        [
            "h-corrupt:v1:job:good",
            "h-corrupt:v1:session",
            "h-corrupt:v2:job:future"
        ],
        "another version's keys are left to it"
    );
    assert_eq!(
        rust(&g.stats().unwrap())["removed"],
        json!({"unreadable": 3, "oversized": 1, "reservedId": 2, "keyMismatch": 1, "expired": 0,
               "foreignOwner": 1, "invalidSession": 0, "evictedForSpace": 0, "evictedOverLimit": 0})
    );
    storage()
        .set_item(
            "h-corrupt:v1:session",
            r#"{"user_id":[1],"channel_id":"c"}"#,
        )
        .unwrap();
    assert_eq!(rust(&g.session().unwrap()), Value::Null);
    assert_eq!(rust(&g.stats().unwrap())["removed"]["invalidSession"], 1);
    g.logout().unwrap();
    assert!(
        keys_of("h-corrupt").is_empty(),
        "logout clears every version"
    );
}

#[wasm_bindgen_test]
fn another_tabs_storage_changes_reach_on_change() {
    fresh("h-events");
    let g = guard(json!({ "namespace": "h-events" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let seen = js_sys::Array::new();
    let record =
        js_sys::Function::new_with_args("seen", "return (change) => seen.push(change.type);")
            .call1(&JsValue::NULL, &seen)
            .unwrap();
    let unsubscribe: js_sys::Function = g.on_change(record).unwrap().dyn_into().unwrap();
    let fire = sabotage(
        r#"return (key, oldValue, newValue) => window.dispatchEvent(new StorageEvent("storage",
             { key, oldValue, newValue, storageArea: localStorage }));"#,
    );
    let dispatch = |key: JsValue, old: &str, new: JsValue| {
        fire.call3(&JsValue::NULL, &key, &JsValue::from_str(old), &new)
            .unwrap();
    };
    let alice = r#"{"user_id":"1","channel_id":"c"}"#;
    dispatch("h-events:v1:job:x".into(), "", "{}".into());
    dispatch(
        "h-events:v1:session".into(),
        alice,
        r#"{"user_id":"2","channel_id":"d"}"#.into(),
    );
    dispatch("h-events:v1:session".into(), alice, JsValue::NULL);
    dispatch("unrelated".into(), "", "x".into());
    dispatch("h-events-other:v1:session".into(), alice, JsValue::NULL);
    assert_eq!(
        rust(&seen),
        json!(["jobs_changed", "user_changed", "logout"])
    );
    unsubscribe.call0(&JsValue::NULL).unwrap();
    unsubscribe
        .call0(&JsValue::NULL)
        .expect("unsubscribing twice is harmless");
    dispatch("h-events:v1:session".into(), alice, JsValue::NULL);
    assert_eq!(seen.length(), 3, "unsubscribed");
    assert_guard_error(
        g.on_change(JsValue::from_str("not a function")).thrown(),
        "invalid_options",
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_logout_reaches_memory_only_tabs_by_broadcast_channel() {
    // Two tabs whose storage fell back to memory share nothing but the channel.
    let one = guard(json!({ "namespace": "h-bc", "storage": "memory" }));
    let two = guard(json!({ "namespace": "h-bc", "storage": "memory" }));
    for g in [&one, &two] {
        g.login(ts(js(json!({ "userId": 1 })))).unwrap();
        g.record_job(ts(meta("job-1", "running"))).unwrap();
    }
    let seen = js_sys::Array::new();
    let record =
        js_sys::Function::new_with_args("seen", "return (change) => seen.push(change.type);")
            .call1(&JsValue::NULL, &seen)
            .unwrap();
    let _keep = two.on_change(record).unwrap();
    one.logout().unwrap();
    // Channel messages arrive as tasks: wait for it (at most 2 s).
    for _ in 0..100 {
        if seen.length() > 0 {
            break;
        }
        sleep(20).await;
    }
    assert_eq!(rust(&seen), json!(["logout"]));
    assert_eq!(
        rust(&two.session().unwrap()),
        Value::Null,
        "the other tab dropped its memory state"
    );
    assert_eq!(
        rust(&two.check_cancel("job-1".into()).unwrap())["reason"],
        "no_session"
    );
}

#[wasm_bindgen_test]
fn two_tabs_recording_at_once_lose_neither_record() {
    fresh("h-race");
    let one = guard(json!({ "namespace": "h-race" }));
    let two = guard(json!({ "namespace": "h-race" }));
    one.login(ts(js(json!({ "userId": 1 })))).unwrap();
    for i in 0..20 {
        one.record_job(ts(meta(&format!("one-{i}"), "running")))
            .unwrap();
        two.record_job(ts(meta(&format!("two-{i}"), "running")))
            .unwrap();
    }
    assert_eq!(rust(&one.jobs().unwrap()).as_array().unwrap().len(), 40);
    assert_eq!(rust(&two.jobs().unwrap()).as_array().unwrap().len(), 40);
    one.logout().unwrap();
}

/// Reads are answered from a memo while the stored text is unchanged: a write by other code in
/// this same tab (no `storage` event) must be seen at once.
#[wasm_bindgen_test]
fn same_tab_writes_are_seen_by_the_next_read() {
    let ns = fresh("h-memo");
    let g = guard(json!({ "namespace": ns }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    g.record_job(ts(meta("job-2", "running"))).unwrap();
    let check = |id: &str| rust(&g.check_cancel(id.into()).unwrap());
    let key = |id: &str| format!("{ns}:v1:job:{id}");
    for _ in 0..3 {
        assert_eq!(
            check("job-1")["allowed"],
            true,
            "asked again: the same answer"
        );
        assert_eq!(rust(&g.jobs().unwrap()).as_array().unwrap().len(), 2);
    }
    // The job finished, as written by other code of this page.
    let text = storage().get_item(&key("job-1")).unwrap().unwrap();
    let done = text.replace(r#""status":"running""#, r#""status":"done""#);
    storage().set_item(&key("job-1"), &done).unwrap();
    assert_eq!(check("job-1")["reason"], "already_finished");
    assert_eq!(rust(&g.job("job-1".into()).unwrap())["status"], "done");
    assert_eq!(rust(&g.jobs().unwrap())[0]["status"], "done");
    // A forged record of another user under a known id: refused and removed.
    let forged = done.replace(r#""user_id":"1""#, r#""user_id":"2""#);
    storage().set_item(&key("job-1"), &forged).unwrap();
    assert_eq!(check("job-1")["reason"], "not_job_owner");
    assert_eq!(check("job-1")["reason"], "unknown_job", "it was removed");
    assert_eq!(rust(&g.job("job-1".into()).unwrap()), Value::Null);
    // A record removed, one added, by hand: the list follows.
    storage().remove_item(&key("job-2")).unwrap();
    assert_eq!(rust(&g.jobs().unwrap()), json!([]));
    g.record_job(ts(meta("job-3", "pending"))).unwrap();
    assert_eq!(rust(&g.jobs().unwrap())[0]["job_id"], "job-3");
    let copy = storage().get_item(&key("job-3")).unwrap().unwrap();
    storage()
        .set_item(&key("job-4"), &copy.replace("job-3", "job-4"))
        .unwrap();
    let ids: Vec<Value> = rust(&g.jobs().unwrap())
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["job_id"].clone())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    // Another user signs in by writing the marker: nothing of user 1 is answered.
    assert_eq!(check("job-3")["allowed"], true);
    storage()
        .set_item(
            &format!("{ns}:v1:session"),
            r#"{"user_id":"2","channel_id":null}"#,
        )
        .unwrap();
    assert_eq!(check("job-3")["reason"], "not_job_owner");
    assert_eq!(rust(&g.jobs().unwrap()), json!([]));
    g.logout().unwrap();
}

#[wasm_bindgen_test]
async fn a_remembered_answer_does_not_outlive_the_records_ttl() {
    let ns = fresh("h-memo-ttl");
    let g = guard(json!({ "namespace": ns, "ttlSeconds": 0.2 }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    for _ in 0..3 {
        assert_eq!(
            rust(&g.check_cancel("job-1".into()).unwrap())["allowed"],
            true
        );
        assert_eq!(rust(&g.jobs().unwrap()).as_array().unwrap().len(), 1);
    }
    sleep(300).await;
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["reason"],
        "unknown_job"
    );
    assert_eq!(rust(&g.stats().unwrap())["removed"]["expired"], 1);
    assert_eq!(rust(&g.jobs().unwrap()), json!([]));
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn each_answer_is_a_fresh_object() {
    let ns = fresh("h-memo-fresh");
    let g = guard(json!({ "namespace": ns }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    for _ in 0..3 {
        let job = g.job("job-1".into()).unwrap();
        js_sys::Reflect::set(&job, &"status".into(), &"tampered".into()).unwrap();
        let list = g.jobs().unwrap();
        js_sys::Reflect::set(&list, &"0".into(), &JsValue::NULL).unwrap();
        let check = g.check_cancel("job-1".into()).unwrap();
        js_sys::Reflect::set(&check.as_js(), &"allowed".into(), &false.into()).unwrap();
    }
    assert_eq!(rust(&g.job("job-1".into()).unwrap())["status"], "running");
    assert_eq!(rust(&g.jobs().unwrap())[0]["status"], "running");
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["allowed"],
        true
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn a_job_answered_from_a_remembered_check_is_the_record() {
    let ns = fresh("h-memo-derive");
    let g = guard(json!({ "namespace": ns }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let recorded = rust(&g.record_job(ts(meta("job-1", "running"))).unwrap());
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["allowed"],
        true
    );
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["job"],
        recorded
    );
    assert_eq!(rust(&g.job("job-1".into()).unwrap()), recorded);
    assert_eq!(rust(&g.job("job-1".into()).unwrap()), recorded);
    g.logout().unwrap();
}

/// The BroadcastChannel opens in a microtask after construction: a tab that never announced
/// anything still hears the channel. A memory-only tab's logout ends nothing in a tab whose
/// localStorage still holds the session (what another tab says is believed only where storage
/// agrees); a memory-only tab hears it.
#[wasm_bindgen_test]
async fn a_tab_that_never_announced_still_hears_memory_only_tabs() {
    let ns = fresh("h-bc-later");
    storage()
        .set_item(
            &format!("{ns}:v1:session"),
            r#"{"user_id":"1","channel_id":null}"#,
        )
        .unwrap();
    let local = guard(json!({ "namespace": ns }));
    // The same user as stored: nothing to announce, so nothing opened the channel yet.
    local.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let (seen, record) = recorder();
    let _keep = local.on_change(record).unwrap();
    let listener = guard(json!({ "namespace": ns, "storage": "memory" }));
    listener.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let (heard, record) = recorder();
    let _keep_too = listener.on_change(record).unwrap();
    sleep(0).await;
    let memory = guard(json!({ "namespace": ns, "storage": "memory" }));
    memory.login(ts(js(json!({ "userId": 1 })))).unwrap();
    memory.logout().unwrap();
    for _ in 0..100 {
        if heard.length() > 0 {
            break;
        }
        sleep(20).await;
    }
    assert_eq!(
        rust(&heard),
        json!(["logout"]),
        "a memory-only tab hears it"
    );
    sleep(100).await;
    assert_eq!(rust(&seen), json!([]), "storage still holds the session");
    assert!(!rust(&local.session().unwrap()).is_null());
    local.logout().unwrap();
}

/// Replaces the accessor `name` of `Class.prototype` with one whose getter (and setter) throw;
/// returns the function that puts the original back.
fn break_accessor(class: &str, name: &str) -> js_sys::Function {
    sabotage(&format!(
        r#"const original = Object.getOwnPropertyDescriptor({class}.prototype, "{name}");
           const boom = () => {{ throw new Error("{class}.{name} replaced by the page"); }};
           Object.defineProperty({class}.prototype, "{name}", {{ configurable: true, get: boom, set: boom }});
           return () => Object.defineProperty({class}.prototype, "{name}", original);"#
    ))
}

/// Replaces the method `name` of `Class.prototype` with one that throws.
fn break_method(class: &str, name: &str) -> js_sys::Function {
    sabotage(&format!(
        r#"const original = {class}.prototype.{name};
           {class}.prototype.{name} = function () {{ throw new Error("{class}.{name} replaced by the page"); }};
           return () => {{ {class}.prototype.{name} = original; }};"#
    ))
}

/// A listener that pushes each change's type into `seen`.
fn record_into(seen: &js_sys::Array) -> JsValue {
    js_sys::Function::new_with_args("seen", "return (change) => seen.push(change.type);")
        .call1(&JsValue::NULL, seen)
        .unwrap()
}

fn recorder() -> (js_sys::Array, JsValue) {
    let seen = js_sys::Array::new();
    let record =
        js_sys::Function::new_with_args("seen", "return (change) => seen.push(change.type);")
            .call1(&JsValue::NULL, &seen)
            .unwrap();
    (seen, record)
}

/// A `storage` event and a channel message whose getters the page made throw are not heard;
/// neither the guard nor its listeners are left unusable, and the next readable one is heard.
#[wasm_bindgen_test]
async fn event_getters_that_throw_never_wedge_the_guard_or_its_listeners() {
    let ns = fresh("h-dom-events");
    let g = guard(json!({ "namespace": ns }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let (seen, record) = recorder();
    let _keep = g.on_change(record).unwrap();
    sleep(0).await; // the channel opens in a microtask
    let session_key = JsValue::from_str(&format!("{ns}:v1:session"));
    let fire = sabotage(
        r#"return (key) => window.dispatchEvent(new StorageEvent("storage",
             { key, oldValue: '{"user_id":"1","channel_id":null}', newValue: null,
               storageArea: localStorage }));"#,
    );
    for name in ["key", "oldValue", "newValue"] {
        let restore = break_accessor("StorageEvent", name);
        fire.call1(&JsValue::NULL, &session_key).unwrap();
        mend(restore);
        g.record_job(ts(meta("job-1", "running")))
            .expect("the guard is not left borrowed");
    }
    assert_eq!(seen.length(), 0, "unreadable events are not heard");
    fire.call1(&JsValue::NULL, &session_key).unwrap();
    assert_eq!(rust(&seen), json!(["logout"]), "the listener still works");

    // A channel message is heard by a tab whose storage is its memory (a guard whose storage is
    // the origin's believes storage, not messages).
    let g = guard(json!({ "namespace": ns, "storage": "memory" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let _keep = g.on_change(record_into(&seen)).unwrap();
    sleep(0).await; // the channel opens in a microtask
    let other = web_sys::BroadcastChannel::new(&format!("superset-job-guard:{ns}")).unwrap();
    let message =
        js(json!({ "type": "logout", "shared": false, "userId": null, "guestKey": null }));
    let restore = break_accessor("MessageEvent", "data");
    other.post_message(&message).unwrap();
    sleep(50).await;
    mend(restore);
    assert_eq!(seen.length(), 1, "an unreadable message is not heard");
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    other.post_message(&message).unwrap();
    for _ in 0..100 {
        if seen.length() > 1 {
            break;
        }
        sleep(20).await;
    }
    assert_eq!(
        rust(&seen),
        json!(["logout", "logout"]),
        "the channel still works"
    );
    other.close();
    g.logout().unwrap();
}

/// A page whose BroadcastChannel refuses `onmessage` or `close()` still gets a working guard,
/// and dropping (freeing) it does not throw.
#[wasm_bindgen_test]
async fn a_broadcast_channel_that_throws_never_wedges_the_guard() {
    let ns = fresh("h-dom-channel");
    let restore = break_accessor("BroadcastChannel", "onmessage");
    let g = guard(json!({ "namespace": ns }));
    sleep(0).await; // the channel would open now, with the guard borrowed
    mend(restore);
    exercise(&g);

    let g = guard(json!({ "namespace": ns }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.login(ts(js(json!({ "userId": 2 })))).unwrap(); // announced: the channel is open
    let restore = break_method("BroadcastChannel", "close");
    drop(g); // what free() does
    mend(restore);
    exercise(&guard(json!({ "namespace": ns })));
}

#[wasm_bindgen_test]
fn storage_that_returns_non_strings_never_wedges_the_guard() {
    // gloo-storage hands wasm-bindgen's glue whatever getItem and key return, and the glue
    // throws inside gloo's `expect_throw` for anything but a string or null: the adapter reads
    // such values as absent.
    fresh("h-non-strings");
    let g = guard(json!({ "namespace": "h-non-strings" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    for (method, body) in [
        ("getItem", "return { not: \"a string\" };"),
        ("getItem", "return 42;"),
        ("key", "return 5;"),
        ("key", "return { key: 1 };"),
    ] {
        let restore = patch_method(method, body);
        let session = g.session();
        let jobs = g.jobs();
        let check = g.check_cancel("job-1".into());
        let logged = g.login(ts(js(json!({ "userId": 1 }))));
        mend(restore);
        assert!(
            session.is_ok() && jobs.is_ok() && check.is_ok(),
            "{method}: {body}"
        );
        assert!(logged.is_ok(), "{method}: {body}");
        // Restored: the guard answers as before, nothing left borrowed.
        assert_eq!(
            rust(&g.session().unwrap())["userId"],
            "1",
            "{method}: {body}"
        );
        assert_eq!(
            rust(&g.check_cancel("job-1".into()).unwrap())["allowed"],
            true,
            "{method}: {body}"
        );
    }
    let restore = patch_method("getItem", "return 42;");
    let g2 = JobGuard::new(js(json!({ "namespace": "h-non-strings" })));
    mend(restore);
    exercise(&g2.expect("a guard made while getItem lies"));
    g.logout().unwrap();
}

/// `(guard, counter) => listener`, made in JS.
fn listener(body: &str) -> (js_sys::Array, js_sys::Function) {
    let seen = js_sys::Array::new();
    let make = js_sys::Function::new_with_args("seen, guard", body);
    (seen, make.dyn_into().unwrap())
}

#[wasm_bindgen_test]
fn listeners_that_call_back_in_never_recurse_or_wedge_the_guard() {
    fresh("h-reentry");
    let g = guard(json!({ "namespace": "h-reentry" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let (seen, make) = listener(
        r#"return (change) => { seen.push(change.type);
             if (change.type === "logout") guard.logout(); };"#,
    );
    // The listener calls `logout()` on every logout (through a JS object whose `logout` calls
    // this guard): the second one removes nothing and is not announced.
    let g = std::rc::Rc::new(g);
    let inner = std::rc::Rc::clone(&g);
    let call_logout = wasm_bindgen::closure::Closure::<dyn FnMut() -> JsValue>::new(move || {
        inner.logout().map(JsValue::from).unwrap_or_else(|e| e)
    });
    let guard_js = js_sys::Object::new();
    js_sys::Reflect::set(&guard_js, &"logout".into(), call_logout.as_ref()).unwrap();
    let callback = make.call2(&JsValue::NULL, &seen, &guard_js).unwrap();
    let unsubscribe: js_sys::Function = g.subscribe(callback).unwrap().dyn_into().unwrap();
    assert_eq!(rust(&g.logout().unwrap())["purged"], json!(0));
    assert_eq!(rust(&seen), json!(["logout"]), "one logout, announced once");
    // A logout with nothing to remove announces nothing at all.
    g.logout().unwrap();
    assert_eq!(seen.length(), 1);
    unsubscribe.call0(&JsValue::NULL).unwrap();

    // Listeners that keep switching users from inside their calls: cut off, never a stack
    // overflow, and the guard goes on.
    let seen = js_sys::Array::new();
    let inner = std::rc::Rc::clone(&g);
    let ping_pong =
        wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |change: JsValue| {
            let _ = seen.push(&change);
            let next = 1 + seen.length() % 2;
            let _ = inner.login(ts(js(json!({ "userId": next }))));
        });
    let unsubscribe: js_sys::Function = g
        .subscribe(ping_pong.as_ref().clone())
        .unwrap()
        .dyn_into()
        .unwrap();
    g.login(ts(js(json!({ "userId": 3 })))).unwrap();
    unsubscribe.call0(&JsValue::NULL).unwrap();
    still_works(&g);
}

#[wasm_bindgen_test]
fn a_channel_change_is_announced_and_every_listener_sees_the_same_frozen_change() {
    fresh("h-announce");
    let g = guard(json!({ "namespace": "h-announce" }));
    g.login(ts(js(json!({ "userId": 1, "channelId": "c1" }))))
        .unwrap();
    let (seen, make) = listener(
        r#"return (change) => { seen.push([change.type, change.source, Object.isFrozen(change)]);
             try { change.type = "logout"; } catch (e) {} };"#,
    );
    let first = make.call2(&JsValue::NULL, &seen, &JsValue::NULL).unwrap();
    let second = make.call2(&JsValue::NULL, &seen, &JsValue::NULL).unwrap();
    g.subscribe(first).unwrap();
    g.subscribe(second).unwrap();
    // Only the channel changes: useSession() must hear it.
    g.login(ts(js(json!({ "userId": 1, "channelId": "c2" }))))
        .unwrap();
    assert_eq!(
        rust(&seen),
        json!([
            ["jobs_changed", "local", true],
            ["jobs_changed", "local", true]
        ]),
        "announced, and the first listener could not change what the second saw"
    );
    assert_eq!(rust(&g.session().unwrap())["channelId"], "c2");
    // The same session again: nothing changed, nothing announced.
    g.login(ts(js(json!({ "userId": 1, "channelId": "c2" }))))
        .unwrap();
    assert_eq!(seen.length(), 2);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn what_json_cannot_say_is_refused_and_what_it_writes_is_read() {
    fresh("h-json");
    let g = guard(json!({ "namespace": "h-json" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let eval = |src: &str| {
        js_sys::Function::new_no_args(&format!("return {src};"))
            .call0(&JsValue::NULL)
            .unwrap()
    };
    let meta = |errors: &str| {
        eval(&format!(
            r#"{{ channel_id: "c", job_id: "j", user_id: "1", status: "error",
                 result_url: null, errors: [{errors}] }}"#
        ))
    };
    // Written as `null` by JSON.stringify, which the readers would take as "absent": refused.
    for bad in ["NaN", "Infinity", "-Infinity", "2n ** 64n", "{ n: NaN }"] {
        let refused = g.record_job(ts(meta(bad))).thrown();
        let message = String::from(refused.dyn_ref::<js_sys::Error>().unwrap().message());
        assert!(
            message.starts_with("Invalid job: cannot read the value"),
            "{bad}: {message}"
        );
        assert_guard_error(refused, "invalid_job");
    }
    let refused = g.login(ts(eval("{ userId: 1, channelId: NaN }"))).thrown();
    assert_guard_error(refused, "invalid_session");
    let refused = JobGuard::new(eval(r#"{ namespace: "h-json", timeoutMs: Infinity }"#));
    assert_guard_error(refused.err().unwrap(), "invalid_options");
    // What JSON writes is what is read: a safe BigInt as its number, a Date as its ISO text,
    // a `toJSON` answer, functions and `undefined` left out, a Map as `{}`.
    let rec = g
        .record_job(ts(meta(
            r#"7n, new Date(0), { toJSON: () => "told" }, { f() {}, u: undefined, m: new Map([[1, 2]]) }"#,
        )))
        .unwrap();
    assert_eq!(
        rust(&rec)["errors"],
        json!([7, "1970-01-01T00:00:00.000Z", "told", {"m": {}}])
    );
    let refused = g
        .record_job(ts(meta(r#"{ toJSON() { throw new Error("no") } }"#)))
        .thrown();
    assert_guard_error(refused, "invalid_job");
    // The refused ones stored nothing, and the guard goes on.
    assert_eq!(rust(&g.job("j".into()).unwrap())["errors"][0], 7);
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn what_a_js_number_cannot_hold_and_what_is_no_options_are_never_read_as_something_else() {
    fresh("h-numbers");
    let g = guard(json!({ "namespace": "h-numbers" }));
    let eval = |src: &str| {
        js_sys::Function::new_no_args(&format!("return {src};"))
            .call0(&JsValue::NULL)
            .unwrap()
    };
    g.login(ts(eval("{ userId: 1 }"))).unwrap();
    // Whole numbers beyond the safe integers in `errors` (JS gave them as floats): kept as JS
    // holds them, so the record goes back to JS, here and in every read after.
    let rec = g
        .record_job(ts(eval(
            r#"{ channel_id: "c", job_id: "big", user_id: 1, status: "error", result_url: null,
                 errors: [{ message: "m", code: 2 ** 60, near: 2 ** 53 + 2, neg: -(2 ** 60) }] }"#,
        )))
        .unwrap();
    let error = &rust(&rec)["errors"][0];
    assert_eq!(error["code"].as_f64(), Some(2f64.powi(60)));
    assert_eq!(error["near"].as_f64(), Some(2f64.powi(53) + 2.0));
    assert_eq!(error["neg"].as_f64(), Some(-(2f64.powi(60))));
    assert_eq!(rust(&g.jobs().unwrap()).as_array().unwrap().len(), 1);
    assert_eq!(rust(&g.job("big".into()).unwrap())["errors"][0], *error);
    // A numeric user id JS does not hold exactly names no user for sure: refused.
    let refused = g.login(ts(eval("{ userId: 2 ** 60 }"))).thrown();
    assert_guard_error(refused, "invalid_session");
    assert_eq!(rust(&g.session().unwrap())["userId"], "1");
    // Options that are no object are refused, not read as the defaults; a number that is not
    // finite is refused naming its option.
    for bad in ["[]", "[{ namespace: 'x' }]", "() => ({})", "'opts'", "42"] {
        let refused = JobGuard::new(eval(bad)).err().unwrap();
        assert_guard_error(refused, "invalid_options");
    }
    let refused = JobGuard::new(eval("{ ttlSeconds: NaN }")).err().unwrap();
    let message = String::from(refused.dyn_ref::<js_sys::Error>().unwrap().message());
    assert!(
        message.contains("`ttlSeconds`: NaN is not a finite number"),
        "{message}"
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn reactive_state_is_read_as_the_plain_data_it_shows() {
    fresh("h-reactive");
    let g = guard(json!({ "namespace": "h-reactive" }));
    // A Proxy like Vue's reactive() or MobX's observable, read through its traps.
    let reactive = js_sys::Function::new_with_args(
        "value",
        r#"const wrap = (v) => v !== null && typeof v === "object"
             ? new Proxy(v, { get: (t, k, r) => wrap(Reflect.get(t, k, r)) }) : v;
           return wrap(value);"#,
    );
    let wrap = |v: Value| reactive.call1(&JsValue::NULL, &js(v)).unwrap();
    g.login(ts(wrap(json!({ "userId": 1 })))).unwrap();
    let rec = g
        .record_job(ts(wrap(
            json!({"channel_id": "c", "job_id": "job-1", "user_id": "1",
            "status": "running", "errors": [{"message": "m", "extra": [1, {"x": null}]}],
            "result_url": null}),
        )))
        .unwrap();
    assert_eq!(
        rust(&rec)["errors"],
        json!([{"message": "m", "extra": [1, {"x": null}]}])
    );
    let task = "10a0bd9a-03c8-4737-9345-f4234ba86512";
    let tasks = g
        .record_tasks(ts(wrap(
            json!({ "task_ids": [task], "cursor": "c", "tab_id": "t1" }),
        )))
        .unwrap();
    assert_eq!(rust(&tasks)[0]["tab_ids"], json!(["t1"]));
    let changed = g
        .apply_status_changes(ts(wrap(
            json!({ "statuses": { task: {"status": "in_progress"} } }),
        )))
        .unwrap();
    assert_eq!(rust(&changed)[0]["status"], "in_progress");
    let options = wrap(json!({ "namespace": "h-reactive", "retry": { "attempts": 2 } }));
    assert!(JobGuard::new(options).is_ok());
    // A proxy that claims to be itself all the way down is refused, cleanly.
    let cyclic = js_sys::Function::new_no_args(
        r#"const p = new Proxy({}, { get: () => p, ownKeys: () => ["job_id"],
             getOwnPropertyDescriptor: () => ({ value: p, enumerable: true, configurable: true }) });
           return p;"#,
    )
    .call0(&JsValue::NULL)
    .unwrap();
    assert_guard_error(g.record_job(ts(cyclic)).thrown(), "invalid_job");
    assert_eq!(
        rust(&g.check_cancel("job-1".into()).unwrap())["allowed"],
        true
    );
    g.logout().unwrap();
}

#[wasm_bindgen_test]
fn updates_with_statuses_a_later_superset_adds_are_skipped_the_rest_apply() {
    fresh("h-unknown");
    let g = guard(json!({ "namespace": "h-unknown" }));
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    let (a, b) = (
        "10a0bd9a-03c8-4737-9345-f4234ba86512",
        "2b1e0c5d-6f7a-4b8c-9d0e-1f2a3b4c5d6e",
    );
    g.record_tasks(ts(js(json!({ "task_ids": [a, b] }))))
        .unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    let changed = g
        .apply_status_changes(ts(js(json!({ "statuses": {
            a: {"status": "paused"}, b: {"status": "success"} }, "cursor": "c" }))))
        .unwrap();
    assert_eq!(rust(&changed).as_array().unwrap().len(), 1);
    assert!(g
        .apply_task_status(ts(js(json!({"task_id": a, "status": "queued"}))))
        .unwrap()
        .is_null());
    assert!(g
        .apply_event(ts(js(
            json!({"channel_id": "c", "job_id": "job-1", "user_id": "1",
            "status": "archived", "errors": [], "result_url": null})
        )))
        .unwrap()
        .is_null());
    let jobs = rust(&g.jobs().unwrap());
    let status = |id: &str| {
        jobs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["job_id"] == id)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(
        (status(a), status(b), status("job-1")),
        (json!("pending"), json!("success"), json!("running"))
    );
    assert_eq!(rust(&g.stats().unwrap())["unknownStatuses"], 3);
    g.logout().unwrap();
}

/// Posts `message` (JSON) on the guard's channel, as page code can.
fn post_on_channel(ns: &str, message: Value) {
    let channel = web_sys::BroadcastChannel::new(&format!("superset-job-guard:{ns}")).unwrap();
    channel.post_message(&js(message)).unwrap();
    channel.close();
}

#[wasm_bindgen_test]
async fn a_forged_channel_message_ends_nothing_storage_still_holds() {
    let ns = fresh("h-forged");
    // A cancel in flight: the app's fetch answers when its signal aborts.
    let hang = js_sys::Function::new_no_args(
        r#"return (url, init) => new Promise((_, reject) => init.signal.addEventListener("abort",
             () => reject(new DOMException("aborted", "AbortError"))));"#,
    )
    .call0(&JsValue::NULL)
    .unwrap();
    let options = js(json!({ "namespace": ns }));
    js_sys::Reflect::set(&options, &"fetch".into(), &hang).unwrap();
    let g = JobGuard::new(options).unwrap();
    g.login(ts(js(json!({ "userId": 1 })))).unwrap();
    g.record_job(ts(meta("job-1", "running"))).unwrap();
    let (seen, record) = recorder();
    let _keep = g.subscribe(record).unwrap();
    sleep(0).await;
    let pending = g.cancel("job-1".into(), JsValue::UNDEFINED);
    sleep(50).await;
    for forged in [
        json!({"type": "logout"}),
        json!({"type": "logout", "shared": false, "userId": null, "guestKey": null}),
        json!({"type": "user_changed", "shared": false, "userId": "2", "guestKey": null}),
    ] {
        post_on_channel(&ns, forged);
    }
    sleep(200).await;
    assert_eq!(
        settled(&pending).await,
        None,
        "the cancel is still in flight"
    );
    assert_eq!(rust(&seen), json!([]), "no change heard");
    assert_eq!(rust(&g.session().unwrap())["userId"], "1");
    // A real logout ends it.
    g.logout().unwrap();
    sleep(50).await;
    assert_eq!(settled(&pending).await.unwrap()["outcome"], "aborted");
}

/// What `promise` settled with, or `None` while it has not.
async fn settled(promise: &js_sys::Promise) -> Option<Value> {
    let pending = JsValue::from_str("still pending");
    let race = js_sys::Promise::race(&js_sys::Array::of2(
        promise,
        &js_sys::Promise::resolve(&pending),
    ));
    let value = wasm_bindgen_futures::JsFuture::from(race).await.unwrap();
    (value != pending).then(|| rust(&value))
}

#[wasm_bindgen_test]
fn the_guards_of_one_page_hear_each_others_changes() {
    let ns = fresh("h-page");
    let a = guard(json!({ "namespace": ns }));
    let b = guard(json!({ "namespace": ns }));
    let other = guard(json!({ "namespace": format!("{ns}-other") }));
    let (heard, record) = recorder();
    let _keep = b.subscribe(record).unwrap();
    let sources = js_sys::Array::new();
    let note = js_sys::Function::new_with_args("s", "return (c) => s.push(c.source);")
        .call1(&JsValue::NULL, &sources)
        .unwrap();
    let _keep_too = b.on_change(note).unwrap();
    let (elsewhere, record) = recorder();
    let _keep_other = other.subscribe(record).unwrap();
    a.login(ts(js(json!({ "userId": 1 })))).unwrap();
    a.record_job(ts(meta("job-1", "running"))).unwrap();
    a.apply_event(ts(meta("job-1", "done"))).unwrap();
    assert_eq!(
        rust(&heard),
        json!(["user_changed", "jobs_changed", "jobs_changed"])
    );
    assert_eq!(rust(&b.jobs().unwrap())[0]["status"], "done");
    a.logout().unwrap();
    assert_eq!(rust(&heard).as_array().unwrap().last().unwrap(), "logout");
    assert!(rust(&sources)
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s == "other_tab"));
    assert_eq!(
        rust(&elsewhere),
        json!([]),
        "another namespace hears nothing"
    );
    // A guard whose storage is its own memory shares no records: it hears none of them.
    let private = guard(json!({ "namespace": ns, "storage": "memory" }));
    let (mine, record) = recorder();
    let _keep_private = private.subscribe(record).unwrap();
    a.login(ts(js(json!({ "userId": 1 })))).unwrap();
    a.record_job(ts(meta("job-2", "running"))).unwrap();
    assert_eq!(rust(&mine), json!([]));
    // A freed guard hears nothing more.
    let count = heard.length();
    drop(b);
    a.record_job(ts(meta("job-3", "running"))).unwrap();
    assert_eq!(heard.length(), count);
    a.logout().unwrap();
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/freeable.js")]
extern "C" {
    /// The package's `JobGuard`: wasm-bindgen's class wrapped so that `free()` is safe.
    fn freeable(base: &JsValue, freed_error: &JsValue) -> JsValue;
}

/// The package's `JobGuard` class (js/freeable.js over wasm-bindgen's).
fn package_class() -> JsValue {
    let probe: JsValue = guard(json!({ "storage": "memory" })).into();
    let base = js_sys::Reflect::get(
        &js_sys::Reflect::get_prototype_of(&probe).unwrap(),
        &"constructor".into(),
    )
    .unwrap();
    let freed_error = wasm_bindgen::closure::Closure::<dyn Fn() -> JsValue>::new(
        superset_job_guard::web::freed_error,
    )
    .into_js_value();
    freeable(&base, &freed_error)
}

/// Calls `guard[method](...args)` as JS does.
fn call(guard: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: js_sys::Function = js_sys::Reflect::get(guard, &method.into())
        .unwrap()
        .dyn_into()
        .unwrap();
    let args: js_sys::Array = args.iter().collect();
    f.apply(guard, &args)
}

#[wasm_bindgen_test]
async fn a_free_made_during_a_call_takes_effect_when_it_returns_and_releases_everything() {
    let class = package_class();
    let ns = fresh("h-free-inside");
    let polls = js_sys::Array::new();
    let fetch = js_sys::Function::new_with_args(
        "polls",
        r#"return async (url) => { polls.push(String(url));
             return new Response('{"result": []}', { headers: { "Content-Type": "application/json" } }); };"#,
    )
    .call1(&JsValue::NULL, &polls)
    .unwrap();
    let options = js(json!({ "namespace": ns }));
    js_sys::Reflect::set(&options, &"fetch".into(), &fetch).unwrap();
    let g = js_sys::Reflect::construct(
        class.unchecked_ref::<js_sys::Function>(),
        &js_sys::Array::of1(&options),
    )
    .unwrap();
    call(&g, "login", &[js(json!({ "userId": 1 }))]).unwrap();
    call(&g, "recordJob", &[meta("job-1", "running")]).unwrap();
    let follow = js(json!({ "intervalMs": 100, "maxIntervalMs": 100 }));
    call(&g, "follow", &[follow]).unwrap();
    let (heard, record) = recorder();
    call(&g, "subscribe", &[record]).unwrap();
    sleep(250).await;
    assert!(polls.length() >= 1, "following");
    // The argument's getter frees the guard in the middle of `recordJob`.
    let freeing = js_sys::Function::new_with_args(
        "g",
        r#"return { get channel_id() { g.free(); return "c"; }, job_id: "job-2", user_id: "1",
                    status: "running", errors: [], result_url: null };"#,
    )
    .call1(&JsValue::NULL, &g)
    .unwrap();
    let recorded = call(&g, "recordJob", &[freeing]);
    assert_eq!(
        rust(&recorded.expect("the call answers"))["job_id"],
        "job-2"
    );
    // Freed once the call returned: every call answers `freed`, and nothing is left running.
    assert_guard_error(call(&g, "jobs", &[]).thrown(), "freed");
    call(&g, "free", &[]).expect("free() twice is harmless");
    let polled = polls.length();
    let count = heard.length();
    let other = guard(json!({ "namespace": ns }));
    other.record_job(ts(meta("job-3", "running"))).unwrap();
    other.logout().unwrap();
    sleep(400).await;
    assert_eq!(polls.length(), polled, "the follow stopped with the guard");
    assert_eq!(heard.length(), count, "its listeners were released");
    // A listener that frees the guard while the guard tells it of its own change.
    let g = js_sys::Reflect::construct(
        class.unchecked_ref::<js_sys::Function>(),
        &js_sys::Array::of1(&js(json!({ "namespace": ns }))),
    )
    .unwrap();
    let free_on_change = js_sys::Function::new_with_args("g", "return () => g.free();")
        .call1(&JsValue::NULL, &g)
        .unwrap();
    call(&g, "subscribe", &[free_on_change]).unwrap();
    call(&g, "login", &[js(json!({ "userId": 1 }))]).expect("the login answers");
    assert_guard_error(call(&g, "jobs", &[]).thrown(), "freed");
    let after = guard(json!({ "namespace": ns }));
    assert_eq!(rust(&after.session().unwrap())["userId"], "1");
    after.logout().unwrap();
}
