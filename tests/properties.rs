//! Property tests of the core (native): arbitrary storage contents, arbitrary sequences of
//! guard calls, arbitrary JSON. Whatever happens, nothing panics, no record that is not the
//! session's is ever exposed or allowed, logout leaves no key of the namespace, and a valid
//! record is never lost to a corrupt neighbour. Waits over several
//! tabs and guards: no wait stays pending while its jobs cannot progress, and no job another
//! waiter awaits is cancelled.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use superset_job_guard::core::cancel::CancelCheck;
use superset_job_guard::core::cancel_flow::{Answer, CancelFlow, Step};
use superset_job_guard::core::doubles::{ManualClock, SequenceRandom, SharedMemory};
use superset_job_guard::core::ids::{is_reserved_id, is_valid_id};
use superset_job_guard::core::model::{JobMetadata, JobRecord};
use superset_job_guard::core::options::GuardOptions;
use superset_job_guard::core::response::{Contract, Outcome, Reply};
use superset_job_guard::core::retry::{parse_retry_after, RetryPolicy};
use superset_job_guard::core::session::Session;
use superset_job_guard::core::storage::KeyValue;
use superset_job_guard::core::store::JobStore;

const NS: &str = "superset-job-guard:";
const SESSION_KEY: &str = "superset-job-guard:v1:session";
const T0: u64 = 1_700_000_000_000;

/// The origin's localStorage, seen by the store and by the test.
type Shared = SharedMemory;

trait Peek {
    fn put(&self, key: &str, value: &str);
    fn all_keys(&self) -> Vec<String>;
    fn marker(&self) -> Option<Session>;
    fn marker_owns(&self, rec: &JobRecord) -> bool;
}

impl Peek for Shared {
    fn put(&self, key: &str, value: &str) {
        self.set_text(key, value);
    }
    fn all_keys(&self) -> Vec<String> {
        self.keys().unwrap()
    }
    fn marker(&self) -> Option<Session> {
        Session::from_stored(&self.text(SESSION_KEY)?)
    }

    /// The oracle, written independently of the library: is `rec` owned by the stored
    /// session marker? Same user (strings, or both null) and, when the marker has a channel,
    /// the same channel.
    fn marker_owns(&self, rec: &JobRecord) -> bool {
        let Some(text) = self.text(SESSION_KEY) else {
            return false;
        };
        let Ok(marker) = serde_json::from_str::<Value>(&text) else {
            return false;
        };
        let user = match &marker["user_id"] {
            Value::String(s) => Some(s.clone()),
            // Whole numbers are user ids too (Superset's registry stores ints).
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Some(i.to_string()),
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9e15 => {
                    Some((f as i64).to_string())
                }
                _ => Some(n.to_string()),
            },
            _ => None,
        };
        let channel_ok = match &marker["channel_id"] {
            Value::String(c) => rec.channel_id().is_some_and(|id| id == c),
            _ => true,
        };
        user.as_deref() == rec.user_id.as_deref() && channel_ok
    }
}

// ---- strategies ----

fn user() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!("1")),
        Just(json!(1)),
        Just(json!("2")),
        Just(json!(2)),
        Just(json!(3.0)),
    ]
}

fn channel() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("chan-a".to_owned()),
        Just("chan-b".to_owned()),
        Just("guest-x".to_owned())
    ]
}

fn job_id() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..6).prop_map(|i| format!("job-{i}")),
        Just("__proto__".to_owned()),
        Just(String::new()),
        Just("a:b/c".to_owned()),
    ]
}

fn status() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("pending"),
        Just("running"),
        Just("done"),
        Just("error"),
        Just("cancelled"),
        Just("bogus")
    ]
}

/// Any JSON, biased toward the field names and values the guard reads.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-z0-9_:-]{0,12}".prop_map(Value::String),
        Just(json!("__proto__")),
        Just(json!("done")),
        Just(json!(1_700_000_000_000u64)),
        Just(json!("10a0bd9a-03c8-4737-9345-f4234ba86512")),
        Just(json!("memory")),
        Just(json!("task")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        let key = prop_oneof![
            Just("channel_id".to_owned()),
            Just("job_id".to_owned()),
            Just("user_id".to_owned()),
            Just("status".to_owned()),
            Just("errors".to_owned()),
            Just("result_url".to_owned()),
            Just("created_at".to_owned()),
            Just("updated_at".to_owned()),
            Just("userId".to_owned()),
            Just("channelId".to_owned()),
            Just("namespace".to_owned()),
            Just("retry".to_owned()),
            Just("task_id".to_owned()),
            Just("async_job".to_owned()),
            Just("attempts".to_owned()),
            "[a-z]{1,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// What may sit under the namespace: anything from garbage to valid records of anyone.
fn stored_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any_json().prop_map(|v| v.to_string()),
        ".{0,40}",
        (job_id(), user(), channel(), status(), 0u64..T0 + 10_000).prop_map(|(j, u, c, s, t)| {
            json!({"channel_id": c, "job_id": j, "user_id": u, "status": s, "errors": [],
                   "result_url": null, "created_at": t, "updated_at": t})
            .to_string()
        }),
    ]
}

