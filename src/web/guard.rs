//! `JobGuard`, the class the package exports. Each method reads its JS arguments, which cross
//! as JSON text ([`super::boundary`]), with the core's validating readers, calls the
//! [`Store`](super::storage::Store), and converts the answer (or the error, once) back.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::boundary::{from_js, function, guard_options, plain, to_js, to_ts, Js};
use super::cancel;
use super::clock::DateClock;
use super::dom;
use super::listeners::Listeners;
use super::state::Inner;
use super::storage::{Backend, LocalBackend};
use super::tabs::{TabHost, TabSync};
use super::types::{
    AsyncEvent, AsyncJobRecord, LogoutResult, PurgeResult, SessionInput, TaskStatusChanges,
    TaskStatusMessage, TaskSubmission,
};
use super::waiting;
use super::{query, query_stop_all};
use crate::core::cancel::CheckWire;
use crate::core::error::GuardError;
use crate::core::fallback::StorageStatus;
use crate::core::model::JobMetadata;
use crate::core::options::StorageKind;
use crate::core::query::QueryReason;
use crate::core::session::Session;
use crate::core::stats::StoreStats;
use crate::core::storage::MemoryStorage;
use crate::core::store::JobStore;
use crate::core::tabs::{Change, Source};
use crate::core::task::{StatusChange, Submission};

/// Guards Superset async-job metadata for the signed-in session. See the README for the rules.
#[wasm_bindgen]
pub struct JobGuard {
    inner: Rc<RefCell<Inner>>,
    listeners: Rc<RefCell<Listeners>>,
}

/// `free()` (or the page's end): the listeners for other tabs go at once, even while a
/// `cancel()` still holds the state to settle its record.
impl Drop for JobGuard {
    fn drop(&mut self) {
        waiting::end(&self.inner);
        #[cfg(feature = "follow")]
        super::follow::unwatch_page(&self.inner);
        #[cfg(feature = "follow")]
        let follow = self
            .inner
            .try_borrow_mut()
            .ok()
            .and_then(|mut i| i.following.running.take());
        if let Ok(mut inner) = self.inner.try_borrow_mut() {
            inner.tabs = None;
        }
        // Outside the borrow: abort listeners run synchronously.
        #[cfg(feature = "follow")]
        if let Some(follow) = follow {
            dom::abort(&follow);
        }
    }
}

