//! Writes what the Rust models produce and accept as a TypeScript file that checks each value
//! against the type the package's `.d.ts` gives it (`satisfies`, so a field TS does not declare
//! is an error too). `tests/package/types-agree.test.mjs` runs this and then `tsc --strict` on
//! the file: a Rust model and its TypeScript type that disagree fail that test.
//!
//! Outputs are made by the core itself (records, cancel checks and outcomes, classifications,
//! the session, storage status, stats) and written as the guard hands them to JS (serde,
//! `None` as `null`). Inputs are values the TypeScript types allow; each is first read by the
//! core's own reader, which must accept it.
//!
//! `cargo run --example ts_samples -- <out.ts> <path of the .d.ts, as imported from out.ts>`

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    if let Err(e) = native::run() {
        eprintln!("ts_samples: {e}");
        std::process::exit(1);
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use serde::Serialize;
    use serde_json::{json, Value};

    use superset_job_guard::core::cancel::{decide, CancelRefusal, RefusalReason};
    use superset_job_guard::core::cancel_flow::{Answer, CancelFlow, Step};
    use superset_job_guard::core::doubles::{ManualClock, SequenceRandom};
    use superset_job_guard::core::error::GuardError;
    use superset_job_guard::core::fallback::FallbackStorage;
    use superset_job_guard::core::model::{JobMetadata, JobStatus, TaskStatus};
    use superset_job_guard::core::options::GuardOptions;
    use superset_job_guard::core::response::{classify, Contract, Outcome, Reply};
    use superset_job_guard::core::retry::RetryPolicy;
    use superset_job_guard::core::session::Session;
    use superset_job_guard::core::storage::MemoryStorage;
    use superset_job_guard::core::store::JobStore;
    use superset_job_guard::core::task::{StatusChange, Submission};

    const TASK: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";

    struct Samples {
        lines: Vec<String>,
    }

    impl Samples {
        fn add(&mut self, ts_type: &str, value: &impl Serialize) -> Result<(), String> {
            let json = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
            let n = self.lines.len();
            self.lines.push(format!(
                "export const sample{n} = {json} satisfies {ts_type};\n"
            ));
            Ok(())
        }

        /// Every name of a string union: each value satisfies `ts_type`, and `ts_type` has no
        /// member that is not among them.
        fn names(&mut self, ts_type: &str, names: &[&str]) -> Result<(), String> {
            let n = self.lines.len();
            self.add(&format!("{ts_type}[]"), &names)?;
            self.lines.push(format!(
                "export const all{n}: [Exclude<{ts_type}, (typeof sample{n})[number]>] extends \
                 [never] ? true : false = true;\n"
            ));
            Ok(())
        }

        /// An input: the core's reader must accept it, and TypeScript its type.
        fn input<T>(
            &mut self,
            ts_type: &str,
            value: Value,
            read: impl Fn(&Value) -> Result<T, String>,
        ) -> Result<(), String> {
            read(&value)
                .map_err(|e| format!("the core refuses a {ts_type} sample {value}: {e}"))?;
            self.add(ts_type, &value)
        }
    }

    pub fn run() -> Result<(), String> {
        let mut args = std::env::args().skip(1);
        let (Some(out), Some(dts)) = (args.next(), args.next()) else {
            return Err("usage: ts_samples <out.ts> <d.ts import path>".to_owned());
        };
        let mut s = Samples { lines: Vec::new() };
        outputs(&mut s)?;
        inputs(&mut s)?;
        let types = "AsyncEvent, AsyncJobRecord, CancelCheck, CancelClassification, \
                     CancelOutcome, CancelOutcomeKind, CancelRefusalReason, GuardErrorCode, \
                     GuardOptions, GuardStats, JobMetadata, JobRecord, JobStatus, \
                     RefusalReason, SessionInfo, SessionInput, StorageStatus, TaskRecord, \
                     TaskStatus, TaskStatusChanges, TaskStatusMessage, TaskSubmission";
        let text = format!(
            "// Written by `cargo run --example ts_samples`: values of the Rust models, checked \
             against the package's types.\nimport type {{ {types} }} from \"{dts}\";\n\n{}",
            s.lines.concat()
        );
        std::fs::write(&out, text).map_err(|e| format!("{out}: {e}"))
    }

    fn err(e: impl std::fmt::Display) -> String {
        e.to_string()
    }

    fn outputs(s: &mut Samples) -> Result<(), String> {
        let clock = ManualClock::at(1_700_000_000_000);
        let mut store = JobStore::new(MemoryStorage::new(), clock, &GuardOptions::default());
        let session = Session::from_login(json!({"userId": 1, "channelId": "c-1"})).map_err(err)?;
        store.login(session.clone()).map_err(err)?;
        s.add("SessionInfo", &session.info())?;
        let meta = JobMetadata::read(json!({
            "channel_id": "c-1", "job_id": "j-1", "user_id": "1", "status": "pending",
            "errors": [], "result_url": null
        }))
        .map_err(err)?;
        let job = store.record_job(meta).map_err(err)?;
        s.add("AsyncJobRecord", &job)?;
        s.add("JobRecord", &job)?;
        let event = JobMetadata::read(json!({
            "channel_id": "c-1", "job_id": "j-1", "user_id": 1, "status": "error",
            "errors": [{"message": "boom", "error_type": "GENERIC"}],
            "result_url": "/api/v1/chart/data/qc-1", "id": "1700000000000-0"
        }))
        .map_err(err)?;
        let done = store
            .apply_event(event)
            .map_err(err)?
            .ok_or("event not applied")?;
        s.add("AsyncJobRecord", &done)?;
        let submission =
            Submission::read(json!({"task_ids": [TASK], "cursor": "c", "tab_id": "tab-1"}))
                .map_err(err)?;
        let tasks = store.record_tasks(submission).map_err(err)?;
        s.add("TaskRecord[]", &tasks)?;
        s.add("JobRecord[]", &store.jobs())?;
        // Cancel checks: allowed, and each local refusal.
        s.add("CancelCheck", &store.check_cancel(TASK))?;
        s.add("CancelCheck", &store.check_cancel("j-1"))?;
        s.add("CancelCheck", &store.check_cancel("unknown"))?;
        s.add("CancelCheck", &decide(None, None, "j-1"))?;
        // Cancel outcomes: local refusals, an abort, each server answer of both contracts.
        let mut random = SequenceRandom::new(vec![0.5]);
        for contract in [Contract::AsyncEvent, Contract::Task] {
            let flow = CancelFlow::new("j-1", RetryPolicy::default(), contract, 10_000);
            for check in [store.check_cancel("j-1"), decide(None, None, "j-1")] {
                if let Some(outcome) = flow.refusal(&check) {
                    s.add("CancelOutcome", &outcome)?;
                }
            }
            s.add("CancelOutcome", &flow.aborted())?;
            for (status, body) in [
                (200, r#"{"action": "aborted"}"#),
                (200, r#"{"action": "detached"}"#),
                (200, r#"{"action": "unsubscribed"}"#),
                (401, "{}"),
                (403, r#"{"message": "Not authorized to cancel this job"}"#),
                (404, "<html></html>"),
                (404, r#"{"message": "Not found"}"#),
                (409, "{}"),
                (500, "{}"),
            ] {
                let mut flow = CancelFlow::new("j-1", RetryPolicy::default(), contract, 10_000);
                flow.sending();
                let answer = Answer::Status {
                    status,
                    retry_after: None,
                    reply: Reply::from_text(body),
                };
                if let Step::Finish(outcome) = flow.after(&answer, 0, &mut random) {
                    s.add("CancelOutcome", &outcome)?;
                }
                s.add(
                    "CancelClassification",
                    &classify(status, contract, &Reply::from_text(body)),
                )?;
            }
        }
        let flow = CancelFlow::new(TASK, RetryPolicy::default(), Contract::Task, 10_000);
        for status in [
            None,
            Some(TaskStatus::InProgress),
            Some(TaskStatus::Success),
        ] {
            s.add("CancelOutcome", &flow.after_status(status))?;
        }
        s.add("StorageStatus", &store.storage_status())?;
        let private =
            FallbackStorage::private(MemoryStorage::new(), Some("no localStorage".into()));
        s.add("StorageStatus", &private.status())?;
        s.add("GuardStats", &store.stats())?;
        // The name tables: every name Rust writes, and no TypeScript name it never writes.
        let tables: [(&str, Vec<&str>); 5] = [
            (
                "CancelOutcomeKind",
                Outcome::ALL.iter().map(|o| o.as_str()).collect(),
            ),
            (
                "CancelRefusalReason",
                CancelRefusal::ALL.iter().map(|r| r.as_str()).collect(),
            ),
            (
                "RefusalReason",
                RefusalReason::ALL.iter().map(|r| r.as_str()).collect(),
            ),
            (
                "JobStatus",
                JobStatus::ALL.iter().map(|j| j.as_str()).collect(),
            ),
            (
                "TaskStatus",
                TaskStatus::ALL.iter().map(|t| t.as_str()).collect(),
            ),
        ];
        for (ty, all) in &tables {
            s.names(ty, all)?;
        }
        let codes = [
            GuardError::InvalidOptions(String::new()),
            GuardError::InvalidSession(String::new()),
            GuardError::InvalidJob(String::new()),
            GuardError::NoSession,
            GuardError::NotJobOwner {
                job_id: String::new(),
            },
            GuardError::Internal(String::new()),
            GuardError::Freed,
        ];
        // With the codes js/index.js throws before the module is loaded (`not_initialized`) or
        // when init() cannot load it (`wasm_not_found`, `wasm_blocked`):
        // tests/package/before-init.test.mjs and tests/consumers/ see each of them thrown.
        let loader = ["not_initialized", "wasm_not_found", "wasm_blocked"];
        s.names(
            "GuardErrorCode",
            &codes
                .iter()
                .map(|e| e.code())
                .chain(loader)
                .collect::<Vec<_>>(),
        )?;
        Ok(())
    }

    fn inputs(s: &mut Samples) -> Result<(), String> {
        let meta = |v: &Value| JobMetadata::read(v).map_err(err);
        s.input(
            "JobMetadata",
            json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "pending",
                   "errors": [], "result_url": null}),
            meta,
        )?;
        s.input(
            "JobMetadata",
            json!({"channel_id": "c", "job_id": "j", "user_id": 7, "status": "done"}),
            meta,
        )?;
        s.input(
            "JobMetadata",
            json!({"channel_id": "guest-c", "job_id": "j", "user_id": null, "status": "error",
                   "errors": [{"message": "m", "extra": [1]}], "result_url": "/r"}),
            meta,
        )?;
        let event = |v: &Value| JobMetadata::read_event(v).map_err(err);
        s.input(
            "AsyncEvent",
            json!({"id": "1-0", "channel_id": "c", "job_id": "j", "user_id": "1",
                   "status": "running", "errors": null, "result_url": null}),
            event,
        )?;
        s.input(
            "AsyncEvent",
            json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "a_later_status"}),
            event,
        )?;
        let login = |v: &Value| Session::from_login(v).map_err(err);
        s.input("SessionInput", json!({"userId": 1}), login)?;
        s.input(
            "SessionInput",
            json!({"userId": "1", "channelId": "c"}),
            login,
        )?;
        s.input(
            "SessionInput",
            json!({"userId": null, "channelId": null, "guestKey": "g-1"}),
            login,
        )?;
        let options = |v: &Value| GuardOptions::read(v).map_err(err);
        s.input("GuardOptions", json!({}), options)?;
        s.input(
            "GuardOptions",
            json!({"namespace": "ns", "ttlSeconds": 60, "maxJobs": 10, "storage": "memory",
                   "contract": "task", "tabId": "tab-1", "cancelUrl": "/x/{job_id}/cancel",
                   "headers": {"X-CSRFToken": "t"},
                   "retry": {"attempts": 2, "baseDelayMs": 100, "maxDelayMs": 1000},
                   "timeoutMs": 5000}),
            options,
        )?;
        let submission = |v: &Value| Submission::read(v).map_err(err);
        s.input(
            "TaskSubmission",
            json!({"task_ids": [TASK], "cursor": "2026-09-01T10:00:00", "tab_id": "t"}),
            submission,
        )?;
        s.input(
            "TaskSubmission",
            json!({"async_job": {"task_id": TASK, "cursor": "c", "tab_id": null}}),
            submission,
        )?;
        s.input(
            "TaskStatusMessage",
            json!({"task_id": TASK, "status": "in_progress"}),
            |v| StatusChange::read(v).map_err(err),
        )?;
        s.input(
            "TaskStatusChanges",
            json!({"statuses": {TASK: {"status": "success", "progress": 1.0}}, "cursor": null}),
            |v| StatusChange::read_all(v).map_err(err),
        )?;
        Ok(())
    }
}
