//! The origin's other tabs: their logouts, user switches and new jobs reach this guard through
//! the `storage` event (for `localStorage`) and a `BroadcastChannel` (which also reaches tabs
//! whose storage fell back to memory), and the app hears of them through `onChange`.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{BroadcastChannel, MessageEvent, StorageEvent};

use super::guard::Inner;
use crate::core::fallback::StorageMode;
use crate::core::session::Session;

/// What changed in another tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Logout,
    UserChanged,
    JobsChanged,
}

impl Change {
    fn as_str(self) -> &'static str {
        match self {
            Change::Logout => "logout",
            Change::UserChanged => "user_changed",
            Change::JobsChanged => "jobs_changed",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "logout" => Some(Change::Logout),
            "user_changed" => Some(Change::UserChanged),
            "jobs_changed" => Some(Change::JobsChanged),
            _ => None,
        }
    }
}

/// The app's `onChange` callbacks, kept apart from the guard's state so that calling them
/// never holds a borrow of it.
#[derive(Default)]
pub struct Listeners {
    next_id: u32,
    callbacks: Vec<(u32, Function)>,
}

impl Listeners {
    pub fn add(this: &Rc<RefCell<Self>>, callback: Function) -> JsValue {
        let id = {
            let Ok(mut l) = this.try_borrow_mut() else {
                return JsValue::UNDEFINED;
            };
            l.next_id = l.next_id.wrapping_add(1);
            let id = l.next_id;
            l.callbacks.push((id, callback));
            id
        };
        let weak = Rc::downgrade(this);
        Closure::once_into_js(move || {
            if let Some(l) = weak.upgrade() {
                if let Ok(mut l) = l.try_borrow_mut() {
                    l.callbacks.retain(|(i, _)| *i != id);
                }
            }
        })
    }

    fn notify(this: &Rc<RefCell<Self>>, change: Change) {
        let callbacks: Vec<Function> = match this.try_borrow() {
            Ok(l) => l.callbacks.iter().map(|(_, f)| f.clone()).collect(),
            Err(_) => return,
        };
        let event = Object::new();
        let _ = Reflect::set(&event, &"type".into(), &change.as_str().into());
        for callback in callbacks {
            // One throwing callback must not keep the others from hearing.
            let _ = callback.call1(&JsValue::UNDEFINED, &event);
        }
    }
}

/// The listeners a guard registered; dropping it (the guard's `free()`) removes them.
pub struct TabSync {
    channel: Option<BroadcastChannel>,
    on_message: Option<Closure<dyn FnMut(MessageEvent)>>,
    on_storage: Option<Closure<dyn FnMut(StorageEvent)>>,
}

impl TabSync {
    /// Listens for other tabs' changes to the guard's namespace.
    pub fn start(
        namespace: &str,
        inner: Weak<RefCell<Inner>>,
        listeners: Rc<RefCell<Listeners>>,
    ) -> Self {
        let window = web_sys::window();
        let on_storage = window.as_ref().map(|window| {
            let inner = inner.clone();
            let listeners = Rc::clone(&listeners);
            let closure = Closure::<dyn FnMut(StorageEvent)>::new(move |event: StorageEvent| {
                if let Some(change) = classify_storage_event(&inner, &event) {
                    apply(&inner, &listeners, change);
                }
            });
            let _ = window
                .add_event_listener_with_callback("storage", closure.as_ref().unchecked_ref());
            closure
        });
        // Pages only: in Node an open BroadcastChannel would keep the process alive.
        let channel = window
            .as_ref()
            .and_then(|_| BroadcastChannel::new(&format!("superset-job-guard:{namespace}")).ok());
        let on_message = channel.as_ref().map(|channel| {
            let closure = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                let data = event.data();
                let field = |k: &str| Reflect::get(&data, &JsValue::from_str(k)).ok();
                let Some(change) = field("type")
                    .and_then(|v| v.as_string())
                    .and_then(|s| Change::parse(&s))
                else {
                    return;
                };
                let sender_local = field("local").and_then(|v| v.as_bool()).unwrap_or(false);
                // Between two localStorage tabs the storage event already told us.
                if sender_local && mode_of(&inner).is_some_and(|m| m != StorageMode::Memory) {
                    return;
                }
                apply(&inner, &listeners, change);
            });
            channel.set_onmessage(Some(closure.as_ref().unchecked_ref()));
            closure
        });
        Self {
            channel,
            on_message,
            on_storage,
        }
    }

    /// Tells the other tabs what this one changed.
    pub fn announce(&self, change: Change, local: bool) {
        if let Some(channel) = &self.channel {
            let message = Object::new();
            let _ = Reflect::set(&message, &"type".into(), &change.as_str().into());
            let _ = Reflect::set(&message, &"local".into(), &local.into());
            let _ = channel.post_message(&message);
        }
    }
}

impl Drop for TabSync {
    fn drop(&mut self) {
        if let (Some(window), Some(closure)) = (web_sys::window(), &self.on_storage) {
            let _ = window
                .remove_event_listener_with_callback("storage", closure.as_ref().unchecked_ref());
        }
        if let Some(channel) = &self.channel {
            channel.set_onmessage(None);
            channel.close();
        }
        self.on_message = None;
    }
}

fn mode_of(inner: &Weak<RefCell<Inner>>) -> Option<StorageMode> {
    let inner = inner.upgrade()?;
    let guard = inner.try_borrow().ok()?;
    Some(guard.store.storage_status().kind)
}

/// What a `storage` event from another tab means for this guard, if anything.
fn classify_storage_event(inner: &Weak<RefCell<Inner>>, event: &StorageEvent) -> Option<Change> {
    let inner = inner.upgrade()?;
    let mut guard = inner.try_borrow_mut().ok()?;
    if guard.store.storage_status().kind == StorageMode::Memory {
        return None; // not our storage
    }
    let Some(key) = event.key() else {
        // localStorage.clear() in another tab.
        return Some(match guard.store.session() {
            None => Change::Logout,
            Some(_) => Change::UserChanged,
        });
    };
    if !guard.store.owns_key(&key) {
        return None;
    }
    if !guard.store.is_session_key(&key) {
        return Some(Change::JobsChanged);
    }
    let read = |v: Option<String>| v.as_deref().and_then(Session::from_stored);
    match (read(event.old_value()), read(event.new_value())) {
        (_, None) => Some(Change::Logout),
        (Some(old), Some(new)) if old.user_id == new.user_id => Some(Change::JobsChanged),
        _ => Some(Change::UserChanged),
    }
}

/// Drops what this tab kept in memory for a session that ended elsewhere, then tells the app.
fn apply(inner: &Weak<RefCell<Inner>>, listeners: &Rc<RefCell<Listeners>>, change: Change) {
    if matches!(change, Change::Logout | Change::UserChanged) {
        if let Some(inner) = inner.upgrade() {
            if let Ok(mut guard) = inner.try_borrow_mut() {
                if guard.store.storage_status().kind == StorageMode::Memory {
                    // A memory-only tab's session is its own copy of the ended one: end it.
                    guard.store.logout();
                } else {
                    guard.store.forget_memory();
                }
            }
        }
    }
    Listeners::notify(listeners, change);
}
