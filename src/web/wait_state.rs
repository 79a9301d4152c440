//! The guard's waiters as its state holds them ([`Waiting`]): the core's rules, each waiter's
//! promise, the stale timer, the page's listener and the `follow()` started for them. Plain
//! data; [`super::waiting`] and [`super::closing`] act on it.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::prelude::*;
#[cfg(feature = "follow")]
use web_sys::AbortController;
use web_sys::{AbortSignal, EventTarget};

use crate::core::waiters::Waiters;

/// One waiter's promise: its `resolve`, and the abort listener on its signal.
pub(super) struct Pending {
    pub(super) id: u32,
    pub(super) resolve: Function,
    pub(super) signal: Option<(AbortSignal, Closure<dyn FnMut()>)>,
}

/// A listener on the page, and the page.
pub(super) type PageListener = (EventTarget, Closure<dyn FnMut(JsValue)>);

/// The guard's waiters and what keeps them fed.
#[derive(Default)]
pub struct Waiting {
    pub(super) rules: Waiters,
    pub(super) pending: Vec<Pending>,
    /// The stale timer: its id, and the function it calls.
    pub(super) timer: Option<JsValue>,
    pub(super) on_timer: Option<Closure<dyn FnMut()>>,
    /// The page's `pagehide` listener, while anything waits.
    pub(super) on_pagehide: Option<PageListener>,
    /// The `follow()` `waitFor` started, stopped when nothing waits.
    #[cfg(feature = "follow")]
    pub follow: Option<AbortController>,
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
