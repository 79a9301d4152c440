//! The origin's other tabs: their logouts, user switches and new jobs reach this guard through
//! the `storage` event (for `localStorage`) and a `BroadcastChannel` (which also reaches tabs
//! whose storage fell back to memory), and the app hears of them through `onChange`. The other
//! guards of this page (two providers, or a provider and the app's own guard) hear each
//! other's changes as they hear other tabs': a page's own writes fire no `storage` event, so
//! each change a guard makes is handed to the page's other guards of its namespace directly.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{AbortController, BroadcastChannel, MessageEvent, StorageEvent};

use super::dom;
use super::storage::Store;
use crate::core::fallback::StorageMode;
use crate::core::session::Session;

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
    /// Another tab's poll of this session met a 401: a `follow()` here stays stopped too until
    /// the next login, so a tab that takes over does not poll (and announce) again.
    fn stop_follow(&mut self);
}

/// The guard, as the tabs code holds it: weakly, so that a dropped guard is not kept alive by
/// its listeners.
type Host = Weak<RefCell<dyn TabHost>>;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_name = queueMicrotask)]
    fn queue_microtask(callback: &JsValue) -> Result<(), JsValue>;
}

/// A change to the session or its records, as `subscribe` and `onChange` (which hears
/// `other_tab` only) hand it to their listeners, frozen: `jobs_changed` also when the same
/// user's session took a new channel.
#[derive(tsify::Tsify)]
#[allow(dead_code)] // a type for TypeScript only: `Listeners::notify` builds the objects
#[tsify(type = "{ readonly type: GuardChangeType; readonly source: GuardChangeSource }")]
pub struct GuardChange;

/// What changed: a sign-out, another user (or guest), the session's records, or (`follow()`)
/// the server answering 401 to the session's poll: its login there has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, tsify::Tsify)]
#[serde(rename_all = "snake_case")]
#[tsify(rename = "GuardChangeType")]
pub enum Change {
    Logout,
    UserChanged,
    JobsChanged,
    Unauthorized,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Logout => "logout",
            Change::UserChanged => "user_changed",
            Change::JobsChanged => "jobs_changed",
            Change::Unauthorized => "unauthorized",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "logout" => Some(Change::Logout),
            "user_changed" => Some(Change::UserChanged),
            "jobs_changed" => Some(Change::JobsChanged),
            "unauthorized" => Some(Change::Unauthorized),
            _ => None,
        }
    }
}

/// Where a change was made: `"local"`, by this guard; `"other_tab"`, by another tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, tsify::Tsify)]
#[serde(rename_all = "snake_case")]
#[tsify(rename = "GuardChangeSource")]
pub enum Source {
    /// By this guard (this tab).
    Local,
    /// By another tab.
    OtherTab,
}

