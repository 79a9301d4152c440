//! What `waitFor()` is given, read: its options (`signal`, `staleTimeoutMs`, `cancelOnClose`)
//! and its input, a `202` body recorded (as `recordTasks` or `recordJob` would) or job ids, and
//! each job admitted by the core's rules ([`can_hear`], [`admit`]) before anything waits.

use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::boundary::{message_of, plain, signal_in};
use super::state::Inner;
use crate::core::error::GuardError;
use crate::core::session::Session;
use crate::core::wait_input::{admit, heard_on, read_input, refused_by, WaitInput, WaitSettings};
use crate::core::wait_outcome::{Refused, WaitRefusal};
use crate::core::waiters::{can_hear, Hearing};

/// `waitFor`'s options, read.
pub(super) struct WaitOptions {
    pub(super) signal: Option<AbortSignal>,
    pub(super) settings: WaitSettings,
}

/// A refusal of the options: `invalid_input`, the rule broken as its message.
fn invalid(message: String) -> Refused {
    (WaitRefusal::InvalidInput, message)
}

/// `{ signal, staleTimeoutMs, cancelOnClose }`, each optional (`cancelOnClose` defaults to
/// `guards`, the guard's option), read as JSON writes them (a `toJSON` of theirs included)
/// with `signal` taken out as it is. Anything else is refused, naming what is wrong: options
/// that are not an object (an `AbortSignal` given as the options themselves, a number, an
/// array, a function), an unknown key, a `signal` that is not an `AbortSignal` (its
/// controller, a look-alike, a string), a value breaking its rule.
pub(super) fn read_options(options: &JsValue, guards: bool) -> Result<WaitOptions, Refused> {
    let plain = plain(options, Some("signal"), GuardError::InvalidOptions)
        .map_err(|e| invalid(message_of(&e)))?;
    let signal = signal_in(plain.taken.clone()).map_err(invalid)?;
    let settings = plain
        .read(|d| WaitSettings::read(d, guards))
        .map_err(|e| invalid(message_of(&e)))?;
    Ok(WaitOptions { signal, settings })
}

/// `waitFor`'s first argument, written as JSON and read by the core ([`read_input`]).
pub(super) fn read(input: &JsValue) -> Result<WaitInput, Refused> {
    match plain(input, None, GuardError::InvalidJob) {
        Ok(copy) => match copy.value() {
            Ok(value) => read_input(&value),
            Err(e) => Err(invalid(message_of(&e))),
        },
        Err(e) => Err(invalid(message_of(&e))),
    }
}

/// A refusal with the jobs it concerns and the job it names.
pub(super) type Refusal = (Vec<String>, Option<String>, Refused);

/// What the guard can hear now: its session, and whether its poll met a `401` or a `403`
/// since the last login, or a `404` (no stream at all).
pub(super) struct Heard {
    pub(super) session: Option<Session>,
    flags: [bool; 3],
}

impl Heard {
    pub(super) fn hearing(&self) -> Hearing<'_> {
        let [unauthenticated, forbidden, absent] = self.flags;
        Hearing {
            session: self.session.as_ref(),
            unauthenticated,
            forbidden,
            absent,
        }
    }
}

/// What the guard can hear now ([`Heard`]).
pub(super) fn hearing_of(guard: &mut Inner) -> Heard {
    #[cfg(feature = "follow")]
    let flags = [
        guard.follow_signed_out,
        guard.follow_forbidden,
        guard.stream_absent,
    ];
    #[cfg(not(feature = "follow"))]
    let flags = [false; 3];
    Heard {
        session: guard.store.session(),
        flags,
    }
}

/// Records a `202` body (if given) and checks that every job is the session's and that the
/// session can hear of them: the jobs to await (each by its record's id, each once whatever
/// the case of a task's uuid) and the session they are awaited under, or the refusal.
pub(super) fn admit_all(
    guard: &mut Inner,
    input: WaitInput,
) -> Result<(Vec<String>, Session), Refusal> {
    let heard = hearing_of(guard);
    let session = match can_hear(heard.hearing(), None) {
        Ok(session) => session.clone(),
        Err(refused) => return Err((Vec::new(), None, refused)),
    };
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
    let mut jobs: Vec<String> = Vec::with_capacity(ids.len());
    for id in &ids {
        let id = guard.store.record_id(id).into_owned();
        if !jobs.contains(&id) {
            jobs.push(id);
        }
    }
    let contract = guard.options.contract;
    for id in &jobs {
        let check = guard.store.check_cancel(id);
        if let Err(refused) = admit(&check, id).and_then(|()| heard_on(&check, contract, id)) {
            return Err((jobs.clone(), Some(id.clone()), refused));
        }
    }
    Ok((jobs, session))
}
