//! `JobGuard`, the class the package exports. Each method converts its JS arguments into core
//! values, calls the [`JobStore`], and converts the answer (or the error, once) back.
//!
//! The state lives behind `Rc<RefCell<_>>` so that `cancel` can run after the call that
//! started it returns; every borrow is short and none is held while JS code runs.

use crate::core::text::cat;
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::string::String;

use ::core::cell::RefCell;
use alloc::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::{AbortController, AbortSignal};

use super::cancel;
use super::clock::DateClock;
use super::error::to_js_error;
use super::memo::Memo;
use super::storage::LocalStorage;
use super::tabs::{Change, Listeners, TabSync};
use crate::core::cancel::CancelCheck;
use crate::core::error::GuardError;
use crate::core::fallback::StorageMode;
use crate::core::json::{self, ObjectWriter, ToJson, Value};
use crate::core::model::{JobMetadata, JobRecord};
use crate::core::options::{GuardOptions, StorageKind};
use crate::core::response::classify;
use crate::core::session::Session;
use crate::core::storage::{KeyValue, MemoryStorage};
use crate::core::store::{session_key, JobStore};

type Store = JobStore<Box<dyn KeyValue>, DateClock>;

/// The guard's state, shared with the cancels it has running.
pub struct Inner {
    pub store: Store,
    pub options: GuardOptions,
    /// The app's `fetch` option; `None` means `globalThis.fetch` at call time.
    pub fetch: Option<js_sys::Function>,
    /// Aborted by `logout()`, which ends every cancel in flight; then dropped. Made by the
    /// first cancel that needs it (`logout_signal`), not by the constructor.
    pub logout: Option<AbortController>,
    /// The other tabs: their changes come in, this tab's go out.
    pub tabs: Option<TabSync>,
    /// Read answers for unchanged stored text; `None` without localStorage.
    pub memo: Option<Memo>,
}

impl Inner {
    /// A read of one job: the memo's answer when it has one, else the core's (`answer`, given
    /// the id if it is a string), remembered when the core changed nothing (it counts every
    /// removal, so equal stats mean nothing was removed).
    fn read<T: ToJson>(
        &mut self,
        job_id: &JsValue,
        recall: fn(&Memo, &JsValue) -> JsValue,
        remember: fn(&Memo, &str, bool) -> JsValue,
        answer: impl FnOnce(&mut Store, Option<String>) -> T,
    ) -> Result<JsValue, JsValue> {
        // Remembered only after a miss of this same call (the miss notes what it read).
        let consulted = match self.memo() {
            Some(memo) => {
                let hit = recall(memo, job_id);
                if !hit.is_undefined() {
                    return Ok(hit);
                }
                true
            }
            None => false,
        };
        let before = self.store.stats();
        let value = answer(&mut self.store, job_id.as_string());
        let unchanged = self.store.stats() == before;
        match self.memo().filter(|_| consulted) {
            Some(memo) => Ok(remember(memo, &value.to_json(), unchanged)),
            None => to_js(&value),
        }
    }

    /// The record a write left, for the app, remembered with its check when the memo is on.
    fn wrote(&self, record: &JobRecord, check: &CancelCheck) -> Result<JsValue, JsValue> {
        match self.memo() {
            Some(memo) => Ok(memo.settle_write(&record.to_json(), &check.to_json())),
            None => to_js(record),
        }
    }

    /// The signal `logout()` aborts, for a cancel about to run.
    pub fn logout_signal(&mut self) -> Option<AbortSignal> {
        if self.logout.is_none() {
            self.logout = AbortController::new().ok();
        }
        self.logout.as_ref().map(AbortController::signal)
    }

    /// The memo, while the data lives in localStorage alone (no memory layer).
    fn memo(&self) -> Option<&Memo> {
        self.memo
            .as_ref()
            .filter(|_| self.store.storage_status().kind == StorageMode::Local)
    }

    /// Tells the other tabs that this tab signed out or switched user. (Job changes need no
    /// message: they are in localStorage, whose `storage` event the other tabs get.)
    pub fn announce(&mut self, change: Change) {
        let shared = self.store.storage_status().kind != StorageMode::Memory;
        let user = self.store.session().and_then(|s| s.user_id);
        if let Some(tabs) = &mut self.tabs {
            tabs.announce(change, user.as_deref(), shared);
        }
    }
}

/// Guards Superset async-job metadata for the signed-in session. See the README for the rules.
#[wasm_bindgen]
pub struct JobGuard {
    inner: Rc<RefCell<Inner>>,
    listeners: Rc<RefCell<Listeners>>,
}

