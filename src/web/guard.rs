//! `JobGuard`, the class the package exports. Each method converts its JS arguments into core
//! values, calls the [`JobStore`], and converts the answer (or the error, once) back.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::clock::DateClock;
use super::error::to_js_error;
use super::storage::LocalStorage;
use crate::core::error::GuardError;
use crate::core::model::JobMetadata;
use crate::core::options::{GuardOptions, StorageKind};
use crate::core::session::Session;
use crate::core::storage::{KeyValue, MemoryStorage};
use crate::core::store::JobStore;

type Store = JobStore<Box<dyn KeyValue>, DateClock>;

/// Guards Superset async-job metadata for the signed-in session. See the README for the rules.
#[wasm_bindgen]
pub struct JobGuard {
    store: Store,
}

#[derive(Serialize)]
struct PurgeResult {
    purged: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionInfo<'a> {
    user_id: Option<&'a str>,
    channel_id: Option<&'a str>,
}

/// A JS value as JSON, for the core to validate. `undefined` reads as `null`.
fn json_from_js(
    value: &JsValue,
    err: fn(String) -> GuardError,
) -> Result<serde_json::Value, JsValue> {
    serde_wasm_bindgen::from_value(value.clone())
        .map_err(|e| to_js_error(&err(format!("cannot read the value: {e}"))))
}

/// A Rust value as a plain JS value: objects for structs, `null` for `None`.
fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| to_js_error(&GuardError::Internal(e.to_string())))
}

fn guarded<T>(result: Result<T, GuardError>) -> Result<T, JsValue> {
    result.map_err(|e| to_js_error(&e))
}

#[wasm_bindgen]
impl JobGuard {
    /// Creates a guard. Throws a `GuardError` (`invalid_options`) for bad options, or
    /// (`storage_failed`) when `storage: "local"` is asked for and localStorage is unavailable.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "GuardOptions")] options: JsValue,
    ) -> Result<JobGuard, JsValue> {
        // `undefined` and `null` read as JSON null: all defaults.
        let value = json_from_js(&options, GuardError::InvalidOptions)?;
        let options = guarded(GuardOptions::from_json(&value))?;
        let storage: Box<dyn KeyValue> = match options.storage {
            StorageKind::Memory => Box::new(MemoryStorage::new()),
            StorageKind::Local => {
                Box::new(guarded(LocalStorage::open().map_err(GuardError::from))?)
            }
        };
        Ok(JobGuard {
            store: JobStore::new(storage, DateClock, &options),
        })
    }

    /// Signs a session in. A different user than the stored session's purges every record
    /// first. Returns how many records were removed.
    #[wasm_bindgen(unchecked_return_type = "PurgeResult")]
    pub fn login(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "SessionInput")] session: JsValue,
    ) -> Result<JsValue, JsValue> {
        let value = json_from_js(&session, GuardError::InvalidSession)?;
        let session = guarded(Session::from_login(&value))?;
        let purged = guarded(self.store.login(session))?;
        to_js(&PurgeResult { purged })
    }

    /// Removes every key of the namespace and Superset's `last_async_event_id`.
    #[wasm_bindgen(unchecked_return_type = "PurgeResult")]
    pub fn logout(&mut self) -> Result<JsValue, JsValue> {
        let purged = guarded(self.store.logout())?;
        to_js(&PurgeResult { purged })
    }

    /// The stored session (shared by the origin's tabs), or `null`.
    #[wasm_bindgen(getter, unchecked_return_type = "SessionInfo | null")]
    pub fn session(&mut self) -> Result<JsValue, JsValue> {
        let session = self.store.session();
        to_js(&session.as_ref().map(|s| SessionInfo {
            user_id: s.user_id.as_deref(),
            channel_id: s.channel_id.as_deref(),
        }))
    }

    /// Records the metadata Superset's create call returned. Throws `invalid_job`,
    /// `no_session` or `not_job_owner`.
    #[wasm_bindgen(js_name = recordJob, unchecked_return_type = "JobRecord")]
    pub fn record_job(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "JobMetadata")] meta: JsValue,
    ) -> Result<JsValue, JsValue> {
        let value = json_from_js(&meta, GuardError::InvalidJob)?;
        let meta = guarded(JobMetadata::from_json(&value))?;
        let record = guarded(self.store.record_job(meta))?;
        to_js(&record)
    }

    /// Applies an async event to the session's record of its job; `null` when the job is not
    /// the session's. Throws `invalid_job` for a malformed event.
    #[wasm_bindgen(js_name = applyEvent, unchecked_return_type = "JobRecord | null")]
    pub fn apply_event(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "AsyncEvent")] event: JsValue,
    ) -> Result<JsValue, JsValue> {
        let value = json_from_js(&event, GuardError::InvalidJob)?;
        let event = guarded(JobMetadata::from_json(&value))?;
        let record = guarded(self.store.apply_event(event))?;
        to_js(&record)
    }

    /// The session's record of a job, or `null`.
    #[wasm_bindgen(unchecked_return_type = "JobRecord | null")]
    pub fn job(
        &mut self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let record = job_id.as_string().and_then(|id| self.store.job(&id));
        to_js(&record)
    }

    /// The session's records, oldest first.
    #[wasm_bindgen(unchecked_return_type = "JobRecord[]")]
    pub fn jobs(&mut self) -> Result<JsValue, JsValue> {
        to_js(&self.store.jobs())
    }

    /// May this session cancel the job? Decided locally; nothing is sent.
    #[wasm_bindgen(js_name = checkCancel, unchecked_return_type = "CancelCheck")]
    pub fn check_cancel(
        &mut self,
        #[wasm_bindgen(js_name = jobId, unchecked_param_type = "string")] job_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        // A non-string id cannot name a stored job: it is an unknown job.
        let job_id = job_id.as_string().unwrap_or_default();
        to_js(&self.store.check_cancel(&job_id))
    }
}

/// Whether `error` was thrown by the guard (an `Error` named `"GuardError"` with a `code`).
#[wasm_bindgen(js_name = isGuardError, unchecked_return_type = "error is GuardError")]
pub fn is_guard_error(#[wasm_bindgen(unchecked_param_type = "unknown")] error: &JsValue) -> bool {
    super::error::is_guard_error(error)
}