fn stored_key() -> impl Strategy<Value = String> {
    prop_oneof![
        job_id().prop_map(|j| format!("{NS}v1:job:{j}")),
        Just(SESSION_KEY.to_owned()),
        Just(format!("{NS}v2:job:x")),
        Just("last_async_event_id".to_owned()),
        Just("unrelated".to_owned()),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Login(Value, Option<String>),
    Logout,
    Record(String, Value, String, &'static str),
    Event(String, Value, String, &'static str),
    Check(String),
    Job(String),
    Jobs,
    Settle(String, u8),
    /// Another tab or a hostile script writes under the namespace.
    Write(String, String),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (user(), proptest::option::of(channel())).prop_map(|(u, c)| Op::Login(u, c)),
        1 => Just(Op::Logout),
        4 => (job_id(), user(), channel(), status()).prop_map(|(j, u, c, s)| Op::Record(j, u, c, s)),
        2 => (job_id(), user(), channel(), status()).prop_map(|(j, u, c, s)| Op::Event(j, u, c, s)),
        2 => job_id().prop_map(Op::Check),
        1 => job_id().prop_map(Op::Job),
        1 => Just(Op::Jobs),
        1 => (job_id(), 0u8..7).prop_map(|(j, o)| Op::Settle(j, o)),
        2 => (stored_key(), stored_value()).prop_map(|(k, v)| Op::Write(k, v)),
        1 => (0u64..2_000_000).prop_map(Op::Advance),
    ]
}

fn meta(job: &str, user: &Value, channel: &str, status: &str) -> Value {
    json!({"channel_id": channel, "job_id": job, "user_id": user, "status": status,
           "errors": [], "result_url": null})
}

const OUTCOMES: [Outcome; 7] = [
    Outcome::Cancelled,
    Outcome::NotJobOwner,
    Outcome::NotFound,
    Outcome::Unauthenticated,
    Outcome::Refused,
    Outcome::Failed,
    Outcome::Aborted,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_sequence_keeps_the_ownership_promises(
        initial in prop::collection::vec((stored_key(), stored_value()), 0..8),
        ops in prop::collection::vec(op(), 1..40),
        max_jobs in 1usize..6,
    ) {
        let shared = Shared::default();
        for (k, v) in &initial {
            shared.put(k, v);
        }
        let clock = ManualClock::at(T0);
        let options = GuardOptions { max_jobs, ttl_ms: 3_600_000, ..GuardOptions::default() };
        let mut store = JobStore::new(shared.clone(), clock.clone(), &options);
        for op in ops {
            match op {
                Op::Login(u, c) => {
                    if let Ok(s) = Session::from_login(json!({"userId": u, "channelId": c})) {
                        store.login(s).unwrap();
                    }
                }
                Op::Logout => {
                    store.logout();
                    let left: Vec<_> = shared.all_keys().into_iter()
                        .filter(|k| k.starts_with(NS) || k == "last_async_event_id").collect();
                    prop_assert!(left.is_empty(), "after logout: {left:?}");
                }
                Op::Record(j, u, c, s) => {
                    if let Ok(m) = JobMetadata::read(meta(&j, &u, &c, s)) {
                        if let Ok(rec) = store.record_job(m) {
                            prop_assert!(shared.marker_owns(&rec));
                            prop_assert_eq!(store.job(&rec.job_id).map(|r| r.job_id), Some(rec.job_id));
                        }
                    }
                }
                Op::Event(j, u, c, s) => {
                    if let Ok(m) = JobMetadata::read(meta(&j, &u, &c, s)) {
                        if let Ok(Some(rec)) = store.apply_event(m) {
                            prop_assert!(shared.marker_owns(&rec));
                        }
                    }
                }
                Op::Check(j) => {
                    if let CancelCheck::Allowed(rec) = store.check_cancel(&j) {
                        prop_assert!(shared.marker_owns(&rec));
                        prop_assert!(!rec.status().is_terminal());
                        prop_assert_eq!(rec.job_id, j);
                    }
                }
                Op::Job(j) => {
                    if let Some(rec) = store.job(&j) {
                        prop_assert!(shared.marker_owns(&rec));
                    }
                }
                Op::Jobs => {}
                Op::Settle(j, o) => store.settle_cancel(&j, OUTCOMES[usize::from(o) % OUTCOMES.len()], None, None),
                Op::Write(k, v) => shared.put(&k, &v),
                Op::Advance(ms) => clock.advance(ms),
            }
            // After every step: jobs() exposes only the session's records, each once.
            let jobs = store.jobs();
            match shared.marker() {
                None => prop_assert!(jobs.is_empty()),
                Some(session) => {
                    for rec in &jobs {
                        prop_assert!(shared.marker_owns(rec), "{rec:?} is not {session:?}'s");
                        prop_assert!(is_valid_id(&rec.job_id) && !is_reserved_id(&rec.job_id));
                    }
                }
            }
            let mut ids: Vec<_> = jobs.iter().map(|r| r.job_id.clone()).collect();
            ids.dedup();
            prop_assert_eq!(ids.len(), jobs.len());
        }
    }

    #[test]
    fn valid_records_survive_any_corrupt_neighbours(
        valid in prop::collection::btree_set(0u8..20, 0..8),
        corrupt in prop::collection::vec((0u8..40, stored_value()), 0..12),
    ) {
        let shared = Shared::default();
        shared.put(SESSION_KEY, r#"{"user_id":"1","channel_id":"chan-a"}"#);
        for i in &valid {
            let rec = json!({"channel_id": "chan-a", "job_id": format!("ok-{i}"), "user_id": "1",
                "status": "running", "errors": [], "result_url": null, "created_at": T0, "updated_at": T0});
            shared.put(&format!("{NS}v1:job:ok-{i}"), &rec.to_string());
        }
        for (i, v) in &corrupt {
            // Neighbours under other keys, whatever they hold.
            shared.put(&format!("{NS}v1:job:bad-{i}"), v);
        }
        let mut store = JobStore::new(shared.clone(), ManualClock::at(T0), &GuardOptions::default());
        let got: Vec<String> = store.jobs().into_iter()
            .map(|r| String::from(r.job_id)).filter(|id| id.starts_with("ok-")).collect();
        let want: Vec<String> = valid.iter().map(|i| format!("ok-{i}")).collect();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        let mut want_sorted = want.clone();
        want_sorted.sort();
        prop_assert_eq!(got_sorted, want_sorted);
        for i in &valid {
            let id = format!("ok-{i}");
            prop_assert!(store.check_cancel(&id).is_allowed(), "{}", id);
        }
    }

    #[test]
    fn parsers_never_panic_and_only_accept_valid_values(value in any_json(), text in ".{0,64}") {
        let value_text = value.to_string();
        if let Ok(m) = JobMetadata::read(&value) {
            prop_assert!(is_valid_id(&m.job_id) && !is_reserved_id(&m.job_id));
            prop_assert!(is_valid_id(&m.channel_id));
        }
        let _ = Session::from_login(&value);
        let _ = GuardOptions::read(&value);
        for input in [value_text, text.clone()] {
            if let Some(rec) = JobRecord::from_stored(&input) {
                let again = rec.to_stored();
                prop_assert_eq!(JobRecord::from_stored(&again), Some(rec));
            }
            let _ = Session::from_stored(&input);
        }
        let _ = parse_retry_after(&text, T0);
    }

    /// Whatever metadata is accepted becomes a record that is stored in the v1 format (the
    /// fields in order) and reads back as the same record.
    #[test]
    fn accepted_metadata_is_stored_in_the_v1_format_and_reads_back(
        j in job_id(), u in user(), c in channel(), s in status(), at in 0u64..9_007_199_254_740_991,
    ) {
        let Ok(m) = JobMetadata::read(meta(&j, &u, &c, s)) else { return Ok(()) };
        let rec = JobRecord::new(m, at, at);
        let text = rec.to_stored();
        let fields: Vec<String> = serde_json::from_str::<Map<String, Value>>(&text).unwrap()
            .keys().cloned().collect();
        prop_assert_eq!(fields, ["channel_id", "created_at", "errors", "job_id", "result_url",
            "status", "updated_at", "user_id"]);
        prop_assert!(text.starts_with(r#"{"channel_id":"#), "{}", text);
        prop_assert!(text.ends_with(&format!(r#","created_at":{at},"updated_at":{at}}}"#)), "{}", text);
        prop_assert_eq!(JobRecord::from_stored(&text), Some(rec));
    }

    #[test]
    fn the_retry_schedule_stays_within_its_bounds(
        attempts in 1u32..11,
        base in 0u64..60_001,
        max in 0u64..300_001,
        randoms in prop::collection::vec(any::<f64>(), 1..5),
        statuses in prop::collection::vec(prop_oneof![Just(0u16), 100u16..600, Just(503), Just(403)], 1..12),
        retry_after in proptest::option::of(".{0,32}"),
    ) {
        let policy = RetryPolicy { attempts, base_delay_ms: base, max_delay_ms: max };
        let mut flow = CancelFlow::new("j", policy, Contract::AsyncEvent, 10_000);
        let mut random = SequenceRandom::new(randoms);
        let mut finished = false;
        for status in statuses {
            flow.sending();
            let answer = if status == 0 { Answer::NetworkError } else {
                Answer::Status { status, retry_after: retry_after.clone(), reply: Reply::Unread }
            };
            match flow.after(&answer, T0, &mut random) {
                Step::Wait(ms) => prop_assert!(ms <= max),
                Step::ReadStatus => prop_assert!(false, "an async_event answer read a task status"),
                Step::Finish(out) => {
                    prop_assert!(out.attempts <= attempts);
                    if status == 403 {
                        prop_assert_eq!(out.outcome, Outcome::NotJobOwner);
                        prop_assert!(!out.retryable);
                    }
                    finished = true;
                    break;
                }
            }
        }
        prop_assert!(finished || flow.sent() < attempts);
    }
}