/// `{ purged }`: what `login` and `logout` return.
fn purge_result(purged: usize) -> impl ToJson {
    struct PurgeResult(usize);
    impl ToJson for PurgeResult {
        fn write_json(&self, out: &mut String) {
            ObjectWriter::new(out).field("purged", &self.0).end();
        }
    }
    PurgeResult(purged)
}

/// `{ userId, channelId }`: the session as `guard.session` shows it.
struct SessionInfo(Session);

impl ToJson for SessionInfo {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("userId", &self.0.user_id)
            .field("channelId", &self.0.channel_id)
            .end();
    }
}

/// A JS value as JSON, for the core to validate: through the engine's own `JSON.stringify`
/// (so `undefined` reads as `null`, and functions and symbols are left out).
fn json_from_js(value: &JsValue, err: fn(String) -> GuardError) -> Result<Value, JsValue> {
    if value.is_undefined() {
        return Ok(Value::Null);
    }
    js_sys::JSON::stringify(value)
        .ok()
        .and_then(|t| t.as_string())
        .and_then(|text| json::parse(&text))
        .ok_or_else(|| {
            // JSON.stringify throws on cycles and BigInt; a lone surrogate in a string is not
            // text Rust can hold.
            to_js_error(&err(
                "cannot read the value as JSON (a cycle, a BigInt, or a broken string?)".to_owned(),
            ))
        })
}

/// A Rust value as a plain JS value (objects for structs, `null` for `None`), through JSON
/// and the engine's own `JSON.parse`.
fn to_js<T: ToJson + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    let text = value.to_json();
    js_sys::JSON::parse(&text).map_err(|_| to_js_error(&GuardError::Internal(text)))
}

/// Job metadata or an event from JS, validated.
fn metadata_from_js(value: &JsValue) -> Result<JobMetadata, JsValue> {
    let value = json_from_js(value, GuardError::InvalidJob)?;
    guarded(JobMetadata::from_json(&value))
}

fn guarded<T>(result: Result<T, GuardError>) -> Result<T, JsValue> {
    result.map_err(|e| to_js_error(&e))
}

/// Splits the constructor's options into the `fetch` function and the JSON-able rest.
fn read_options(options: &JsValue) -> Result<(GuardOptions, Option<js_sys::Function>), JsValue> {
    let invalid = |m: &str| to_js_error(&GuardError::InvalidOptions(m.to_owned()));
    if !options.is_object() {
        let value = json_from_js(options, GuardError::InvalidOptions)?;
        return Ok((guarded(GuardOptions::from_json(&value))?, None));
    }
    let fetch = js_sys::Reflect::get(options, &JsValue::from_str("fetch"))
        .map_err(|_| invalid("cannot read `fetch`"))?;
    let fetch = if fetch.is_undefined() || fetch.is_null() {
        let value = json_from_js(options, GuardError::InvalidOptions)?;
        return Ok((guarded(GuardOptions::from_json(&value))?, None));
    } else {
        Some(
            fetch
                .dyn_into::<js_sys::Function>()
                .map_err(|_| invalid("`fetch` must be a function like window.fetch"))?,
        )
    };
    // A shallow copy without the function, for the JSON reading. (`fetch: null` is left in:
    // it reads as absent.)
    let rest = js_sys::Object::assign(&js_sys::Object::new(), options.unchecked_ref());
    let _ = js_sys::Reflect::delete_property(&rest, &JsValue::from_str("fetch"));
    let value = json_from_js(&rest, GuardError::InvalidOptions)?;
    Ok((guarded(GuardOptions::from_json(&value))?, fetch))
}

