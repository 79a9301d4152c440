//! What `waitFor` is given, read, and whether it may wait: its first argument (a `202` body of
//! either contract, a job id, or up to [`MAX_JOBS_PER_WAITER`] ids), its options
//! ([`WaitSettings`]: any key but its own refused, each value within its rule), and each job's
//! admission ([`admit`]: the session's record of it, in a wait's words). How a waiter then
//! settles is [`waiters`](super::waiters).

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::cancel::{CancelCheck, CancelRefusal};
use super::error::GuardError;
use super::ids::quote;
use super::model::JobMetadata;
use super::options::{unknown_option, whole};
use super::quiet::Json;
use super::response::Contract;
use super::task::Submission;
use super::wait_outcome::{Refused, WaitRefusal};
use super::waiters::{DEFAULT_STALE_MS, MAX_JOBS_PER_WAITER, MAX_STALE_MS};
use super::wire::{self, Field, Object};

/// What `waitFor` was given: job ids (a string or an array of them), or a `202` body to record
/// first (a task-framework submission, or an async_event job's metadata).
#[derive(Debug)]
pub enum WaitInput {
    Ids(Vec<String>),
    Tasks(Submission),
    Job(JobMetadata),
}

impl WaitInput {
    /// What a `202` body started, to cancel it without a record: its jobs (a task by its
    /// uuid), their contract and the tab id the body carried. Ids alone start nothing.
    pub fn started(&self) -> (Vec<String>, Contract, Option<String>) {
        match self {
            WaitInput::Ids(_) => (Vec::new(), Contract::AsyncEvent, None),
            WaitInput::Tasks(s) => (
                s.task_ids.iter().map(|t| t.as_str().to_owned()).collect(),
                Contract::Task,
                s.tab_id.as_ref().map(|t| t.as_str().to_owned()),
            ),
            WaitInput::Job(meta) => (
                vec![meta.job_id.as_str().to_owned()],
                Contract::AsyncEvent,
                None,
            ),
        }
    }
}

/// Reads `waitFor`'s first argument: an id, up to [`MAX_JOBS_PER_WAITER`] ids (each once), or
/// a `202` body (one with `task_ids` or `async_job` is a task submission).
pub fn read_input(value: &Value) -> Result<WaitInput, Refused> {
    let invalid = |m: &str| (WaitRefusal::InvalidInput, m.to_owned());
    match value {
        Value::String(id) => Ok(WaitInput::Ids(vec![id.clone()])),
        Value::Array(ids) => {
            if ids.is_empty() || ids.len() > MAX_JOBS_PER_WAITER {
                return Err(invalid("waitFor needs 1 to 100 job ids"));
            }
            let mut list: Vec<String> = Vec::with_capacity(ids.len());
            for id in ids {
                let id = id
                    .as_str()
                    .ok_or_else(|| invalid("a job id must be a string"))?;
                if !list.iter().any(|seen| seen == id) {
                    list.push(id.to_owned());
                }
            }
            Ok(WaitInput::Ids(list))
        }
        Value::Object(body) if body.contains_key("task_ids") || body.contains_key("async_job") => {
            Submission::read(Json(value))
                .map(WaitInput::Tasks)
                .map_err(|e| refused_by(&e))
        }
        Value::Object(_) => JobMetadata::read(Json(value))
            .map(WaitInput::Job)
            .map_err(|e| refused_by(&e)),
        _ => Err(invalid(
            "waitFor needs a 202 body, a job id or an array of job ids",
        )),
    }
}

/// The refusal for an error recording a `202` body raised.
pub fn refused_by(error: &GuardError) -> Refused {
    let reason = match error {
        GuardError::NoSession => WaitRefusal::NoSession,
        GuardError::NotJobOwner { .. } => WaitRefusal::NotJobOwner,
        _ => WaitRefusal::InvalidInput,
    };
    (reason, error.to_string())
}

/// `waitFor`'s options as JSON writes them (the shell takes `signal` out first: JSON cannot
/// hold it); any other key is refused.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct OptionsWire {
    /// Taken out before; named so that an unknown key's message lists it as known.
    #[allow(dead_code)]
    signal: Option<IgnoredAny>,
    stale_timeout_ms: Field<Option<f64>>,
    cancel_on_close: Field<Option<bool>>,
}

const STALE_RULE: &str =
    "`staleTimeoutMs` must be a whole number of milliseconds from 1 to 86400000";

/// A call's options object (`waitFor`'s, `query()`'s): `null`/`undefined` is every default;
/// anything but an object, or an unknown key, is refused naming the call.
pub fn read_options<'de, T, D>(value: D, call: &str) -> Result<T, GuardError>
where
    T: Deserialize<'de> + Default,
    D: Deserializer<'de>,
{
    let not_object = [call, "'s options must be an object, null or undefined"].concat();
    let w: Option<Object<T>> = wire::read(value, &not_object).map_err(|m| {
        unknown_option(&m, &[" of ", call].concat()).unwrap_or(GuardError::InvalidOptions(m))
    })?;
    Ok(w.map(|Object(w)| w).unwrap_or_default())
}

