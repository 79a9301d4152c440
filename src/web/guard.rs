//! `JobGuard`, the class the package exports: each method reads its JS arguments, which cross
//! as JSON text ([`super::boundary`]), with the core's validating readers, hands the call to
//! the page's machine ([`super::exec::call`]), and converts the answer (or the error, once)
//! back. A promise it returns is settled by the machine.

use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::boundary::{
    from_js, function, guard_options, message_of, plain, signal_in, to_js, to_ts, Js,
};
use super::clock::DateClock;
use super::exec::{self, call, handles, GuardHandles};
use super::storage::{Backend, LocalBackend};
use super::types::{
    AsyncEvent, AsyncJobRecord, LogoutResult, PurgeResult, SessionInput, TaskStatusChanges,
    TaskStatusMessage, TaskSubmission,
};
use crate::core::cancel::CheckWire;
use crate::core::cancel_flow::{read_options, CancelOutcome};
use crate::core::chart::QuerySettings;
use crate::core::error::GuardError;
use crate::core::fallback::StorageStatus;
use crate::core::machine::{CancelStart, GuardId, Machine, SignalId};
use crate::core::model::JobMetadata;
use crate::core::options::StorageKind;
use crate::core::query::{QueryOutcome, QueryReason};
use crate::core::session::Session;
use crate::core::stats::StoreStats;
use crate::core::storage::MemoryStorage;
use crate::core::store::JobStore;
use crate::core::task::{StatusChange, Submission};
use crate::core::wait_input::{read_input, WaitSettings};
use crate::core::wait_outcome::{WaitOutcome, WaitRefusal};

/// Guards Superset async-job metadata for the signed-in session. See the README for the rules.
#[wasm_bindgen]
pub struct JobGuard {
    id: GuardId,
}

/// `free()` (or the page's end): the guard's queries are stopped, its waiters settle, and its
/// listeners hear nothing more (the machine tells a freed guard nothing); what it still sends
/// goes with its `fetch` and headers, until the machine says it is gone.
impl Drop for JobGuard {
    fn drop(&mut self) {
        // An event: handed over now, or after the call running, if it came from inside one.
        exec::dispatch(crate::core::machine::Event::Freed(self.id));
    }
}

type M = Machine<exec::Browser>;

impl JobGuard {
    /// Runs a call on this guard in the machine; an error is a `GuardError`.
    fn on<T>(
        &self,
        f: impl FnOnce(&mut M, GuardId) -> Result<T, GuardError>,
    ) -> Result<T, JsValue> {
        let id = self.id;
        Ok(call(|m| f(m, id))??)
    }
}

/// A signal taken from an options object, listened to.
fn listened(signal: Option<web_sys::AbortSignal>) -> Option<(SignalId, bool)> {
    signal.map(exec::listen)
}

