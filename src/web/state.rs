//! The guard's state, shared by the exported `JobGuard`, the cancels it has running and its
//! listeners for other tabs. It lives behind `Rc<RefCell<_>>`; every borrow is short and none
//! is held while JS code runs.

use web_sys::{AbortController, AbortSignal};

use super::dom;
use super::storage::Store;
use super::tabs::{TabHost, TabSync};
use crate::core::fallback::StorageMode;
use crate::core::options::GuardOptions;
use crate::core::tabs::Change;

/// Who holds `follow()` on ([`Holders`](crate::core::follow::Holders)), and the loop that runs while anybody does
/// ([`super::follow`] acts on it).
#[cfg(feature = "follow")]
#[derive(Default)]
pub struct Following {
    pub holders: crate::core::follow::Holders,
    /// Aborting it ends the running loop.
    pub running: Option<AbortController>,
    /// The page's `pagehide` and `pageshow` listeners: a page kept in the back/forward cache
    /// lets the loop (and its lock) go, and takes it up again when it is shown.
    pub on_page: Option<super::wait_state::PageListeners>,
    /// The loop was let go for the back/forward cache.
    pub paused: bool,
}

pub struct Inner {
    pub store: Store,
    pub options: GuardOptions,
    /// The app's `fetch` option; `None` means `globalThis.fetch` at call time.
    pub fetch: Option<js_sys::Function>,
    /// Aborted by `logout()`, a sign-in as someone else, or another tab's logout or user
    /// switch, which end every cancel in flight; then dropped. Made by the first cancel that
    /// needs it (`logout_signal`), not by the constructor.
    pub logout: Option<AbortController>,
    /// The other tabs: their changes come in, this tab's go out.
    pub tabs: Option<TabSync>,
    /// `waitFor()`'s waiters.
    pub waiting: super::wait_state::Waiting,
    /// The cancels running, by job id: a second `cancel()` of the same job shares the first.
    pub cancels: Vec<(String, js_sys::Promise)>,
    /// `query()`'s queries running.
    pub queries: super::query_state::Queries,
    /// `follow()`'s holders and its running loop.
    #[cfg(feature = "follow")]
    pub following: Following,
    /// The event stream answered 401: `follow` waits for the next `login`.
    #[cfg(feature = "follow")]
    pub follow_signed_out: bool,
    /// The event stream answered 403 (a role without the permission): `follow` waits for the
    /// next `login`.
    #[cfg(feature = "follow")]
    pub follow_forbidden: bool,
    /// The event stream answered 404 (the task framework switched off): not followed again.
    #[cfg(feature = "follow")]
    pub stream_absent: bool,
    /// Wakes `follow` from its wait (a login after a 401).
    #[cfg(feature = "follow")]
    pub follow_wake: Option<js_sys::Function>,
}

impl Inner {
    /// The signal `logout()` aborts, for a cancel about to run.
    pub fn logout_signal(&mut self) -> Option<AbortSignal> {
        if self.logout.is_none() {
            self.logout = AbortController::new().ok();
        }
        self.logout.as_ref().and_then(dom::signal_of)
    }

    /// Tells the other tabs that this tab signed out or switched user. (Job changes need no
    /// message: they are in localStorage, whose `storage` event the other tabs get.)
    pub fn announce(&mut self, change: Change) {
        let shared = self.store.storage_status().kind != StorageMode::Memory;
        let session = self.store.session();
        if let Some(tabs) = &mut self.tabs {
            tabs.announce(change, session.as_ref(), shared);
        }
    }
}

impl TabHost for Inner {
    fn store(&mut self) -> &mut Store {
        &mut self.store
    }

    fn tabs(&mut self) -> Option<&mut TabSync> {
        self.tabs.as_mut()
    }

    fn end_cancels(&mut self) -> Option<AbortController> {
        self.logout.take()
    }

    #[cfg(feature = "follow")]
    fn resume_follow(&mut self) -> Option<js_sys::Function> {
        let forbidden = std::mem::take(&mut self.follow_forbidden);
        (std::mem::take(&mut self.follow_signed_out) || forbidden)
            .then(|| self.follow_wake.clone())
            .flatten()
    }

    #[cfg(not(feature = "follow"))]
    fn resume_follow(&mut self) -> Option<js_sys::Function> {
        None
    }

    fn session_ended_elsewhere(&mut self) {
        let entry = &mut self.waiting.entry;
        let Some(token) = entry.token.as_deref() else {
            return;
        };
        let shared = self.store.storage_status().kind != StorageMode::Memory;
        if shared && entry.taken.is_none() && !self.store.has_entry(token) {
            entry.taken = Some(entry.state.listed.clone());
        }
    }

    fn stop_follow(&mut self, change: Change) {
        #[cfg(feature = "follow")]
        match change {
            Change::Forbidden => self.follow_forbidden = true,
            _ => self.follow_signed_out = true,
        }
        #[cfg(not(feature = "follow"))]
        let _ = change;
    }
}
