//! What `waitFor()` is given, read: its options (`signal`, `staleTimeoutMs`,
//! `cancelOnClose`) and its input, a `202` body recorded (as `recordTasks` or `recordJob` would)
//! or job ids, and each job admitted by the core's rule ([`admit`]) before anything waits.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::boundary::plain;
use super::state::Inner;
use crate::core::error::GuardError;
use crate::core::waiters::{
    admit, cancel_on_close, read_input, refused_by, stale_ms, Refused, WaitInput, WaitRefusal,
};

/// `waitFor`'s options, read.
pub(super) struct WaitOptions {
    pub(super) signal: Option<AbortSignal>,
    pub(super) stale_ms: u64,
    /// `cancelOnClose`: the waiter's, or else `guards` (the guard's option).
    pub(super) cancel_on_close: bool,
}

/// `{ signal, staleTimeoutMs, cancelOnClose }`, each optional (`cancelOnClose` defaults to
/// `guards`); a `signal` that is not an `AbortSignal` is ignored, as `cancel()`'s is.
pub(super) fn read_options(options: &JsValue, guards: bool) -> Result<WaitOptions, Refused> {
    if !options.is_object() {
        return Ok(WaitOptions {
            signal: None,
            stale_ms: stale_ms(None)?,
            cancel_on_close: guards,
        });
    }
    let get = |name: &str| Reflect::get(options, &JsValue::from_str(name));
    let unreadable = |_| {
        (
            WaitRefusal::InvalidInput,
            "waitFor's options could not be read".to_owned(),
        )
    };
    let absent = |v: &JsValue| v.is_undefined() || v.is_null();
    let signal = get("signal")
        .map_err(unreadable)?
        .dyn_into::<AbortSignal>()
        .ok();
    let stale = get("staleTimeoutMs").map_err(unreadable)?;
    let stale = (!absent(&stale)).then(|| stale.as_f64().unwrap_or(f64::NAN));
    let on_close = get("cancelOnClose").map_err(unreadable)?;
    let on_close = if absent(&on_close) {
        Ok(None)
    } else {
        on_close.as_bool().map(Some).ok_or(())
    };
    Ok(WaitOptions {
        signal,
        stale_ms: stale_ms(stale)?,
        cancel_on_close: cancel_on_close(on_close, guards)?,
    })
}

/// `waitFor`'s first argument, written as JSON and read by the core ([`read_input`]).
pub(super) fn read(input: &JsValue) -> Result<WaitInput, Refused> {
    match plain(input, None, GuardError::InvalidJob) {
        Ok(copy) => match copy.value() {
            Ok(value) => read_input(&value),
            Err(e) => Err((WaitRefusal::InvalidInput, message_of(&e))),
        },
        Err(e) => Err((WaitRefusal::InvalidInput, message_of(&e))),
    }
}

/// An error's `message`, as a JS `Error` (a `GuardError`) carries it.
fn message_of(error: &JsValue) -> String {
    Reflect::get(error, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_default()
}

/// Records a `202` body (if given) and checks that every job is the session's: the jobs to
/// await (each by its record's id), or the refusal with the jobs and the job it names.
#[allow(clippy::type_complexity)]
pub(super) fn admit_all(
    guard: &mut Inner,
    input: WaitInput,
) -> Result<Vec<String>, (Vec<String>, Option<String>, Refused)> {
    let ids = match input {
        WaitInput::Ids(ids) => ids,
        WaitInput::Tasks(submission) => match guard.store.record_tasks(submission) {
            Ok(records) => records.iter().map(|r| r.job_id.to_string()).collect(),
            Err(e) => return Err((Vec::new(), None, refused_by(&e))),
        },
        WaitInput::Job(meta) => {
            let id = meta.job_id.to_string();
            if let Err(e) = guard.store.record_job(meta) {
                return Err((vec![id.clone()], Some(id), refused_by(&e)));
            }
            vec![id]
        }
    };
    let ids: Vec<String> = ids
        .iter()
        .map(|id| guard.store.record_id(id).into_owned())
        .collect();
    for id in &ids {
        if let Err(refused) = admit(&guard.store.check_cancel(id), id) {
            return Err((ids.clone(), Some(id.clone()), refused));
        }
    }
    Ok(ids)
}