/// `waitFor`'s options, read: its stale timeout and `cancelOnClose`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitSettings {
    pub stale_ms: u64,
    /// The call's own `cancelOnClose`; `None`: its guard's (the machine's to say).
    pub cancel_on_close: Option<bool>,
}

impl WaitSettings {
    /// Reads `waitFor`'s options (without `signal`), once: `null`/`undefined` is every default
    /// (`cancelOnClose` the guard's); anything but an object, an unknown key, or a value
    /// breaking its rule is refused with the rule as the message.
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        let w: OptionsWire = read_options(value, "waitFor")?;
        Self::of(w.stale_timeout_ms, w.cancel_on_close)
    }

    /// The settings from their two fields (`waitFor`'s, or `query()`'s), each to its rule.
    pub fn of(
        stale: Field<Option<f64>>,
        cancel_on_close: Field<Option<bool>>,
    ) -> Result<Self, GuardError> {
        let invalid = GuardError::InvalidOptions;
        let stale = stale
            .nullable()
            .map_err(|_| invalid(STALE_RULE.to_owned()))?;
        let stale_ms = match stale {
            None => DEFAULT_STALE_MS,
            Some(ms) => whole(ms, 1, MAX_STALE_MS).ok_or_else(|| invalid(STALE_RULE.to_owned()))?,
        };
        let cancel_on_close = cancel_on_close
            .nullable()
            .map_err(|_| invalid("`cancelOnClose` must be true or false".to_owned()))?;
        Ok(Self {
            stale_ms,
            cancel_on_close,
        })
    }
}

/// Whether `waitFor` may await `job_id`, as `check` (the cancel's check) found it: the session's
/// record of it, ended or not (a cancel's check refuses an ended job; a wait settles on it).
/// The refusal otherwise, in a wait's words.
pub fn admit(check: &CancelCheck, job_id: &str) -> Result<(), Refused> {
    let CancelCheck::Refused { reason, .. } = check else {
        return Ok(());
    };
    let job = quote(job_id);
    Err(match reason {
        CancelRefusal::AlreadyFinished => return Ok(()),
        CancelRefusal::NoSession => (
            WaitRefusal::NoSession,
            format!("No session: nobody is signed in (or the session ended), so job {job} is not awaited"),
        ),
        CancelRefusal::UnknownJob => (
            WaitRefusal::UnknownJob,
            format!("Unknown job {job}: it was not recorded in this session, or its record expired or was removed"),
        ),
        CancelRefusal::NotJobOwner => (
            WaitRefusal::NotJobOwner,
            format!("Not job owner: job {job} was started by another user or in another session"),
        ),
    })
}

