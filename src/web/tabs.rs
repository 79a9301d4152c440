//! The origin's other tabs: their logouts, user switches and new jobs reach this guard through
//! the `storage` event (for `localStorage`) and a `BroadcastChannel` (which also reaches tabs
//! whose storage fell back to memory), and the app hears of them through `onChange`. What a
//! message or an event means is the core's ([`crate::core::tabs`]); this room listens, reads
//! and wires. The page's other guards (two providers, or a provider and the app's own guard)
//! hear each other's changes as other tabs': a page's own writes fire no `storage` event, so
//! each change a guard makes in storage is handed to the page's other guards of its namespace.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{AbortController, BroadcastChannel, MessageEvent, StorageEvent};

use super::dom;
use super::listeners::Listeners;
use super::storage::Store;
use crate::core::fallback::StorageMode;
use crate::core::session::Session;
#[cfg(feature = "follow")]
use crate::core::tabs::SIGNED_IN;
use crate::core::tabs::{hear, storage_change, Change, Message, Source, StorageChange};

/// What the tabs code needs of the guard it serves: its store, its [`TabSync`], and the
/// controller that ends its cancels in flight. (A trait, so that this module does not depend
/// on the guard's state, which holds a `TabSync`.)
pub trait TabHost: 'static {
    fn store(&mut self) -> &mut Store;
    fn tabs(&mut self) -> Option<&mut TabSync>;
    /// Takes the controller whose abort ends every cancel in flight (to abort it outside the
    /// borrow).
    fn end_cancels(&mut self) -> Option<AbortController>;
    /// A login of this session in another tab: a `follow()` that a 401 stopped here resumes;
    /// the function that wakes it (to call outside the borrow).
    fn resume_follow(&mut self) -> Option<Function>;
    /// Another tab's poll of this session met a 401 (`change` `unauthorized`) or a 403
    /// (`forbidden`): a `follow()` here stays stopped too until the next login, so a tab that
    /// takes over does not poll (and announce) again.
    fn stop_follow(&mut self, change: Change);
    /// The session ended in another tab: notes whether that tab took this guard's entry (it
    /// then stopped what the entry listed), before anything here writes it again.
    fn session_ended_elsewhere(&mut self);
}

/// The guard, as the tabs code holds it: weakly, so that a dropped guard is not kept alive by
/// its listeners.
type Host = Weak<RefCell<dyn TabHost>>;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_name = queueMicrotask)]
    fn queue_microtask(callback: &JsValue) -> Result<(), JsValue>;
}

/// The guards of this page that share storage, by namespace: each one's id, its state and its
/// listeners, weakly (a dropped guard leaves; `TabSync`'s drop takes it out).
struct Neighbour {
    id: u32,
    namespace: String,
    host: Host,
    listeners: Weak<RefCell<Listeners>>,
}

thread_local! {
    static PAGE: RefCell<(u32, Vec<Neighbour>)> = const { RefCell::new((0, Vec::new())) };
}

/// Adds a guard to the page's; its id.
fn join_page(namespace: &str, host: Host, listeners: &Rc<RefCell<Listeners>>) -> u32 {
    PAGE.with(|page| {
        let Ok(mut page) = page.try_borrow_mut() else {
            return 0;
        };
        page.0 = page.0.wrapping_add(1);
        let id = page.0;
        page.1.push(Neighbour {
            id,
            namespace: namespace.to_owned(),
            host,
            listeners: Rc::downgrade(listeners),
        });
        id
    })
}

fn leave_page(id: u32) {
    PAGE.with(|page| {
        if let Ok(mut page) = page.try_borrow_mut() {
            page.1.retain(|n| n.id != id && n.host.strong_count() > 0);
        }
    });
}

/// Whether a guard's records are in the origin's storage (not this page's memory alone).
fn shares_storage(host: &Host) -> bool {
    host.upgrade().is_some_and(|h| {
        h.try_borrow_mut()
            .is_ok_and(|mut g| g.store().storage_status().kind != StorageMode::Memory)
    })
}