impl JobGuard {
    /// Runs `f` on the state. A re-entrant call (JS calling the guard from inside a guard
    /// call) is an error, never a panic.
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> Result<T, JsValue>) -> Result<T, JsValue> {
        let mut inner = self.inner.try_borrow_mut().map_err(|_| {
            JsValue::from(GuardError::Internal(
                "the guard was called from inside one of its own calls".to_owned(),
            ))
        })?;
        f(&mut inner)
    }
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
        let namespace = options.namespace.clone();
        let inner = Rc::new(RefCell::new(Inner {
            store,
            options,
            fetch,
            logout: None,
            tabs: None,
            cancels: Vec::new(),
            waiting: Default::default(),
            queries: Default::default(),
            #[cfg(feature = "follow")]
            following: Default::default(),
            #[cfg(feature = "follow")]
            follow_signed_out: false,
            #[cfg(feature = "follow")]
            follow_forbidden: false,
            #[cfg(feature = "follow")]
            stream_absent: false,
            #[cfg(feature = "follow")]
            follow_wake: None,
        }));
        let listeners = Rc::new(RefCell::new(Listeners::default()));
        let host: Rc<RefCell<dyn TabHost>> = inner.clone();
        let tabs = TabSync::start(&namespace, Rc::downgrade(&host), Rc::clone(&listeners));
        if let Ok(mut i) = inner.try_borrow_mut() {
            i.tabs = Some(tabs);
        }
        if let Ok(mut l) = listeners.try_borrow_mut() {
            l.after = Some(waiting::hook(&inner, &listeners));
        }
        let page_id = super::page::join(&inner);
        if let Ok(mut i) = inner.try_borrow_mut() {
            i.waiting.entry.page_id = page_id;
        }
        Ok(JobGuard { inner, listeners })
    }

    /// Where the guard keeps its data: `{ kind: "local" | "memory" | "degraded", reason }`.
    #[wasm_bindgen(getter)]
    pub fn storage(&self) -> Result<Js<StorageStatus>, JsValue> {
        self.with(|g| to_ts::<StorageStatus>(&g.store.storage_status()))
    }

    /// What the guard removed from storage or kept in memory, by reason.
    pub fn stats(&self) -> Result<Js<StoreStats>, JsValue> {
        self.with(|g| to_ts::<StoreStats>(&g.store.stats()))
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
        Ok(Listeners::add(
            &self.listeners,
            function(callback, "onChange")?,
            false,
        ))
    }

    /// Calls `listener({ type, source })` on every change to the session or its records: this
    /// tab's own (`source: "local"`: `login`, `logout`, a record written, an event or status
    /// applied, a cancel settled) and other tabs' (`"other_tab"`, as `onChange` hears them).
    /// `type` is `"logout"`, `"user_changed"`, `"jobs_changed"` or `"unauthorized"` (a poll of
    /// `follow()`, in this tab or another, met a 401). Returns a function that
    /// unsubscribes. A listener that throws, or unsubscribes during a call, breaks neither the
    /// guard nor the other listeners.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(change: GuardChange) => void")] listener: JsValue,
    ) -> Result<JsValue, JsValue> {
        Ok(Listeners::add(
            &self.listeners,
            function(listener, "subscribe")?,
            true,
        ))
    }

    /// Tells `subscribe`'s listeners about a change this tab made.
    fn changed(&self, change: Change) {
        Listeners::notify(&self.listeners, change, Source::Local);
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
        Ok(super::follow::start(&self.inner, &self.listeners, options)?.into())
    }

    /// Signs a session in. A different user than the stored session's purges every record
    /// first. Returns how many records were removed.
    pub fn login(&self, session: Js<SessionInput>) -> Result<Js<PurgeResult>, JsValue> {
        let session = plain(&session, None, GuardError::InvalidSession)?;
        let session = session.read(|d| Session::from_login(d))?;
        let (signed, switched, in_flight, stops) = self.with(|g| {
            let who = session.clone();
            let signed = g.store.sign_in(session)?;
            // A new session lists what it waits for again.
            g.waiting.entry.taken = None;
            let switched = !signed
                .previous
                .as_ref()
                .is_some_and(|s| s.same_identity(&who));
            // Another identity ends the cancels and queries the previous one started (nothing
            // is sent for them as the new user). With no query running (a page's first login)
            // there is nothing to stop, and the stop code is not run (nor compiled: issue #43).
            let stops = (switched && !g.queries.running.is_empty())
                .then(|| query_stop_all::stop_all(g, QueryReason::UserChanged, &[]));
            let in_flight = if switched {
                g.announce(Change::UserChanged);
                g.end_cancels()
            } else {
                // The same session again: a follow a 401 stopped in another tab resumes there
                // (a new identity reaches the other tabs as `user_changed`, which does so too).
                #[cfg(feature = "follow")]
                if let Some(tabs) = g.tabs.as_mut() {
                    tabs.signed_in(&who);
                }
                None
            };
            Ok((signed, switched, in_flight, stops))
        })?;
        if let Some(controller) = in_flight {
            dom::abort(&controller);
        }
        if let Some(stops) = stops {
            let _ = query_stop_all::send_stops(stops);
        }
        // A follow that a 401 stopped resumes.
        #[cfg(feature = "follow")]
        super::follow::resume(&self.inner);
        if switched {
            self.changed(Change::UserChanged);
        } else if signed.changed {
            // The same user with a new channel (and maybe fewer records).
            self.changed(Change::JobsChanged);
        }
        to_ts::<PurgeResult>(&PurgeResult {
            purged: signed.purged,
        })
    }

    /// Stops the session's queries on the server, in every tab (with `keepalive`; `stopped`
    /// settles when they are answered, so the app can await it before its own sign-out), then
    /// removes every key of the namespace and Superset's `last_async_event_id`, and ends every
    /// cancel in flight as `aborted`. A logout with nothing to remove (no session, no records)
    /// announces nothing.
    pub fn logout(&self) -> Result<Js<LogoutResult>, JsValue> {
        let others = super::page::others(&self.inner).unwrap_or_default();
        // The page's other guards of this session (a provider's and the app's own, say): their
        // queries are stopped here too, before the session ends.
        let neighbours = self.with(|g| {
            let namespace = g.options.namespace.clone();
            let mut stops = Vec::new();
            for other in super::page::guards(Some(&self.inner)) {
                if let Ok(mut o) = other.try_borrow_mut() {
                    if o.options.namespace == namespace {
                        stops.push(query_stop_all::stop_all(&mut o, QueryReason::Logout, &[]));
                    }
                }
            }
            Ok(stops)
        })?;
        let (purged, removed, in_flight, mut stops) = self.with(|g| {
            let stops = query_stop_all::stop_all(g, QueryReason::Logout, &others);
            let in_flight = g.end_cancels();
            let (purged, removed) = g.store.sign_out();
            if removed {
                g.announce(Change::Logout);
            }
            Ok((purged, removed, in_flight, stops))
        })?;
        // Sent before this call returns; aborts outside the borrow (abort listeners run
        // synchronously).
        for theirs in neighbours {
            stops.merge(theirs);
        }
        let stopped = query_stop_all::send_stops(stops);
        if let Some(controller) = in_flight {
            dom::abort(&controller);
        }
        // A 401's stop ends with the session: the next login, in any tab, follows again.
        #[cfg(feature = "follow")]
        super::follow::resume(&self.inner);
        if removed {
            self.changed(Change::Logout);
        }
        let result = to_ts::<LogoutResult>(&PurgeResult { purged })?;
        let _ = js_sys::Reflect::set(&result, &JsValue::from_str("stopped"), &stopped);
        Ok(result)
    }

    /// The stored session (shared by the origin's tabs), or `null`.
    #[wasm_bindgen(getter, unchecked_return_type = "SessionInfo | null")]
    pub fn session(&self) -> Result<JsValue, JsValue> {
        self.with(|g| to_js(&g.store.session().as_ref().map(Session::info)))
    }

    /// Records the metadata Superset's create call returned. Throws `invalid_job`,
    /// `no_session` or `not_job_owner`.
    #[wasm_bindgen(js_name = recordJob)]
    pub fn record_job(&self, meta: Js<JobMetadata>) -> Result<Js<AsyncJobRecord>, JsValue> {
        let meta = from_js(&meta, GuardError::InvalidJob, |d| JobMetadata::read(d))?;
        let record = self.with(|g| to_ts::<AsyncJobRecord>(&g.store.record_job(meta)?))?;
        self.changed(Change::JobsChanged);
        Ok(record)
    }

    /// Applies an async event to the session's record of its job; `null` when the job is not
    /// the session's, or the event's status is one this guard does not know (skipped, counted
    /// in `stats()`). Throws `invalid_job` for a malformed event.
    #[wasm_bindgen(js_name = applyEvent, unchecked_return_type = "AsyncJobRecord | null")]
    pub fn apply_event(&self, event: Js<AsyncEvent>) -> Result<JsValue, JsValue> {
        let event = from_js(&event, GuardError::InvalidJob, |d| {
            JobMetadata::read_event(d)
        })?;
        let record = self.with(|g| match event {
            Some(event) => Ok(g.store.apply_event(event)?),
            None => {
                g.store.skipped_unknown_status();
                Ok(None)
            }
        })?;
        if record.is_some() {
            self.changed(Change::JobsChanged);
        }
        to_js(&record)
    }

    /// Records the tasks a task-framework `202` body started (chart data's
    /// `{ task_ids, cursor, tab_id? }` or SQL Lab's `{ async_job: { task_id, cursor, tab_id? } }`),
    /// owned by the signed-in session. Throws `invalid_job` (nothing stored) or `no_session`.
    #[wasm_bindgen(js_name = recordTasks, unchecked_return_type = "TaskRecord[]")]
    pub fn record_tasks(&self, body: Js<TaskSubmission>) -> Result<JsValue, JsValue> {
        let submission = from_js(&body, GuardError::InvalidJob, |d| Submission::read(d))?;
        let records = self.with(|g| to_js(&g.store.record_tasks(submission)?))?;
        self.changed(Change::JobsChanged);
        Ok(records)
    }

    /// Applies the websocket's `{ task_id, status }` to the session's record of the task; the
    /// record if it changed, else `null` (a status this guard does not know is skipped and
    /// counted in `stats()`). Throws `invalid_job` for a malformed message.
    #[wasm_bindgen(js_name = applyTaskStatus, unchecked_return_type = "TaskRecord | null")]
    pub fn apply_task_status(&self, message: Js<TaskStatusMessage>) -> Result<JsValue, JsValue> {
        let change = from_js(&message, GuardError::InvalidJob, |d| StatusChange::read(d))?;
        let record = self.with(|g| Ok(g.store.apply_task_statuses(vec![change]).pop()))?;
        if record.is_some() {
            self.changed(Change::JobsChanged);
        }
        to_js(&record)
    }

    /// Applies a `status_changes` answer (`{ statuses, cursor }`) to the session's task
    /// records; returns the records that changed. An entry whose status this guard does not
    /// know is skipped (counted in `stats()`); a malformed answer throws `invalid_job` (nothing
    /// applied).
    #[wasm_bindgen(js_name = applyStatusChanges, unchecked_return_type = "TaskRecord[]")]
    pub fn apply_status_changes(&self, body: Js<TaskStatusChanges>) -> Result<JsValue, JsValue> {
        let changes = from_js(&body, GuardError::InvalidJob, |d| StatusChange::read_all(d))?;
        let records = self.with(|g| Ok(g.store.apply_task_statuses(changes)))?;
        if !records.is_empty() {
            self.changed(Change::JobsChanged);
        }
        to_js(&records)
    }

    /// The session's record of a job, or `null`.
    #[wasm_bindgen(unchecked_return_type = "JobRecord | null")]
    pub fn job(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        // A non-string id cannot name a stored job.
        self.with(|g| to_js(&job_id.as_string().and_then(|id| g.store.job(&id))))
    }

    /// The session's records, oldest first.
    #[wasm_bindgen(unchecked_return_type = "JobRecord[]")]
    pub fn jobs(&self) -> Result<JsValue, JsValue> {
        self.with(|g| to_js(&g.store.jobs()))
    }

    /// May this session cancel the job? Decided locally; nothing is sent.
    #[wasm_bindgen(js_name = checkCancel)]
    pub fn check_cancel(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<Js<CheckWire<'static>>, JsValue> {
        // A non-string id cannot name a stored job: it is an unknown job.
        self.with(|g| {
            to_ts::<CheckWire>(
                &g.store
                    .check_cancel(&job_id.as_string().unwrap_or_default()),
            )
        })
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
        waiting::start(&self.inner, &self.listeners, &input, &options)
    }

    /// Sends a chart's query (`body`: what the app would POST to `/api/v1/chart/data`; `url`
    /// overrides the path) with a `client_id` the guard makes (and on the task contract the
    /// tab id), and follows whatever Superset answers to its result: a `200`, a `202` job read
    /// at its `result_url`, or `202` tasks asked again for the warm cache. Stopped on the
    /// server by `signal`, a logout in any tab and the page's end; a user switch drops it.
    /// Never rejects: settles with a `QueryOutcome`.
    #[wasm_bindgen(unchecked_return_type = "Promise<QueryOutcome>")]
    pub fn query(
        &self,
        #[wasm_bindgen(unchecked_param_type = "QueryBody")] body: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "QueryOptions")] options: JsValue,
    ) -> js_sys::Promise {
        query::start(&self.inner, &self.listeners, &body, &options)
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
        match cancel::signal_of(&options) {
            Ok(signal) => cancel::start(&self.inner, &self.listeners, job_id, signal),
            Err(message) => cancel::refused(job_id, message),
        }
    }
}