#[wasm_bindgen]
impl JobGuard {
    /// Creates a guard. Throws a `GuardError` (`invalid_options`) for bad options; never for
    /// storage: without a usable localStorage it keeps its data in memory and says so in
    /// `storage`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "GuardOptions")] options: JsValue,
    ) -> Result<JobGuard, JsValue> {
        // `undefined` and `null` mean all defaults.
        let (options, fetch) = guard_options(&options)?;
        let memory = |reason| {
            JobStore::private(
                Backend::Memory(MemoryStorage::new()),
                reason,
                DateClock,
                &options,
            )
        };
        let store = match options.storage {
            StorageKind::Memory => memory(None),
            StorageKind::Local => {
                match LocalBackend::open(&[options.namespace.as_str(), ":v1:probe"].concat()) {
                    Ok(local) => JobStore::new(Backend::Local(local), DateClock, &options),
                    Err(e) => memory(Some(e.describe())),
                }
            }
        };
        let (namespace, headers) = (options.namespace.clone(), options.headers.clone());
        let server = exec::server_of(fetch.as_ref());
        let id = call(|m| m.add_guard(options, store, server))?;
        handles(|h| {
            h.guards.push(GuardHandles {
                id,
                fetch,
                headers,
                listeners: Vec::new(),
            })
        });
        super::page::join(&namespace);
        Ok(JobGuard { id })
    }

    /// Where the guard keeps its data: `{ kind: "local" | "memory" | "degraded", reason }`.
    #[wasm_bindgen(getter)]
    pub fn storage(&self) -> Result<Js<StorageStatus>, JsValue> {
        to_ts::<StorageStatus>(&self.on(|m, id| m.storage_status(id))?)
    }

    /// What the guard removed from storage or kept in memory, by reason.
    pub fn stats(&self) -> Result<Js<StoreStats>, JsValue> {
        to_ts::<StoreStats>(&self.on(|m, id| m.stats(id))?)
    }

    /// Calls `callback({ type })` when another tab signs out (`"logout"`), signs in as someone
    /// else (`"user_changed"`), changes this session's jobs (`"jobs_changed"`) or, following
    /// the server for this session, met a 401 (`"unauthorized"`). Returns a function that
    /// unsubscribes.
    #[wasm_bindgen(js_name = onChange, unchecked_return_type = "() => void")]
    pub fn on_change(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(change: GuardChange) => void")] callback: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(super::listeners::add(
            self.id,
            function(callback, "onChange")?,
            false,
        ))
    }

    /// Calls `listener({ type, source })` on every change to the session or its records: this
    /// tab's own (`source: "local"`: `login`, `logout`, a record written, an event or status
    /// applied, a cancel settled) and other tabs' (`"other_tab"`, as `onChange` hears them).
    /// `type` is `"logout"`, `"user_changed"`, `"jobs_changed"` or `"unauthorized"` (the server
    /// answered 401, in this tab or another). Returns a function that unsubscribes. A listener
    /// that throws, or unsubscribes during a call, breaks neither the guard nor the other
    /// listeners.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(change: GuardChange) => void")] listener: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(super::listeners::add(
            self.id,
            function(listener, "subscribe")?,
            true,
        ))
    }

    /// Keeps the session's records current from Superset's event stream (the guard's
    /// `contract`'s), with one poller for all the tabs of the browser (`navigator.locks`).
    /// Polls only while the session has a record that has not ended, and waits for the next
    /// `login` after a 401. Each call is a holder: polling goes on while any holder holds it
    /// (another `follow()`, a provider's, `waitFor`'s waiters), at the fastest cadence any
    /// holder asks for. Returns `stop`, which lets this holder go (a second call is harmless).
    /// Throws `invalid_options`.
    #[cfg(feature = "follow")]
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn follow(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "FollowOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let given = !(options.is_undefined() || options.is_null());
        let options = plain(&options, None, GuardError::InvalidOptions)?;
        let options = options.read(|d| crate::core::follow::FollowOptions::read(d))?;
        let options = given.then_some(options);
        let id = self.id;
        let holder = call(|m| m.follow(id, options))?;
        let stop = Closure::<dyn FnMut()>::new(move || {
            if let Some(holder) = holder {
                let _ = call(|m| m.unfollow(id, holder));
            }
        });
        Ok(stop.into_js_value())
    }

    /// Signs a session in. A different user than the stored session's purges every record
    /// first, and ends what the previous one started. Returns how many records were removed.
    pub fn login(&self, session: Js<SessionInput>) -> Result<Js<PurgeResult>, JsValue> {
        let session = plain(&session, None, GuardError::InvalidSession)?;
        let session = session.read(|d| Session::from_login(d))?;
        let purged = self.on(|m, id| m.login(id, session))?;
        to_ts::<PurgeResult>(&PurgeResult { purged })
    }

    /// Stops the session's queries on the server, in every tab (with `keepalive`; `stopped`
    /// settles when they are answered, at once when nothing was sent), then removes every key
    /// of the namespace and Superset's `last_async_event_id`, and ends every cancel in flight
    /// as `aborted`. A logout with nothing to remove (no session, no records) announces
    /// nothing.
    pub fn logout(&self) -> Result<Js<LogoutResult>, JsValue> {
        let (promise, stopped) = exec::promise();
        let purged = self.on(|m, id| m.logout(id, promise));
        let purged = match purged {
            Ok(purged) => purged,
            Err(e) => {
                exec::drop_promise(promise);
                return Err(e);
            }
        };
        let result = to_ts::<LogoutResult>(&PurgeResult { purged })?;
        let _ = js_sys::Reflect::set(&result, &JsValue::from_str("stopped"), &stopped);
        Ok(result)
    }

    /// The stored session (shared by the origin's tabs), or `null`.
    #[wasm_bindgen(getter, unchecked_return_type = "SessionInfo | null")]
    pub fn session(&self) -> Result<JsValue, JsValue> {
        let session = self.on(|m, id| m.session(id))?;
        to_js(&session.as_ref().map(Session::info))
    }

    /// Records the metadata Superset's create call returned. Throws `invalid_job`,
    /// `no_session` or `not_job_owner`.
    #[wasm_bindgen(js_name = recordJob)]
    pub fn record_job(&self, meta: Js<JobMetadata>) -> Result<Js<AsyncJobRecord>, JsValue> {
        let meta = from_js(&meta, GuardError::InvalidJob, |d| JobMetadata::read(d))?;
        to_ts::<AsyncJobRecord>(&self.on(|m, id| m.record_job(id, meta))?)
    }

    /// Applies an async event to the session's record of its job; `null` when the job is not
    /// the session's, or the event's status is one this guard does not know (skipped, counted
    /// in `stats()`). Throws `invalid_job` for a malformed event.
    #[wasm_bindgen(js_name = applyEvent, unchecked_return_type = "AsyncJobRecord | null")]
    pub fn apply_event(&self, event: Js<AsyncEvent>) -> Result<JsValue, JsValue> {
        let event = from_js(&event, GuardError::InvalidJob, |d| {
            JobMetadata::read_event(d)
        })?;
        to_js(&self.on(|m, id| m.apply_event(id, event))?)
    }

    /// Records the tasks a task-framework `202` body started (chart data's
    /// `{ task_ids, cursor, tab_id? }` or SQL Lab's `{ async_job: { task_id, cursor, tab_id? } }`),
    /// owned by the signed-in session. Throws `invalid_job` (nothing stored) or `no_session`.
    #[wasm_bindgen(js_name = recordTasks, unchecked_return_type = "TaskRecord[]")]
    pub fn record_tasks(&self, body: Js<TaskSubmission>) -> Result<JsValue, JsValue> {
        let submission = from_js(&body, GuardError::InvalidJob, |d| Submission::read(d))?;
        to_js(&self.on(|m, id| m.record_tasks(id, submission))?)
    }

    /// Applies the websocket's `{ task_id, status }` to the session's record of the task; the
    /// record if it changed, else `null` (a status this guard does not know is skipped and
    /// counted in `stats()`). Throws `invalid_job` for a malformed message.
    #[wasm_bindgen(js_name = applyTaskStatus, unchecked_return_type = "TaskRecord | null")]
    pub fn apply_task_status(&self, message: Js<TaskStatusMessage>) -> Result<JsValue, JsValue> {
        let change = from_js(&message, GuardError::InvalidJob, |d| StatusChange::read(d))?;
        to_js(
            &self
                .on(|m, id| m.apply_task_statuses(id, vec![change]))?
                .pop(),
        )
    }

    /// Applies a `status_changes` answer (`{ statuses, cursor }`) to the session's task
    /// records; returns the records that changed. An entry whose status this guard does not
    /// know is skipped (counted in `stats()`); a malformed answer throws `invalid_job` (nothing
    /// applied).
    #[wasm_bindgen(js_name = applyStatusChanges, unchecked_return_type = "TaskRecord[]")]
    pub fn apply_status_changes(&self, body: Js<TaskStatusChanges>) -> Result<JsValue, JsValue> {
        let changes = from_js(&body, GuardError::InvalidJob, |d| StatusChange::read_all(d))?;
        to_js(&self.on(|m, id| m.apply_task_statuses(id, changes))?)
    }

    /// The session's record of a job, or `null`.
    #[wasm_bindgen(unchecked_return_type = "JobRecord | null")]
    pub fn job(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        // A non-string id cannot name a stored job.
        let Some(job_id) = job_id.as_string() else {
            return Ok(JsValue::NULL);
        };
        to_js(&self.on(|m, id| m.job(id, &job_id))?)
    }

    /// The session's records, oldest first.
    #[wasm_bindgen(unchecked_return_type = "JobRecord[]")]
    pub fn jobs(&self) -> Result<JsValue, JsValue> {
        to_js(&self.on(|m, id| m.jobs(id))?)
    }

    /// May this session cancel the job? Decided locally; nothing is sent.
    #[wasm_bindgen(js_name = checkCancel)]
    pub fn check_cancel(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<Js<CheckWire<'static>>, JsValue> {
        // A non-string id cannot name a stored job: it is an unknown job.
        let job_id = job_id.as_string().unwrap_or_default();
        to_ts::<CheckWire>(&self.on(|m, id| m.check_cancel(id, &job_id))?)
    }

    /// Waits for jobs of the session: a `202` body (recorded first, as `recordJob` or
    /// `recordTasks` would), a job id or an array of them. Registers now, and settles (never
    /// rejects) with a `WaitOutcome`: `done` when every job ended well, `failed` at the first
    /// that did not (`jobId`, `status`, `errors`), `refused` for a job this session does not own
    /// or know (nothing is sent) and at once when the wait can no longer hear anything (`reason`:
    /// `no_session`, `user_changed`, `unauthenticated`, `expired`, `removed`), `stale` after
    /// `staleTimeoutMs` (default 600000) without progress, `aborted` by `signal`: then each of
    /// its jobs that no other waiter of the browser awaits is cancelled as `cancel()` would.
    /// Fed by `follow()`, which the waiters hold while anything waits, and the app's
    /// `applyEvent` / `applyTaskStatus` / `applyStatusChanges`. With `cancelOnClose` (the
    /// default), the page's end cancels what no other waiter of the browser awaits. Bad options
    /// settle `refused` (`invalid_input`).
    #[wasm_bindgen(js_name = waitFor, unchecked_return_type = "Promise<WaitOutcome>")]
    pub fn wait_for(
        &self,
        #[wasm_bindgen(unchecked_param_type = "WaitInput")] input: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "WaitOptions")] options: JsValue,
    ) -> js_sys::Promise {
        let refused = |message: String| {
            exec::settled(&WaitOutcome::refused(
                &[],
                None,
                WaitRefusal::InvalidInput,
                message,
            ))
        };
        let read = plain(&options, Some("signal"), GuardError::InvalidOptions).and_then(|o| {
            let settings = o.read(|d| WaitSettings::read(d))?;
            Ok((o.taken, settings))
        });
        let (signal, settings) = match read {
            Ok(read) => read,
            Err(e) => return refused(message_of(&e)),
        };
        let signal = match signal_in(signal) {
            Ok(signal) => signal,
            Err(message) => return refused(message),
        };
        let input = match plain(&input, None, GuardError::InvalidJob).and_then(|c| c.value()) {
            Ok(value) => match read_input(&value) {
                Ok(input) => input,
                Err((reason, message)) => {
                    return exec::settled(&WaitOutcome::refused(&[], None, reason, message))
                }
            },
            Err(e) => return refused(message_of(&e)),
        };
        let (promise, js) = exec::promise();
        let signal = listened(signal);
        let id = self.id;
        if call(|m| m.wait_for(id, input, settings, signal, promise)).is_err() {
            exec::abandon(promise, signal);
            return refused(
                "waitFor was called from inside one of the guard's own calls".to_owned(),
            );
        }
        js
    }

    /// Sends a chart's query (`body`: what the app would POST to `/api/v1/chart/data`; `url`
    /// overrides the path) with a `client_id` the guard makes where the server takes one (and
    /// on the task contract the tab id), and follows whatever Superset answers to its result:
    /// a `200`, a `202` job read at its `result_url`, or `202` tasks asked again for the warm
    /// cache. Stopped on the server by `signal`, a logout in any tab, the page's end and the
    /// guard's `free()`, as far as the server can stop it; a user switch drops it. Never
    /// rejects: settles with a `QueryOutcome`.
    #[wasm_bindgen(unchecked_return_type = "Promise<QueryOutcome>")]
    pub fn query(
        &self,
        #[wasm_bindgen(unchecked_param_type = "QueryBody")] body: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "QueryOptions")] options: JsValue,
    ) -> js_sys::Promise {
        let refused = |message: String| {
            exec::settled(&QueryOutcome::refused(
                None,
                QueryReason::InvalidInput,
                message,
            ))
        };
        let read = plain(&options, Some("signal"), GuardError::InvalidOptions).and_then(|o| {
            let settings = o.read(|d| QuerySettings::read(d))?;
            Ok((o.taken, settings))
        });
        let (signal, settings) = match read {
            Ok(read) => read,
            Err(e) => return refused(message_of(&e)),
        };
        let signal = match signal_in(signal) {
            Ok(signal) => signal,
            Err(_) => {
                return refused("Invalid options: `signal` must be an AbortSignal".to_owned())
            }
        };
        let body = match plain(&body, None, GuardError::InvalidJob).and_then(|b| b.value()) {
            Ok(Value::Object(body)) => body,
            Ok(_) => {
                return refused("query needs the chart-data request's body: an object".to_owned())
            }
            Err(e) => return refused(message_of(&e)),
        };
        let (promise, js) = exec::promise();
        let signal = listened(signal);
        let id = self.id;
        if call(|m| m.query(id, body, settings, signal, promise)).is_err() {
            exec::abandon(promise, signal);
            return refused("query was called from inside one of the guard's own calls".to_owned());
        }
        js
    }

    /// Cancels a job the session owns: checks locally first (a refusal sends nothing), then
    /// POSTs to the cancel endpoint, retrying transient failures. Never rejects: every path
    /// resolves to a `CancelOutcome`. Options it cannot take (an unknown key, a `signal` that
    /// is not an `AbortSignal`) are `refused` with `invalid_input`, nothing sent.
    #[wasm_bindgen(unchecked_return_type = "Promise<CancelOutcome>")]
    pub fn cancel(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CancelOptions")] options: JsValue,
    ) -> js_sys::Promise {
        let job_id = job_id.as_string().unwrap_or_default();
        let read = plain(&options, Some("signal"), GuardError::InvalidOptions)
            .map_err(|e| message_of(&e))
            .and_then(|o| {
                let value = o.value().map_err(|e| message_of(&e))?;
                read_options(&value).map_err(|e| e.message())?;
                signal_in(o.taken)
            });
        let signal = match read {
            Ok(signal) => signal,
            Err(message) => return exec::settled(&CancelOutcome::invalid_input(job_id, message)),
        };
        let (promise, js) = exec::promise();
        let signal = listened(signal);
        let id = self.id;
        match call(|m| m.cancel(id, &job_id, signal, promise)) {
            Ok(CancelStart::Own) => js,
            Ok(CancelStart::Joined(running)) => {
                exec::drop_promise(promise);
                exec::promise_of(running).unwrap_or_else(|| {
                    let message = "cancel could not join the running cancel of this job".to_owned();
                    exec::settled(&CancelOutcome::invalid_input(job_id, message))
                })
            }
            Err(_) => {
                exec::abandon(promise, signal);
                let message =
                    "cancel was called from inside one of the guard's own calls".to_owned();
                exec::settled(&CancelOutcome::invalid_input(job_id, message))
            }
        }
    }
}