/// Another guard of the page, as a change is handed to it.
type Neighbourly = (Host, Weak<RefCell<Listeners>>);

/// Hands a change the guard `id` made to the page's other guards of its namespace, as a
/// `storage` event hands it to other tabs: only a change in storage (records, the session),
/// between guards whose storage is the origin's. (A 401 reaches them by the channel.)
fn tell_page(id: u32, change: Change) {
    if id == 0 || matches!(change, Change::Unauthorized | Change::Forbidden) {
        return;
    }
    let (from, others): (Option<Host>, Vec<Neighbourly>) = PAGE.with(|page| {
        let Ok(page) = page.try_borrow() else {
            return (None, Vec::new());
        };
        let Some(me) = page.1.iter().find(|n| n.id == id) else {
            return (None, Vec::new());
        };
        let others = page
            .1
            .iter()
            .filter(|n| n.id != id && n.namespace == me.namespace)
            .map(|n| (n.host.clone(), n.listeners.clone()))
            .collect();
        (Some(me.host.clone()), others)
    });
    if others.is_empty() || !from.as_ref().is_some_and(shares_storage) {
        return;
    }
    for (host, listeners) in others {
        let Some(listeners) = listeners.upgrade() else {
            continue;
        };
        if !shares_storage(&host) {
            continue;
        }
        if change != Change::JobsChanged {
            end_session_here(&host);
        }
        Listeners::notify(&listeners, change, Source::OtherTab);
    }
}

/// The listeners a guard registered; dropping it (the guard's `free()`) removes them.
pub struct TabSync {
    channel: Option<BroadcastChannel>,
    on_message: Option<Closure<dyn FnMut(MessageEvent)>>,
    on_storage: Option<Closure<dyn FnMut(StorageEvent)>>,
    /// What opening the channel needs, until it is open (pages only).
    opener: Option<Opener>,
    /// A [`signed_in`](Self::signed_in) made before the channel opened, sent when it opens.
    #[cfg(feature = "follow")]
    pending_signed_in: Option<Session>,
    /// This guard's id among the page's guards.
    page_id: u32,
}

/// The channel's name and what its messages reach.
#[derive(Clone)]
struct Opener {
    name: String,
    inner: Host,
    listeners: Rc<RefCell<Listeners>>,
}

impl TabSync {
    /// Listens for other tabs' changes to the guard's namespace.
    pub fn start(namespace: &str, inner: Host, listeners: Rc<RefCell<Listeners>>) -> Self {
        let window = dom::page();
        let on_storage = window.as_ref().map(|window| {
            let inner = inner.clone();
            let listeners = Rc::clone(&listeners);
            let closure = Closure::<dyn FnMut(StorageEvent)>::new(move |event: StorageEvent| {
                if let Some(change) = read_storage_event(&inner, &event) {
                    if change != Change::JobsChanged {
                        end_session_here(&inner);
                    }
                    Listeners::notify(&listeners, change, Source::OtherTab);
                }
            });
            let _ = window
                .add_event_listener_with_callback("storage", closure.as_ref().unchecked_ref());
            closure
        });
        let page_id = join_page(namespace, inner.clone(), &listeners);
        if let Ok(mut l) = listeners.try_borrow_mut() {
            l.page = Some((page_id, tell_page));
        }
        // Pages only: in Node an open BroadcastChannel would keep the process alive.
        let opener = window.as_ref().map(|_| Opener {
            name: ["superset-job-guard:", namespace].concat(),
            inner: inner.clone(),
            listeners,
        });
        if let Some(opener) = opener.clone() {
            // Opening a BroadcastChannel takes about 0.1 ms in Chromium, more than the rest of
            // the constructor: it opens in a microtask, once the page's current code has run
            // (a guard freed by then opens none). `announce` opens it at once if it must send.
            let open = Closure::<dyn FnMut()>::new(move || {
                if let Some(inner) = opener.inner.upgrade() {
                    if let Ok(mut guard) = inner.try_borrow_mut() {
                        if let Some(tabs) = guard.tabs() {
                            tabs.open_channel();
                        }
                    }
                }
            });
            // queueMicrotask is in every current browser; were it missing, the channel would
            // open only when this tab announces.
            let _ = queue_microtask(&open.into_js_value());
        }
        Self {
            channel: None,
            on_message: None,
            on_storage,
            opener,
            #[cfg(feature = "follow")]
            pending_signed_in: None,
            page_id,
        }
    }

