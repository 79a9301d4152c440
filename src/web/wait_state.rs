//! The guard's waiters as its state holds them ([`Waiting`]): the core's rules, each waiter's
//! promise, the timer, the guard's wait entry for other tabs and its hold on `follow()`. Plain
//! data; [`super::waiting`] and [`super::closing`] act on it.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use crate::core::awaited::EntryState;
use crate::core::wait_outcome::WaitOutcome;
use crate::core::waiters::Waiters;

/// Who hears a waiter's outcome: the app (its promise's `resolve`), or a `query()` of the
/// guard (a Rust continuation).
pub(super) enum Resolve {
    Js(Function),
    Rust(Box<dyn FnOnce(WaitOutcome)>),
}

/// One waiter: who hears its outcome, and the abort listener on its signal.
pub(super) struct Pending {
    pub(super) id: u32,
    pub(super) resolve: Resolve,
    pub(super) signal: Option<(AbortSignal, Closure<dyn FnMut()>)>,
}

/// Listeners on the page: the page, and its `pagehide` and `pageshow` listeners.
#[cfg(feature = "follow")]
pub type PageListeners = (
    web_sys::EventTarget,
    Closure<dyn FnMut(JsValue)>,
    Closure<dyn FnMut(JsValue)>,
);

/// The entry in storage that tells other tabs what this guard awaits.
#[derive(Default)]
pub(super) struct Entry {
    /// The guard's number on the page ([`super::page::join`]).
    pub(super) page_id: u32,
    /// Its token (`<page>-<guard>`), made at the first wait.
    pub(super) token: Option<String>,
    /// What it last wrote, and when it writes again.
    pub(super) state: EntryState,
    /// What it listed when another tab's logout took the entry (read it, stopped what it
    /// listed, removed it): nothing is written again until the next login.
    pub(super) taken: Option<crate::core::store::Awaited>,
}

/// The guard's waiters and what keeps them fed.
#[derive(Default)]
pub struct Waiting {
    pub(super) rules: Waiters,
    pub(super) pending: Vec<Pending>,
    /// The timer: the first deadline of the waiters or the entry's refresh; its id, and the
    /// function it calls.
    pub(super) timer: Option<JsValue>,
    pub(super) on_timer: Option<Closure<dyn FnMut()>>,
    pub(super) entry: Entry,
    /// The waiters' hold on `follow()` (its holder id), while anything waits.
    #[cfg(feature = "follow")]
    pub(super) follow_hold: Option<u32>,
    /// Whether anything waits: the hook after each change reads it without a borrow, so a
    /// guard with no waiter does nothing more per change.
    pub(super) active: Rc<Cell<bool>>,
}

impl Waiting {
    /// Takes waiter `id`'s promise, if it has not settled.
    pub(super) fn take(&mut self, id: u32) -> Option<Pending> {
        let at = self.pending.iter().position(|p| p.id == id)?;
        Some(self.pending.remove(at))
    }
}
