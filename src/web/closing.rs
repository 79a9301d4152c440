//! `waitFor()` at the page's end: while anything waits, a `pagehide` listener; when the page
//! goes (not into the back/forward cache), each job its waiters await with `cancelOnClose` (the
//! waiter's, or the guard's option) and none awaits without it, that the session may cancel, is
//! cancelled with `fetch(…, { keepalive: true })`, through the
//! same request `cancel()` sends (its endpoint, the guard's headers, the tab id recorded at
//! submit). Best effort: no retry, no answer read.

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use super::cancel;
use super::dom;
use super::http::fetch_of;
use super::state::Inner;

/// Listens for the page's end while anything waits.
pub(super) fn watch_page(inner: &Rc<RefCell<Inner>>) {
    let Ok(mut guard) = inner.try_borrow_mut() else {
        return;
    };
    if guard.waiting.on_pagehide.is_some() {
        return;
    }
    let Some(page) = dom::page() else {
        return;
    };
    let listener = {
        let me = Rc::downgrade(inner);
        Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            // Into the back/forward cache: the page may come back, its waiters with it.
            let persisted = Reflect::get(&event, &JsValue::from_str("persisted"))
                .ok()
                .and_then(|p| p.as_bool())
                .unwrap_or(false);
            if !persisted {
                close(&me);
            }
        })
    };
    let _ = page.add_event_listener_with_callback("pagehide", listener.as_ref().unchecked_ref());
    guard.waiting.on_pagehide = Some((page, listener));
}

/// The page is going away: each job [`Waiters::closing`](crate::core::waiters::Waiters::closing)
/// names that the session may cancel is cancelled with a `keepalive` request (best effort: no
/// retry, no answer read).
fn close(me: &Weak<RefCell<Inner>>) {
    let Some(inner) = me.upgrade() else {
        return;
    };
    let (requests, fetch) = {
        let Ok(mut guard) = inner.try_borrow_mut() else {
            return;
        };
        let mut requests = Vec::new();
        for job in guard.waiting.rules.closing() {
            let check = guard.store.check_cancel(&job);
            if check.is_allowed() {
                let contract = cancel::contract_of(&check);
                requests.push(cancel::post_for(&mut guard, &job, contract));
            }
        }
        (requests, guard.fetch.clone())
    };
    let global = js_sys::global();
    let Some(fetch) = fetch_of(fetch.as_ref()) else {
        return;
    };
    for request in requests {
        let _ = Reflect::set(
            &request.init,
            &JsValue::from_str("keepalive"),
            &JsValue::TRUE,
        );
        if let Ok(sent) = fetch.call2(&global, &JsValue::from_str(&request.url), &request.init) {
            // Its answer is not read; a rejection is not the page's unhandled one.
            if let Ok(sent) = sent.dyn_into::<Promise>() {
                wasm_bindgen_futures::spawn_local(async move {
                    let _ = wasm_bindgen_futures::JsFuture::from(sent).await;
                });
            }
        }
    }
}
