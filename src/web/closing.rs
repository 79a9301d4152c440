//! The page's guards, and the page's end decided for the whole browser.
//!
//! Every guard of the page is listed here (weakly). When the page goes (`pagehide` that does
//! not enter the back/forward cache) one listener decides, over every guard's waiters and the
//! jobs other tabs await (their wait entries in storage), what to cancel
//! ([`at_page_end`]): each job at most once, none that a waiter of another tab, a waiter of
//! another guard or any waiter with `cancelOnClose: false` awaits, none whose `cancel()` is in
//! flight. Each is sent by the guard whose waiter would cancel it, with
//! `fetch(…, { keepalive: true })`, through the same request `cancel()` sends (its endpoint,
//! that guard's headers and `fetch`, the tab id recorded at submit). Best effort: no retry, no
//! answer read. The page's wait entries go with it. An abort asks the same question of the
//! page's other guards ([`others`]).

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::cancel;
use super::dom;
use super::http::{clear_timeout, fetch_of, set_timeout, Request};
use super::state::Inner;
use crate::core::awaited::{at_page_end, GuardWaits};
use crate::core::query::STOP_DELIVERY_MS;
use crate::core::random::Random;
use crate::core::waiters::Waiters;

/// The page: its token (the prefix of its guards' wait entries), its guards, its listener.
#[derive(Default)]
struct Page {
    token: Option<String>,
    next: u32,
    guards: Vec<(u32, Weak<RefCell<Inner>>)>,
    on_pagehide: Option<Closure<dyn FnMut(JsValue)>>,
}

thread_local! {
    static PAGE: RefCell<Page> = RefCell::new(Page::default());
}

/// This page's token: random, made once (`[0-9a-z]`, 11 characters).
fn page_token(page: &mut Page) -> String {
    page.token
        .get_or_insert_with(|| {
            let mut random = super::random::MathRandom;
            let mut n = (random.next_f64() * 9_007_199_254_740_992.0) as u64;
            let mut token = String::new();
            for _ in 0..11 {
                let digit = (n % 36) as u32;
                token.extend(char::from_digit(digit, 36));
                n /= 36;
            }
            token
        })
        .clone()
}

/// Lists a guard among the page's (the constructor does); its number on the page.
pub(super) fn join(inner: &Rc<RefCell<Inner>>) -> u32 {
    PAGE.with(|page| {
        let Ok(mut page) = page.try_borrow_mut() else {
            return 0;
        };
        page.guards.retain(|(_, g)| g.strong_count() > 0);
        page.next = page.next.wrapping_add(1);
        let n = page.next;
        page.guards.push((n, Rc::downgrade(inner)));
        n
    })
}

/// Takes a guard off the page's list (its `free()`): a freed guard awaits nothing, though a
/// cancel of its may still be running.
pub(super) fn leave(n: u32) {
    PAGE.with(|page| {
        if let Ok(mut page) = page.try_borrow_mut() {
            page.guards
                .retain(|(id, g)| *id != n && g.strong_count() > 0);
        }
    });
}

/// The token of guard `n`'s wait entry: `<page>-<n>`.
pub(super) fn token_of(n: u32) -> String {
    [this_page(), "-".to_owned(), n.to_string()].concat()
}

/// This page's token (the prefix of every wait entry of its guards).
pub(super) fn this_page() -> String {
    PAGE.with(|page| {
        page.try_borrow_mut()
            .map(|mut p| page_token(&mut p))
            .unwrap_or_default()
    })
}

/// The page's guards other than `me` that are alive.
fn guards(me: Option<&Rc<RefCell<Inner>>>) -> Vec<Rc<RefCell<Inner>>> {
    PAGE.with(|page| {
        page.try_borrow()
            .map(|p| {
                p.guards
                    .iter()
                    .filter_map(|(_, g)| g.upgrade())
                    .filter(|g| me.is_none_or(|me| !Rc::ptr_eq(g, me)))
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// One guard's waiters and the jobs it is cancelling, copied; `None` while it is busy (a call of
/// it is running further up the stack).
pub(super) type View = (Waiters, Vec<String>);

fn view_of(guard: &Rc<RefCell<Inner>>) -> Option<View> {
    let g = guard.try_borrow().ok()?;
    let cancelling = g.cancels.iter().map(|(id, _)| id.clone()).collect();
    Some((g.waiting.rules.clone(), cancelling))
}

fn views(list: &[View]) -> Vec<GuardWaits<'_>> {
    list.iter()
        .map(|(waiters, cancelling)| GuardWaits {
            waiters,
            cancelling,
        })
        .collect()
}

/// The page's other guards than `me`, as an abort's decision sees them; `None` if one is busy
/// (the abort is then decided once that call has returned).
pub(super) fn others(me: &Rc<RefCell<Inner>>) -> Option<Vec<View>> {
    guards(Some(me)).iter().map(view_of).collect()
}

/// Runs `f` with `list` as the decision's views.
pub(super) fn with_views<T>(list: &[View], f: impl FnOnce(&[GuardWaits]) -> T) -> T {
    f(&views(list))
}

/// Listens for the page's end (once per page).
pub(super) fn watch_page() {
    PAGE.with(|page| {
        let Ok(mut page) = page.try_borrow_mut() else {
            return;
        };
        if page.on_pagehide.is_some() {
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
        page.on_pagehide = Some(listener);
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
            stops.push(super::query::stop_all(
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
        let _ = super::query::send_stops(stop);
    }
}

/// Sends each request with `fetch(…, { keepalive: true })`: best effort, its answer not read.
/// The promise settles (with `undefined`, never rejecting)
/// once every one of them is answered or failed, or [`STOP_DELIVERY_MS`] after, whichever is
/// first: a `fetch` that never settles holds nobody.
pub(super) fn send_keepalive(requests: Vec<(Request, Option<js_sys::Function>)>) -> Promise {
    let global = js_sys::global();
    let sent = js_sys::Array::new();
    for (request, fetch) in requests {
        let Some(fetch) = fetch_of(fetch.as_ref()) else {
            continue;
        };
        let _ = Reflect::set(
            &request.init,
            &JsValue::from_str("keepalive"),
            &JsValue::TRUE,
        );
        if let Ok(answer) = fetch.call2(&global, &JsValue::from_str(&request.url), &request.init) {
            // A thenable that throws when read is a settled one here.
            sent.push(&Promise::resolve(&answer));
        }
    }
    let mut timer = None;
    let bound = Promise::new(&mut |resolve, _reject| {
        timer = set_timeout(&resolve, f64::from(STOP_DELIVERY_MS)).ok();
    });
    let delivered = Promise::race(&js_sys::Array::of2(&Promise::all_settled(&sent), &bound));
    wasm_bindgen_futures::future_to_promise(async move {
        // Neither promise rejects; an answer is not read, a rejection is not the page's.
        let _ = wasm_bindgen_futures::JsFuture::from(delivered).await;
        if let Some(id) = timer {
            let _ = clear_timeout(&id);
        }
        Ok(JsValue::UNDEFINED)
    })
}
