//! The page's end, decided for the whole browser.
//!
//! When the page goes (`pagehide` that does not enter the back/forward cache) one listener
//! decides, over every guard's waiters and the jobs other tabs await (their wait entries in
//! storage), what to cancel ([`at_page_end`]): each job at most once, none that a waiter of
//! another tab, a waiter of another guard or any waiter with `cancelOnClose: false` awaits, none
//! whose `cancel()` is in flight. Each is sent by the guard whose waiter would cancel it, with
//! `fetch(…, { keepalive: true })`, through the same request `cancel()` sends (its endpoint,
//! that guard's headers and `fetch`, the tab id recorded at submit). Best effort: no retry, no
//! answer read. The page's running queries are stopped ([`super::query_stop_all::stop_all`]), and
//! its wait entries go with it.

use std::cell::RefCell;

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use super::cancel;
use super::dom;
use super::page::{guards, this_page, view_of, with_views, View};
use super::request::{send_keepalive, Request};
use crate::core::awaited::at_page_end;

/// The page's one `pagehide` listener.
type Listener = Closure<dyn FnMut(JsValue)>;

thread_local! {
    /// The listener, once a guard needs it.
    static ON_PAGEHIDE: RefCell<Option<Listener>> = const { RefCell::new(None) };
}

/// Listens for the page's end (once per page).
pub(super) fn watch_page() {
    ON_PAGEHIDE.with(|slot| {
        let Ok(mut slot) = slot.try_borrow_mut() else {
            return;
        };
        if slot.is_some() {
            return;
        }
        let Some(target) = dom::page() else {
            return;
        };
        let listener = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            // Into the back/forward cache: the page may come back, its waiters with it.
            let persisted = Reflect::get(&event, &JsValue::from_str("persisted"))
                .ok()
                .and_then(|p| p.as_bool())
                .unwrap_or(false);
            if !persisted {
                close();
            }
        });
        let _ =
            target.add_event_listener_with_callback("pagehide", listener.as_ref().unchecked_ref());
        *slot = Some(listener);
    });
}

/// The page is going away: each running synchronous query is stopped and what
/// [`at_page_end`] names is cancelled, with `keepalive` requests, and the page's wait entries
/// are removed.
fn close() {
    let all = guards(None);
    let mut stops = Vec::new();
    for guard in &all {
        if let Ok(mut g) = guard.try_borrow_mut() {
            stops.push(super::query_stop_all::stop_all(
                &mut g,
                crate::core::query::QueryReason::PageEnd,
                &[],
            ));
        }
    }
    let list: Vec<View> = all.iter().map(|g| view_of(g).unwrap_or_default()).collect();
    let page = this_page();
    let mut elsewhere: Vec<String> = Vec::new();
    for guard in &all {
        if let Ok(mut g) = guard.try_borrow_mut() {
            for job in g.store.awaited_elsewhere(&page) {
                if !elsewhere.contains(&job) {
                    elsewhere.push(job);
                }
            }
        }
    }
    let decided = with_views(&list, |views| {
        at_page_end(views, &elsewhere, |at, job| {
            all.get(at)
                .and_then(|g| g.try_borrow_mut().ok())
                .is_some_and(|mut g| g.store.check_cancel(job).is_allowed())
        })
    });
    let mut requests: Vec<(Request, Option<js_sys::Function>)> = Vec::new();
    for (at, job) in decided {
        let Some(mut guard) = all.get(at).and_then(|g| g.try_borrow_mut().ok()) else {
            continue;
        };
        let check = guard.store.check_cancel(&job);
        let contract = cancel::contract_of(&check);
        let request = cancel::post_for(&mut guard, &job, contract);
        requests.push((request, guard.fetch.clone()));
    }
    for guard in &all {
        if let Ok(mut g) = guard.try_borrow_mut() {
            let g = &mut *g;
            if let Some(token) = &g.waiting.entry.token {
                g.store.keep_waits(token, &[]);
            }
            g.waiting.entry.state.closed = true;
        }
    }
    let _ = send_keepalive(requests);
    for stop in stops {
        let _ = super::query_stop_all::send_stops(stop);
    }
}
