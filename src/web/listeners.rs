//! The app's `onChange` and `subscribe` listeners of each guard: the machine says what changed
//! ([`Effect::Notify`](crate::core::machine::Effect::Notify)), and each listener that hears
//! it is called with one frozen `{ type, source }`, outside any borrow. A listener may
//! unsubscribe, call the guard, or throw: the others still hear. A change made from inside a
//! listener is handed out after the current one, never from inside it; listeners that keep
//! changing the session from inside their own calls (a ping-pong of sign-ins) are cut off
//! after [`MAX_DELIVERIES`] changes in one delivery.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::exec::{handles, Handles};
use crate::core::machine::GuardId;
use crate::core::tabs::{Change, Source};

/// A change to the session or its records, as `subscribe` and `onChange` (which hears
/// `other_tab` only) hand it to their listeners, frozen: `jobs_changed` also when the same
/// user's session took a new channel.
#[derive(tsify::Tsify)]
#[allow(dead_code)] // a type for TypeScript only: `notify` builds the objects
#[tsify(type = "{ readonly type: GuardChangeType; readonly source: GuardChangeSource }")]
pub struct GuardChange;

/// How many changes one delivery hands out at most.
const MAX_DELIVERIES: usize = 64;

thread_local! {
    static DELIVERING: Cell<bool> = const { Cell::new(false) };
    static QUEUE: RefCell<VecDeque<(GuardId, Change, Source)>> = const { RefCell::new(VecDeque::new()) };
}

/// Adds `callback` to guard `guard`'s listeners (`local`: it hears this tab's own changes
/// too); the function that removes it (harmless to call twice).
pub(super) fn add(guard: GuardId, callback: Function, local: bool) -> JsValue {
    let id = handles(|h| {
        let id = h.next();
        let g = h.guard(guard)?;
        g.listeners.push((id, callback, local));
        Some(id)
    })
    .flatten();
    let Some(id) = id else {
        return JsValue::UNDEFINED;
    };
    Closure::<dyn FnMut()>::new(move || {
        handles(|h: &mut Handles| {
            if let Some(g) = h.guard(guard) {
                g.listeners.retain(|(i, _, _)| *i != id);
            }
        });
    })
    .into_js_value()
}

/// Hands `change` to guard `guard`'s listeners: now, or after the delivery running.
pub(super) fn notify(guard: GuardId, change: Change, source: Source) {
    QUEUE.with(|q| {
        if let Ok(mut q) = q.try_borrow_mut() {
            if q.len() < MAX_DELIVERIES {
                q.push_back((guard, change, source));
            }
        }
    });
    if DELIVERING.with(Cell::get) {
        return;
    }
    DELIVERING.with(|d| d.set(true));
    for _ in 0..MAX_DELIVERIES {
        let next = QUEUE.with(|q| q.try_borrow_mut().ok().and_then(|mut q| q.pop_front()));
        let Some((guard, change, source)) = next else {
            break;
        };
        deliver(guard, change, source);
    }
    QUEUE.with(|q| {
        if let Ok(mut q) = q.try_borrow_mut() {
            q.clear();
        }
    });
    DELIVERING.with(|d| d.set(false));
}

/// Calls guard `guard`'s listeners that hear changes from `source`, each only while still
/// subscribed.
fn deliver(guard: GuardId, change: Change, source: Source) {
    let ids: Vec<u32> = handles(|h| {
        h.guard(guard).map_or_else(Vec::new, |g| {
            g.listeners
                .iter()
                .filter(|(_, _, local)| *local || source == Source::OtherTab)
                .map(|(id, _, _)| *id)
                .collect()
        })
    })
    .unwrap_or_default();
    if ids.is_empty() {
        return;
    }
    let event = Object::new();
    let _ = Reflect::set(&event, &"type".into(), &change.as_str().into());
    let _ = Reflect::set(&event, &"source".into(), &source.as_str().into());
    // One listener cannot change what the next one is told.
    let event = Object::freeze(&event);
    for id in ids {
        let callback = handles(|h| {
            h.guard(guard)?
                .listeners
                .iter()
                .find(|(i, _, _)| *i == id)
                .map(|(_, f, _)| f.clone())
        })
        .flatten();
        if let Some(callback) = callback {
            let _ = callback.call1(&JsValue::UNDEFINED, &event);
        }
    }
}