/// How many changes one delivery hands out at most: listeners that keep changing the session
/// from inside their own calls (a ping-pong of sign-ins) are cut off there.
const MAX_DELIVERIES: usize = 64;

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
    if id == 0 || change == Change::Unauthorized {
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

/// The app's `onChange` and `subscribe` callbacks, kept apart from the guard's state so that
/// calling them never holds a borrow of it.
#[derive(Default)]
pub struct Listeners {
    /// This guard's id among the page's guards (0: none).
    page_id: u32,
    next_id: u32,
    /// Each callback, and whether it hears this tab's own changes too (`subscribe`).
    callbacks: Vec<(u32, Function, bool)>,
    /// Changes waiting to be handed out, while a delivery is running.
    queue: Vec<(Change, Source)>,
    delivering: bool,
}

impl Listeners {
    /// Adds a callback; `local`: it hears this tab's changes too. Returns the unsubscribe
    /// function (harmless to call twice).
    pub fn add(this: &Rc<RefCell<Self>>, callback: Function, local: bool) -> JsValue {
        let id = {
            let Ok(mut l) = this.try_borrow_mut() else {
                return JsValue::UNDEFINED;
            };
            l.next_id = l.next_id.wrapping_add(1);
            let id = l.next_id;
            l.callbacks.push((id, callback, local));
            id
        };
        let weak = Rc::downgrade(this);
        // FnMut, not once: calling the unsubscribe function twice must be harmless.
        Closure::<dyn FnMut()>::new(move || {
            if let Some(l) = weak.upgrade() {
                if let Ok(mut l) = l.try_borrow_mut() {
                    l.callbacks.retain(|(i, _, _)| *i != id);
                }
            }
        })
        .into_js_value()
    }

    /// Tells the callbacks that hear changes from `source`. A change made by a callback (it
    /// called the guard) is queued and handed out after the current one, never from inside
    /// it, so listeners that call back in cannot recurse; one delivery hands out at most
    /// [`MAX_DELIVERIES`] changes.
    pub fn notify(this: &Rc<RefCell<Self>>, change: Change, source: Source) {
        {
            let Ok(mut l) = this.try_borrow_mut() else {
                return;
            };
            if l.queue.len() < MAX_DELIVERIES {
                l.queue.push((change, source));
            }
            if l.delivering {
                return;
            }
            l.delivering = true;
        }
        for _ in 0..MAX_DELIVERIES {
            let next = this
                .try_borrow_mut()
                .ok()
                .and_then(|mut l| (!l.queue.is_empty()).then(|| l.queue.remove(0)));
            let Some((change, source)) = next else {
                break;
            };
            Self::deliver(this, change, source);
            if source == Source::Local {
                let id = this.try_borrow().map_or(0, |l| l.page_id);
                tell_page(id, change);
            }
        }
        if let Ok(mut l) = this.try_borrow_mut() {
            l.queue.clear();
            l.delivering = false;
        }
    }

    /// Calls the callbacks that hear changes from `source` with one frozen `{ type, source }`.
    /// Each is called outside any borrow, and only while still subscribed: a callback may
    /// unsubscribe itself or another, or call the guard. One that throws does not keep the
    /// others from hearing.
    fn deliver(this: &Rc<RefCell<Self>>, change: Change, source: Source) {
        let ids: Vec<u32> = match this.try_borrow() {
            Ok(l) => l
                .callbacks
                .iter()
                .filter(|(_, _, local)| *local || source == Source::OtherTab)
                .map(|(id, _, _)| *id)
                .collect(),
            Err(_) => return,
        };
        if ids.is_empty() {
            return;
        }
        let event = Object::new();
        let _ = Reflect::set(&event, &"type".into(), &change.as_str().into());
        let source = match source {
            Source::Local => "local",
            Source::OtherTab => "other_tab",
        };
        let _ = Reflect::set(&event, &"source".into(), &source.into());
        // One listener cannot change what the next one is told.
        let event = Object::freeze(&event);
        for id in ids {
            let callback = match this.try_borrow() {
                Ok(l) => l
                    .callbacks
                    .iter()
                    .find(|(i, _, _)| *i == id)
                    .map(|(_, f, _)| f.clone()),
                Err(_) => None,
            };
            if let Some(callback) = callback {
                let _ = callback.call1(&JsValue::UNDEFINED, &event);
            }
        }
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
                if let Some(change) = classify_storage_event(&inner, &event) {
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
            l.page_id = page_id;
        }
        // Pages only: in Node an open BroadcastChannel would keep the process alive.
        let opener = window.as_ref().map(|_| Opener {
            name: format!("superset-job-guard:{namespace}"),
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
            let Some(message) = Message::read(&dom::data(&event)) else {
                return;
            };
            if signed_in_elsewhere(&inner, &message) {
                return;
            }
            if let Some(change) = read_message(&inner, &message) {
                // A 401 another tab's poll met ends nothing here (the app decides), and stops
                // this tab's follow until the next login.
                if change == Change::Unauthorized {
                    if let Some(inner) = inner.upgrade() {
                        if let Ok(mut guard) = inner.try_borrow_mut() {
                            guard.stop_follow();
                        }
                    }
                } else {
                    end_session_here(&inner);
                }
                Listeners::notify(&listeners, change, Source::OtherTab);
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
        let message = Object::new();
        let _ = Reflect::set(&message, &"type".into(), &kind.into());
        let _ = Reflect::set(&message, &"shared".into(), &shared.into());
        let text = |v: Option<&str>| v.map_or(JsValue::NULL, JsValue::from_str);
        let user = session.and_then(|s| s.user_id.as_deref());
        let guest = session.and_then(|s| s.guest_key.as_deref());
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

/// The message type of [`TabSync::signed_in`].
const SIGNED_IN: &str = "signed_in";

/// A message from another tab, as [`TabSync::post`] writes it. (Its `shared` flag, which
/// guards of earlier versions read, is not needed here: a guard whose storage is the origin's
/// believes storage, not the message.)
struct Message {
    kind: String,
    user: Option<String>,
    guest: Option<String>,
}

impl Message {
    fn read(data: &JsValue) -> Option<Self> {
        let field = |k: &str| Reflect::get(data, &JsValue::from_str(k)).ok();
        Some(Message {
            kind: field("type")?.as_string()?,
            user: field("userId").and_then(|v| v.as_string()),
            guest: field("guestKey").and_then(|v| v.as_string()),
        })
    }

    /// Whether it names `session`'s user or guest.
    fn names(&self, session: &Session) -> bool {
        session.user_id.as_deref() == self.user.as_deref()
            && session.guest_key.as_deref() == self.guest.as_deref()
    }
}

/// Whether `message` is another tab's [`TabSync::signed_in`]. That, or a `user_changed` naming
/// this tab's own session (another tab's first login as the same user), resumes a `follow()`
/// a 401 stopped here; a `user_changed` is then read as any message is (`false`).
fn signed_in_elsewhere(inner: &Host, message: &Message) -> bool {
    let consumed = message.kind == SIGNED_IN;
    if !consumed && message.kind != Change::UserChanged.as_str() {
        return false;
    }
    let Some(inner) = inner.upgrade() else {
        return consumed;
    };
    let wake = inner.try_borrow_mut().ok().and_then(|mut guard| {
        let ours = guard.store().session().is_some_and(|s| message.names(&s));
        ours.then(|| guard.resume_follow()).flatten()
    });
    if let Some(wake) = wake {
        let _ = wake.call0(&JsValue::UNDEFINED);
    }
    consumed
}

/// What a message from another tab means for this guard: a logout, a sign-in as another user
/// than this tab's session, or a 401 another tab's poll of this session met. `None` when this
/// tab has no session, or the same user signed in; and, for a guard whose storage is the
/// origin's, for a logout or a sign-in: what another tab says is believed only where storage
/// agrees, and a change in storage reaches this tab by its `storage` event (page code can post
/// any message on the channel; it cannot end a session that storage still holds).
fn read_message(inner: &Host, message: &Message) -> Option<Change> {
    let change = Change::parse(&message.kind)?;
    let inner = inner.upgrade()?;
    let mut guard = inner.try_borrow_mut().ok()?;
    if change != Change::Unauthorized && guard.store().storage_status().kind != StorageMode::Memory
    {
        return None;
    }
    let same = message.names(&guard.store().session()?);
    match change {
        Change::Logout => Some(Change::Logout),
        Change::Unauthorized if same => Some(Change::Unauthorized),
        Change::UserChanged if !same => Some(Change::UserChanged),
        _ => None,
    }
}

/// What a `storage` event from another tab means for this guard, if anything.
fn classify_storage_event(inner: &Host, event: &StorageEvent) -> Option<Change> {
    let inner = inner.upgrade()?;
    let mut guard = inner.try_borrow_mut().ok()?;
    if guard.store().storage_status().kind == StorageMode::Memory {
        return None; // not our storage
    }
    // Values the page made unreadable (a replaced getter) leave the event unheard: every call
    // reads storage again anyway.
    let Some(key) = dom::storage_key(event)? else {
        // localStorage.clear() in another tab.
        return Some(match guard.store().session() {
            None => Change::Logout,
            Some(_) => Change::UserChanged,
        });
    };
    if !guard.store().owns_key(&key) {
        return None;
    }
    if !guard.store().is_session_key(&key) {
        return Some(Change::JobsChanged);
    }
    // The marker's old and new text, read as gloo-storage wrote it.
    let read = |v: Option<String>| v.as_deref().and_then(Session::from_stored);
    let (old, new) = dom::storage_values(event)?;
    match (read(old), read(new)) {
        (_, None) => Some(Change::Logout),
        (Some(old), Some(new)) if old.same_identity(&new) => Some(Change::JobsChanged),
        _ => Some(Change::UserChanged),
    }
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