impl JobGuard {
    /// Runs `f` on the state. A re-entrant call (JS calling the guard from inside a guard
    /// call) is an error, never a panic.
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> Result<T, JsValue>) -> Result<T, JsValue> {
        let mut inner = self.inner.try_borrow_mut().map_err(|_| {
            to_js_error(&GuardError::Internal(
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
        // `undefined` and `null` read as JSON null: all defaults.
        let (options, fetch) = read_options(&options)?;
        let memory = || -> Box<dyn KeyValue> { Box::new(MemoryStorage::new()) };
        let mut local_storage = None;
        let store = match options.storage {
            StorageKind::Memory => JobStore::private(memory(), None, DateClock, &options),
            StorageKind::Local => {
                let probe = cat(&[options.namespace.as_str(), ":v1:probe"]);
                match LocalStorage::open(&probe) {
                    Ok(mut local) => {
                        local.pin_key(&session_key(&options.namespace));
                        local_storage = Some(local.storage().clone());
                        JobStore::new(Box::new(local) as Box<dyn KeyValue>, DateClock, &options)
                    }
                    Err(e) => JobStore::private(memory(), Some(e.describe()), DateClock, &options),
                }
            }
        };
        let memo = local_storage.map(|storage| {
            // Room for every record a guard keeps, twice over, plus ids asked about in vain.
            let limit = u32::try_from(options.max_jobs * 2 + 256).unwrap_or(u32::MAX);
            Memo::new(
                &storage,
                store.session_key(),
                store.job_prefix(),
                options.ttl_ms as f64,
                limit,
            )
        });
        let namespace = options.namespace.clone();
        let inner = Rc::new(RefCell::new(Inner {
            store,
            options,
            fetch,
            logout: None,
            tabs: None,
            memo,
        }));
        let listeners = Rc::new(RefCell::new(Listeners::default()));
        let tabs = TabSync::start(&namespace, Rc::downgrade(&inner), Rc::clone(&listeners));
        if let Ok(mut i) = inner.try_borrow_mut() {
            i.tabs = Some(tabs);
        }
        Ok(JobGuard { inner, listeners })
    }

    /// Where the guard keeps its data: `{ kind: "local" | "memory" | "degraded", reason }`.
    #[wasm_bindgen(getter, unchecked_return_type = "StorageStatus")]
    pub fn storage(&self) -> Result<JsValue, JsValue> {
        let status = self.with(|g| Ok(g.store.storage_status()))?;
        to_js(&status)
    }

    /// What the guard removed from storage or kept in memory, by reason.
    #[wasm_bindgen(unchecked_return_type = "GuardStats")]
    pub fn stats(&self) -> Result<JsValue, JsValue> {
        let stats = self.with(|g| Ok(g.store.stats()))?;
        to_js(&stats)
    }

    /// Calls `callback({ type })` when another tab signs out (`"logout"`), signs in as someone
    /// else (`"user_changed"`) or changes this session's jobs (`"jobs_changed"`). Returns a
    /// function that unsubscribes.
    #[wasm_bindgen(js_name = onChange, unchecked_return_type = "() => void")]
    pub fn on_change(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(change: GuardChange) => void")] callback: JsValue,
    ) -> Result<JsValue, JsValue> {
        let callback = callback.dyn_into::<js_sys::Function>().map_err(|_| {
            to_js_error(&GuardError::InvalidOptions(
                "onChange needs a function".to_owned(),
            ))
        })?;
        Ok(Listeners::add(&self.listeners, callback))
    }

    /// Signs a session in. A different user than the stored session's purges every record
    /// first. Returns how many records were removed.
    #[wasm_bindgen(unchecked_return_type = "PurgeResult")]
    pub fn login(
        &self,
        #[wasm_bindgen(unchecked_param_type = "SessionInput")] session: JsValue,
    ) -> Result<JsValue, JsValue> {
        let value = json_from_js(&session, GuardError::InvalidSession)?;
        let session = guarded(Session::from_login(&value))?;
        let purged = self.with(|g| {
            if let Some(memo) = &g.memo {
                memo.clear();
            }
            let user = session.user_id.clone();
            let (purged, before) = guarded(g.store.sign_in(session))?;
            if before.map(|s| s.user_id) != Some(user) {
                g.announce(Change::UserChanged);
            }
            Ok(purged)
        })?;
        to_js(&purge_result(purged))
    }

    /// Removes every key of the namespace and Superset's `last_async_event_id`, and ends every
    /// cancel in flight as `aborted`.
    #[wasm_bindgen(unchecked_return_type = "PurgeResult")]
    pub fn logout(&self) -> Result<JsValue, JsValue> {
        let (purged, in_flight) = self.with(|g| {
            let in_flight = g.logout.take();
            if let Some(memo) = &g.memo {
                memo.clear();
            }
            let purged = g.store.logout();
            g.announce(Change::Logout);
            Ok((purged, in_flight))
        })?;
        // Abort outside the borrow: abort listeners run synchronously.
        if let Some(controller) = in_flight {
            controller.abort();
        }
        to_js(&purge_result(purged))
    }

    /// The stored session (shared by the origin's tabs), or `null`.
    #[wasm_bindgen(getter, unchecked_return_type = "SessionInfo | null")]
    pub fn session(&self) -> Result<JsValue, JsValue> {
        let session = self.with(|g| Ok(g.store.session()))?;
        to_js(&session.map(SessionInfo))
    }

    /// Records the metadata Superset's create call returned. Throws `invalid_job`,
    /// `no_session` or `not_job_owner`.
    #[wasm_bindgen(js_name = recordJob, unchecked_return_type = "JobRecord")]
    pub fn record_job(
        &self,
        #[wasm_bindgen(unchecked_param_type = "JobMetadata")] meta: JsValue,
    ) -> Result<JsValue, JsValue> {
        let meta = metadata_from_js(&meta)?;
        self.with(|g| {
            let (record, check) = guarded(g.store.record_job_checked(meta))?;
            g.wrote(&record, &check)
        })
    }

    /// Applies an async event to the session's record of its job; `null` when the job is not
    /// the session's. Throws `invalid_job` for a malformed event.
    #[wasm_bindgen(js_name = applyEvent, unchecked_return_type = "JobRecord | null")]
    pub fn apply_event(
        &self,
        #[wasm_bindgen(unchecked_param_type = "AsyncEvent")] event: JsValue,
    ) -> Result<JsValue, JsValue> {
        let event = metadata_from_js(&event)?;
        self.with(|g| match guarded(g.store.apply_event_checked(event))? {
            Some((record, check)) => g.wrote(&record, &check),
            None => Ok(JsValue::NULL),
        })
    }

    /// The session's record of a job, or `null`.
    #[wasm_bindgen(unchecked_return_type = "JobRecord | null")]
    pub fn job(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.with(|g| {
            g.read(&job_id, Memo::job, Memo::settle_job, |store, id| {
                id.and_then(|id| store.job(&id))
            })
        })
    }

    /// The session's records, oldest first.
    #[wasm_bindgen(unchecked_return_type = "JobRecord[]")]
    pub fn jobs(&self) -> Result<JsValue, JsValue> {
        self.with(|g| {
            let consulted = match g.memo() {
                Some(memo) => {
                    let hit = memo.jobs();
                    if !hit.is_undefined() {
                        return Ok(hit);
                    }
                    true
                }
                None => false,
            };
            let records = g.store.jobs();
            // Remembered only if the data was and still is in localStorage alone.
            match g.memo().filter(|_| consulted) {
                Some(memo) => Ok(memo.settle_list(&records.to_json())),
                None => to_js(&records),
            }
        })
    }

    /// May this session cancel the job? Decided locally; nothing is sent.
    #[wasm_bindgen(js_name = checkCancel, unchecked_return_type = "CancelCheck")]
    pub fn check_cancel(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.with(|g| {
            g.read(&job_id, Memo::check, Memo::settle_check, |store, id| {
                // A non-string id cannot name a stored job: it is an unknown job.
                store.check_cancel(&id.unwrap_or_default())
            })
        })
    }

    /// Cancels a job the session owns: checks locally first (a refusal sends nothing), then
    /// POSTs to the cancel endpoint, retrying transient failures. Never rejects: every path
    /// resolves to a `CancelOutcome`.
    #[wasm_bindgen(unchecked_return_type = "Promise<CancelOutcome>")]
    pub fn cancel(
        &self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CancelOptions")] options: JsValue,
    ) -> js_sys::Promise {
        let job_id = job_id.as_string().unwrap_or_default();
        let signal = if options.is_object() {
            js_sys::Reflect::get(&options, &JsValue::from_str("signal"))
                .ok()
                .and_then(|s| s.dyn_into::<AbortSignal>().ok())
        } else {
            None
        };
        cancel::start(&self.inner, job_id, signal)
    }
}

/// Whether `error` was thrown by the guard (an `Error` named `"GuardError"` with a `code`).
#[wasm_bindgen(js_name = isGuardError, unchecked_return_type = "error is GuardError")]
pub fn is_guard_error(#[wasm_bindgen(unchecked_param_type = "unknown")] error: &JsValue) -> bool {
    super::error::is_guard_error(error)
}

/// What an HTTP status from the cancel endpoint means: the same table `cancel` uses, for apps
/// that send the request through their own client.
#[wasm_bindgen(
    js_name = classifyCancelResponse,
    unchecked_return_type = "CancelClassification"
)]
pub fn classify_cancel_response(
    #[wasm_bindgen(js_name = httpStatus)] http_status: f64,
) -> Result<JsValue, JsValue> {
    // A whole number from 0 to 999 (`fract` is std-only; the cast truncates).
    let status =
        if (0.0..=999.0).contains(&http_status) && http_status == (http_status as u16) as f64 {
            http_status as u16
        } else {
            0
        };
    to_js(&classify(status))
}