    /// Opens the channel (once) and listens to it.
    fn open_channel(&mut self) {
        let Some(Opener {
            name,
            inner,
            listeners,
        }) = self.opener.take()
        else {
            return;
        };
        let Ok(channel) = BroadcastChannel::new(&name) else {
            return;
        };
        let closure = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(message) = read_message(&dom::data(&event)) {
                on_message(&inner, &listeners, &message);
            }
        });
        if !dom::set_onmessage(&channel, Some(closure.as_ref().unchecked_ref())) {
            dom::close(&channel);
            return; // a page that refuses the handler gets no channel: storage events remain
        }
        self.channel = Some(channel);
        self.on_message = Some(closure);
        #[cfg(feature = "follow")]
        if let Some(session) = self.pending_signed_in.take() {
            self.post(SIGNED_IN, Some(&session), false);
        }
    }

    /// Tells the other tabs that this one signed out, signed in as `session`'s user or guest,
    /// or met a 401 polling for `session`. Sent over the BroadcastChannel, which also reaches
    /// tabs that have no localStorage; `shared` says whether the change is in localStorage too
    /// (its tabs heard it already; a 401 never is).
    pub fn announce(&mut self, change: Change, session: Option<&Session>, shared: bool) {
        if change == Change::JobsChanged {
            return; // jobs live in localStorage: its storage event carries them
        }
        self.post(change.as_str(), session, shared);
    }

    /// Tells the other tabs that this one signed `session` in again (the same user or guest):
    /// a `follow()` a 401 stopped in one of them resumes, wherever the user signed in.
    /// Before the channel has opened (it opens in a microtask after the constructor: a page's
    /// first login comes before), the message waits for it, so a login does not pay for
    /// opening a channel at once.
    #[cfg(feature = "follow")]
    pub fn signed_in(&mut self, session: &Session) {
        if self.channel.is_none() && self.opener.is_some() {
            self.pending_signed_in = Some(session.clone());
        } else {
            self.post(SIGNED_IN, Some(session), false);
        }
    }

    fn post(&mut self, kind: &str, session: Option<&Session>, shared: bool) {
        self.open_channel();
        let Some(channel) = &self.channel else {
            return;
        };
        let Message { kind, user, guest } = Message::about(kind, session);
        let text = |v: Option<String>| v.map_or(JsValue::NULL, |v| JsValue::from_str(&v));
        let message = Object::new();
        let _ = Reflect::set(&message, &"type".into(), &kind.into());
        let _ = Reflect::set(&message, &"shared".into(), &shared.into());
        let _ = Reflect::set(&message, &"userId".into(), &text(user));
        let _ = Reflect::set(&message, &"guestKey".into(), &text(guest));
        let _ = channel.post_message(&message);
    }
}

impl Drop for TabSync {
    fn drop(&mut self) {
        leave_page(self.page_id);
        if let (Some(window), Some(closure)) = (dom::page(), &self.on_storage) {
            let _ = window
                .remove_event_listener_with_callback("storage", closure.as_ref().unchecked_ref());
        }
        if let Some(channel) = &self.channel {
            dom::set_onmessage(channel, None);
            dom::close(channel);
        }
        self.on_message = None;
    }
}

/// A message from another tab, as [`TabSync::post`] writes it: `None` for anything else.
/// (Its `shared` flag, which guards of earlier versions read, is not needed: a guard whose
/// storage is the origin's believes storage, not messages.)
fn read_message(data: &JsValue) -> Option<Message> {
    let field = |k: &str| Reflect::get(data, &JsValue::from_str(k)).ok();
    Some(Message {
        kind: field("type")?.as_string()?,
        user: field("userId").and_then(|v| v.as_string()),
        guest: field("guestKey").and_then(|v| v.as_string()),
    })
}

