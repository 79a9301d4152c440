//! The app's `onChange` and `subscribe` listeners of one guard: each change handed to them once,
//! outside any borrow of the guard, queued while a delivery runs. A change this guard makes
//! also goes to the page's other guards ([`super::tabs`] hands it on).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;

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

/// A guard's id among the page's guards, and the function that hands a change it made to the
/// others.
pub(super) type PageMember = (u32, fn(u32, Change));

/// The app's `onChange` and `subscribe` callbacks, kept apart from the guard's state so that
/// calling them never holds a borrow of it.
#[derive(Default)]
pub struct Listeners {
    /// This guard's id among the page's guards, and what hands the changes it makes to them
    /// (set by [`TabSync::start`](super::tabs::TabSync::start)).
    pub(super) page: Option<PageMember>,
    /// Runs after each delivery: `waitFor`'s waiters re-read the records
    /// ([`waiting::hook`](super::waiting::hook)).
    pub(super) after: Option<Rc<dyn Fn()>>,
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
                if let Some((id, tell)) = this.try_borrow().ok().and_then(|l| l.page) {
                    tell(id, change);
                }
            }
        }
        let after = match this.try_borrow_mut() {
            Ok(mut l) => {
                l.queue.clear();
                l.delivering = false;
                l.after.clone()
            }
            Err(_) => None,
        };
        if let Some(after) = after {
            after();
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
