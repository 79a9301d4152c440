//! The app's `onChange` and `subscribe` listeners of one guard, and the page's guards: a change
//! any guard of the page makes in storage reaches the page's other guards of its namespace as
//! another tab's would (a page's own writes fire no `storage` event).

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::tabs::{end_session_here, Host};
use crate::core::fallback::StorageMode;
use crate::core::tabs::{Change, Source};

/// A change to the session or its records, as `subscribe` and `onChange` (which hears
/// `other_tab` only) hand it to their listeners, frozen: `jobs_changed` also when the same
/// user's session took a new channel.
#[derive(tsify::Tsify)]
#[allow(dead_code)] // a type for TypeScript only: `Listeners::notify` builds the objects
#[tsify(type = "{ readonly type: GuardChangeType; readonly source: GuardChangeSource }")]
pub struct GuardChange;

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
pub(super) fn join_page(namespace: &str, host: Host, listeners: &Rc<RefCell<Listeners>>) -> u32 {
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

pub(super) fn leave_page(id: u32) {
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
    pub(super) page_id: u32,
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
        let _ = Reflect::set(&event, &"source".into(), &source.as_str().into());
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