/// Hears another tab's message: what it means is the core's ([`hear`]); a follow it resumes
/// is woken, a 401 it names stops this tab's follow, a logout or another user ends the
/// session here, and the listeners hear the change.
fn on_message(inner: &Host, listeners: &Rc<RefCell<Listeners>>, message: &Message) {
    let Some(host) = inner.upgrade() else {
        return;
    };
    let (heard, wake) = {
        let Ok(mut guard) = host.try_borrow_mut() else {
            return;
        };
        let shared = guard.store().storage_status().kind != StorageMode::Memory;
        let heard = hear(message, guard.store().session().as_ref(), shared);
        let wake = heard.resume_follow.then(|| guard.resume_follow()).flatten();
        if let Some(change @ (Change::Unauthorized | Change::Forbidden)) = heard.change {
            // A 401 or 403 another tab's poll met ends nothing here (the app decides), and
            // stops this tab's follow until the next login.
            guard.stop_follow(change);
        }
        (heard, wake)
    };
    if let Some(wake) = wake {
        let _ = wake.call0(&JsValue::UNDEFINED);
    }
    let Some(change) = heard.change else {
        return;
    };
    if !matches!(change, Change::Unauthorized | Change::Forbidden) {
        end_session_here(inner);
    }
    Listeners::notify(listeners, change, Source::OtherTab);
}

/// What a `storage` event from another tab means for this guard, if anything.
fn read_storage_event(inner: &Host, event: &StorageEvent) -> Option<Change> {
    let inner = inner.upgrade()?;
    let mut guard = inner.try_borrow_mut().ok()?;
    if guard.store().storage_status().kind == StorageMode::Memory {
        return None; // not our storage
    }
    // Values the page made unreadable (a replaced getter) leave the event unheard: every call
    // reads storage again anyway.
    let event = match dom::storage_key(event)? {
        None => StorageChange::Cleared,
        Some(key) if !guard.store().owns_key(&key) => return None,
        // Another tab's wait entry: no record and no session.
        Some(key) if guard.store().is_wait_key(&key) => return None,
        Some(key) if !guard.store().is_session_key(&key) => {
            // A record removed: if another tab's logout or switch purged it, this tab
            // remembers it (a late `202` naming it is refused to the next user).
            if let Some((Some(old), None)) = dom::storage_values(event) {
                guard.store().heard_removal(&old);
            }
            StorageChange::Record
        }
        Some(_) => {
            // The marker's old and new text, read as gloo-storage wrote it.
            let (old, new) = dom::storage_values(event)?;
            let change = storage_change(
                StorageChange::Session {
                    old: old.as_deref(),
                    new: new.as_deref(),
                },
                None,
            );
            return Some(change);
        }
    };
    Some(storage_change(event, guard.store().session().as_ref()))
}

/// Ends this tab's copy of a session that ended elsewhere: a memory-only tab signs out; a
/// localStorage tab (whose storage already changed) drops what it kept in memory. Either way
/// the cancels in flight end (as `aborted`).
fn end_session_here(inner: &Host) {
    let Some(inner) = inner.upgrade() else {
        return;
    };
    let in_flight = {
        let Ok(mut guard) = inner.try_borrow_mut() else {
            return;
        };
        guard.session_ended_elsewhere();
        if guard.store().storage_status().kind == StorageMode::Memory {
            guard.store().logout();
        } else {
            guard.store().forget_memory();
        }
        // A 401's stop ends with the session: the next login, in any tab, follows again.
        (guard.end_cancels(), guard.resume_follow())
    };
    let (in_flight, wake) = in_flight;
    // Outside the borrow: abort listeners run synchronously.
    if let Some(controller) = in_flight {
        dom::abort(&controller);
    }
    if let Some(wake) = wake {
        let _ = wake.call0(&JsValue::UNDEFINED);
    }
}