/// Whether a guard following `contract`'s stream can hear the job `check` allowed end: a task
/// is heard on the task contract's stream, a job on the async_event one. Otherwise the wait
/// would hear nothing until its stale timeout: refused at once (`unsupported`), saying which
/// option to change.
pub fn heard_on(check: &CancelCheck, contract: Contract, job_id: &str) -> Result<(), Refused> {
    let CancelCheck::Allowed(record) = check else {
        return Ok(());
    };
    let task = matches!(record.kind, super::model::RecordKind::Task { .. });
    let (of, needs) = match (task, contract) {
        (true, Contract::AsyncEvent) => ("task", "\"task\""),
        (false, Contract::Task) => ("job", "\"async_event\" (the default)"),
        _ => return Ok(()),
    };
    Err((
        WaitRefusal::Unsupported,
        format!(
            "This guard follows the other stream (its contract option), so it would never hear {of} {} end: make it with contract: {needs}",
            quote(job_id)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::JobRecord;
    use crate::core::statuses::TaskStatus;

    const A: &str = "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01";

    fn task(id: &str, status: TaskStatus) -> JobRecord {
        let mut r = JobRecord::task(
            crate::core::ids::TaskId::parse(id).unwrap(),
            Some("1".into()),
            None,
            1,
        );
        r.set_task_status(status);
        r
    }

    #[test]
    fn reads_ids_bodies_and_refuses_the_rest() {
        use serde_json::json;
        let ids = |v: Value| match read_input(&v) {
            Ok(WaitInput::Ids(ids)) => ids,
            other => panic!("{other:?}"),
        };
        assert_eq!(ids(json!("job-1")), ["job-1"]);
        assert_eq!(ids(json!(["a", "b", "a"])), ["a", "b"]);
        assert!(matches!(
            read_input(&json!({ "task_ids": [A], "cursor": "c", "tab_id": "t1" })),
            Ok(WaitInput::Tasks(s)) if s.task_ids.len() == 1 && s.tab_id.is_some()
        ));
        assert!(matches!(
            read_input(&json!({ "async_job": { "task_id": A } })),
            Ok(WaitInput::Tasks(_))
        ));
        let meta = json!({ "channel_id": "c", "job_id": "j", "user_id": "1", "status": "pending", "errors": [], "result_url": null });
        assert!(matches!(read_input(&meta), Ok(WaitInput::Job(m)) if &*m.job_id == "j"));
        for bad in [
            json!(null),
            json!(5),
            json!([]),
            json!([1]),
            json!({ "task_ids": "x" }),
            json!({ "job_id": 5 }),
        ] {
            let (reason, message) = read_input(&bad).unwrap_err();
            assert_eq!(reason, WaitRefusal::InvalidInput, "{bad}: {message}");
        }
        let many: Vec<String> = (0..=MAX_JOBS_PER_WAITER).map(|i| i.to_string()).collect();
        assert!(read_input(&json!(many)).is_err());
        assert_eq!(refused_by(&GuardError::NoSession).0, WaitRefusal::NoSession);
        assert_eq!(
            refused_by(&GuardError::NotJobOwner { job_id: "j".into() }).0,
            WaitRefusal::NotJobOwner
        );
    }

    #[test]
    fn the_options_are_an_object_of_known_keys_each_within_its_rule() {
        use serde_json::json;
        let read = |v: Value| WaitSettings::read(Json(&v));
        assert_eq!(
            read(json!(null)),
            Ok(WaitSettings {
                stale_ms: DEFAULT_STALE_MS,
                cancel_on_close: None
            })
        );
        assert_eq!(
            read(json!({})).unwrap().cancel_on_close,
            None,
            "the guard's"
        );
        let given = read(json!({"staleTimeoutMs": 1, "cancelOnClose": false})).unwrap();
        assert_eq!((given.stale_ms, given.cancel_on_close), (1, Some(false)));
        assert_eq!(
            read(json!({"staleTimeoutMs": 86_400_000, "cancelOnClose": true})).unwrap(),
            WaitSettings {
                stale_ms: 86_400_000,
                cancel_on_close: Some(true)
            }
        );
        for (bad, says) in [
            (json!({"staleTimeoutMs": 0}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": -1}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": 1.5}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": 86_400_001}), "`staleTimeoutMs`"),
            (json!({"staleTimeoutMs": "600"}), "`staleTimeoutMs`"),
            (json!({"cancelOnClose": "no"}), "`cancelOnClose`"),
            (
                json!({"stale": 5}),
                "unknown option `stale` of waitFor (known: signal",
            ),
            (json!(5), "must be an object"),
            (json!("x"), "must be an object"),
            (json!([]), "must be an object"),
            (json!([{"staleTimeoutMs": 5}]), "must be an object"),
        ] {
            let e = read(bad.clone()).unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn an_ended_job_is_admitted_and_others_refused_with_the_checks_reason() {
        let record = task(A, TaskStatus::Success);
        assert_eq!(admit(&CancelCheck::Allowed(record), A), Ok(()));
        let refused = |reason| CancelCheck::Refused {
            reason,
            message: "the cancel's words".into(),
        };
        assert_eq!(admit(&refused(CancelRefusal::AlreadyFinished), A), Ok(()));
        for (reason, wait, words) in [
            (
                CancelRefusal::NotJobOwner,
                WaitRefusal::NotJobOwner,
                "another user",
            ),
            (
                CancelRefusal::NoSession,
                WaitRefusal::NoSession,
                "nobody is signed in",
            ),
            (
                CancelRefusal::UnknownJob,
                WaitRefusal::UnknownJob,
                "not recorded",
            ),
        ] {
            let (got, message) = admit(&refused(reason), A).unwrap_err();
            assert_eq!(got, wait);
            assert!(message.contains(words) && message.contains(A), "{message}");
            assert!(!message.contains("cancel"), "a wait's words: {message}");
        }
    }

    #[test]
    fn what_a_202_started_is_read_for_its_cancel() {
        let job = read_input(
            &serde_json::json!({"channel_id": "c", "job_id": "j-1", "user_id": "1",
            "status": "pending", "errors": [], "result_url": null}),
        )
        .unwrap();
        assert_eq!(
            job.started(),
            (vec!["j-1".to_owned()], Contract::AsyncEvent, None)
        );
        let tasks = read_input(
            &serde_json::json!({"task_ids": ["0b9a1e2c-7d3f-4a5b-9c8d-1e2f3a4b5c6d"],
            "cursor": "x", "tab_id": "tab-1"}),
        )
        .unwrap();
        let (ids, contract, tab) = tasks.started();
        assert_eq!(
            (ids.len(), contract, tab.as_deref()),
            (1, Contract::Task, Some("tab-1"))
        );
        assert_eq!(
            read_input(&serde_json::json!("j-2")).unwrap().started().0,
            Vec::<String>::new()
        );
    }
}
