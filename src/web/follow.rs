//! `follow()`: the guard keeps the session's records current from Superset's event stream,
//! with one poller for all the tabs of a browser. (The `follow` feature, on by default and in
//! the package.)
//!
//! The tabs of one origin and namespace elect a leader with the Web Locks API: each tab that
//! follows asks for the lock `superset-job-guard:<namespace>:follow`, and only the one holding
//! it polls; the others learn every change through storage, as they always do (`subscribe`,
//! `useJobs`). When the leader's tab closes, the browser hands the lock to the next tab in
//! line. Without `navigator.locks` (an insecure context, an old browser), or with storage that
//! is this guard's alone, each tab polls for itself.
//!
//! The leader polls only while the session has a record of the guard's contract that has not
//! ended; otherwise it waits for a change (a record written by any tab, a login). The rules
//! (cadence, cursors, what an answer means) are the core's ([`crate::core::follow`]); the
//! requests go through the guard's HTTP client ([`super::http`]), as the cancel's do: the
//! same headers, the app's `fetch`, bounded reads, a timeout, and an abort that ends a request
//! in flight.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal};

use super::clock::DateClock;
use super::clock::{clear_timeout, set_timeout};
use super::dom;
use super::listeners::Listeners;
use super::poll::{once, Cursor, Next};
use super::state::Inner;
use super::tabs::TabHost;
use crate::core::clock::Clock;
use crate::core::fallback::StorageMode;
use crate::core::follow::{Cadence, FollowOptions};
use crate::core::response::Contract;

#[wasm_bindgen]
extern "C" {
    /// `navigator.locks`, the Web Locks API.
    type LockManager;
    #[wasm_bindgen(method, catch)]
    fn request(
        this: &LockManager,
        name: &str,
        options: &Object,
        callback: &JsValue,
    ) -> Result<Promise, JsValue>;
}

/// `navigator.locks`, if the page has it.
fn locks() -> Option<LockManager> {
    let navigator = Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).ok()?;
    let locks = Reflect::get(&navigator, &JsValue::from_str("locks")).ok()?;
    let request = Reflect::get(&locks, &JsValue::from_str("request")).ok()?;
    request.is_function().then(|| locks.unchecked_into())
}

/// `follow(options)`: a holder of the loop (started if it is not running); returns the function
/// that lets this holder go. Other holders (another `follow()`, a provider's, the waiters')
/// keep it running; the last one's `stop` stops it.
pub fn start(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    options: Option<FollowOptions>,
) -> Result<Function, JsValue> {
    let id = hold(inner, listeners, options)?;
    let weak = Rc::downgrade(inner);
    let stop = Closure::<dyn FnMut()>::new(move || {
        if let Some(inner) = weak.upgrade() {
            release(&inner, id);
        }
    });
    Ok(stop.into_js_value().unchecked_into())
}

/// Adds a holder (`options`: its cadence, or `None` for Superset's); starts the loop if it is
/// not running. The holder's id.
pub fn hold(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    options: Option<FollowOptions>,
) -> Result<u32, JsValue> {
    let id = inner
        .try_borrow_mut()
        .map_err(|_| JsValue::from_str("the guard is busy"))?
        .following
        .holders
        .hold(options);
    watch_page(inner, listeners);
    run(inner, listeners)?;
    Ok(id)
}

/// Starts the loop if anybody holds it and it is not running (nor let go for the back/forward
/// cache).
fn run(inner: &Rc<RefCell<Inner>>, listeners: &Rc<RefCell<Listeners>>) -> Result<(), JsValue> {
    let signal = {
        let Ok(mut guard) = inner.try_borrow_mut() else {
            return Ok(());
        };
        if guard.stream_absent {
            return Ok(());
        }
        let following = &mut guard.following;
        if following.running.is_some() || following.paused || following.holders.is_empty() {
            return Ok(());
        }
        let controller = AbortController::new()?;
        let signal = dom::signal_of(&controller).ok_or_else(|| JsValue::from_str("no signal"))?;
        following.running = Some(controller);
        signal
    };
    let weak = Rc::downgrade(inner);
    let listeners = Rc::downgrade(listeners);
    wasm_bindgen_futures::spawn_local(lead(weak, listeners, signal));
    Ok(())
}

/// A page kept in the back/forward cache is frozen: its loop would hold the browser's poller
/// lock and poll for nobody. At `pagehide` into the cache the loop goes (its lock with it, so
/// another tab takes over); at `pageshow` out of it, it runs again while anybody holds it.
fn watch_page(inner: &Rc<RefCell<Inner>>, listeners: &Rc<RefCell<Listeners>>) {
    let Ok(mut guard) = inner.try_borrow_mut() else {
        return;
    };
    if guard.following.on_page.is_some() {
        return;
    }
    let Some(page) = dom::page() else {
        return;
    };
    let persisted = |event: &JsValue| {
        Reflect::get(event, &JsValue::from_str("persisted"))
            .ok()
            .and_then(|p| p.as_bool())
            .unwrap_or(false)
    };
    let hide = {
        let me = Rc::downgrade(inner);
        Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            let Some(inner) = me.upgrade().filter(|_| persisted(&event)) else {
                return;
            };
            let stop = inner.try_borrow_mut().ok().and_then(|mut g| {
                g.following.paused = true;
                g.following.running.take()
            });
            if let Some(controller) = stop {
                dom::abort(&controller);
            }
        })
    };
    let show = {
        let me = Rc::downgrade(inner);
        let listeners = Rc::downgrade(listeners);
        Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
            let (Some(inner), Some(listeners)) = (me.upgrade(), listeners.upgrade()) else {
                return;
            };
            if !persisted(&event) {
                return;
            }
            if let Ok(mut g) = inner.try_borrow_mut() {
                g.following.paused = false;
            }
            let _ = run(&inner, &listeners);
        })
    };
    let _ = page.add_event_listener_with_callback("pagehide", hide.as_ref().unchecked_ref());
    let _ = page.add_event_listener_with_callback("pageshow", show.as_ref().unchecked_ref());
    guard.following.on_page = Some((page, hide, show));
}

/// Removes the page's listeners (the guard's `free()`).
pub fn unwatch_page(inner: &Rc<RefCell<Inner>>) {
    let taken = inner
        .try_borrow_mut()
        .ok()
        .and_then(|mut g| g.following.on_page.take());
    if let Some((page, hide, show)) = taken {
        let _ = page.remove_event_listener_with_callback("pagehide", hide.as_ref().unchecked_ref());
        let _ = page.remove_event_listener_with_callback("pageshow", show.as_ref().unchecked_ref());
    }
}

/// Lets holder `id` go; the loop stops when nobody holds it. (A second call is harmless.)
pub fn release(inner: &Rc<RefCell<Inner>>, id: u32) {
    let stop = match inner.try_borrow_mut() {
        Ok(mut guard) => release_in(&mut guard, id),
        Err(_) => {
            // Inside one of the guard's calls: once it has returned.
            let weak = Rc::downgrade(inner);
            let run = Closure::once_into_js(move || {
                if let Some(inner) = weak.upgrade() {
                    release(&inner, id);
                }
            });
            let _ = set_timeout(run.unchecked_ref(), 0.0);
            None
        }
    };
    if let Some(controller) = stop {
        dom::abort(&controller);
    }
}

/// [`release`] within a borrow: the loop's controller to abort (outside it) when nobody holds
/// it any more.
pub fn release_in(guard: &mut Inner, id: u32) -> Option<AbortController> {
    let following = &mut guard.following;
    (following.holders.release(id) && following.holders.is_empty())
        .then(|| following.running.take())
        .flatten()
}

/// A login, or the end of the session: a follow that a 401 stopped resumes (woken outside the
/// borrow); without a session it waits, as any follow does, for the next login.
pub fn resume(inner: &Rc<RefCell<Inner>>) {
    let wake = match inner.try_borrow_mut() {
        Ok(mut guard) => guard.resume_follow(),
        Err(_) => None,
    };
    if let Some(wake) = wake {
        let _ = wake.call0(&JsValue::UNDEFINED);
    }
}

/// Waits to lead (or leads at once where there is no lock to share), then polls until
/// stopped.
async fn lead(
    inner: Weak<RefCell<Inner>>,
    listeners: Weak<RefCell<Listeners>>,
    signal: AbortSignal,
) {
    let name = {
        let Some(state) = inner.upgrade() else { return };
        let Ok(guard) = state.try_borrow() else {
            return;
        };
        let shared = guard.store.storage_status().kind != StorageMode::Memory;
        // One lock per stream: a guard of the other contract in the namespace polls its own.
        let contract = match guard.options.contract {
            Contract::AsyncEvent => "async_event",
            Contract::Task => "task",
        };
        shared.then(|| {
            [
                "superset-job-guard:",
                &guard.options.namespace,
                ":follow:",
                contract,
            ]
            .concat()
        })
    };
    let locks = name.as_ref().and_then(|_| locks());
    let (Some(locks), Some(name)) = (locks, name) else {
        poll(inner, listeners, &signal).await;
        return;
    };
    let (acquired, on_acquired) = deferred();
    let (released, release) = deferred();
    let held = released.clone();
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = on_acquired.call0(&JsValue::UNDEFINED);
        held.into()
    });
    let lock_options = Object::new();
    let _ = Reflect::set(&lock_options, &JsValue::from_str("signal"), &signal);
    let Ok(requested) = locks.request(&name, &lock_options, &callback) else {
        // A lock manager that refuses: follow without one.
        poll(inner, listeners, &signal).await;
        return;
    };
    // The request rejects when `stop()` aborts it before the lock comes.
    let won = JsFuture::from(Promise::race(&Array::of2(&acquired, &requested))).await;
    if won.is_ok() && !dom::is_aborted(&signal) {
        poll(inner, listeners, &signal).await;
    }
    let _ = release.call0(&JsValue::UNDEFINED);
    // The settled request must not be reported as an unhandled rejection.
    let _ = JsFuture::from(requested).await;
}

/// A promise and the function that resolves it.
fn deferred() -> (Promise, Function) {
    let mut resolver = None;
    let promise = Promise::new(&mut |resolve, _reject| resolver = Some(resolve));
    let resolve = resolver.unwrap_or_else(|| Function::from(JsValue::UNDEFINED));
    (promise, resolve)
}

/// The cadence the holders ask for now.
fn options_of(inner: &Weak<RefCell<Inner>>) -> Option<FollowOptions> {
    let state = inner.upgrade()?;
    let guard = state.try_borrow().ok()?;
    Some(guard.following.holders.options())
}

/// Polls while there is something to follow, until stopped. The holders' cadence is read
/// before each poll: a holder that came or went with other options changes it from then on.
async fn poll(
    inner: Weak<RefCell<Inner>>,
    listeners: Weak<RefCell<Listeners>>,
    signal: &AbortSignal,
) {
    let mut options = options_of(&inner).unwrap_or_default();
    let mut cadence = Cadence::new(options);
    let mut cursor = Cursor::new(inner.upgrade().is_some_and(|state| {
        state
            .try_borrow()
            .is_ok_and(|g| g.store.storage_status().kind != StorageMode::Memory)
    }));
    // When the last poll went out, and until when a failure's backoff holds.
    let mut last_poll = None;
    let mut backoff_until = None;
    loop {
        if dom::is_aborted(signal) {
            return;
        }
        if let Some(now) = options_of(&inner).filter(|o| *o != options) {
            options = now;
            cadence = Cadence::new(options);
        }
        let started = DateClock.now_ms();
        let next = match inner.upgrade() {
            Some(state) => once(&state, &listeners, &mut cadence, &mut cursor, signal).await,
            None => Next::End,
        };
        let mut wait = match next {
            Next::End => {
                // The waiters hear why (a stream that is not there settles them).
                let after = listeners
                    .upgrade()
                    .and_then(|l| l.try_borrow().ok().and_then(|l| l.after.clone()));
                if let Some(after) = after {
                    after();
                }
                return;
            }
            Next::Wait(ms) => {
                last_poll = Some(started);
                let now = DateClock.now_ms();
                backoff_until = cadence.failing().then(|| now.saturating_add(ms));
                Some(ms)
            }
            Next::Idle => None,
        };
        let Some(listeners) = listeners.upgrade() else {
            return;
        };
        // The waiters read their records after every round: one that went without a change
        // this guard could hear (page code removing it in this tab) settles here.
        let after = listeners.try_borrow().ok().and_then(|l| l.after.clone());
        if let Some(after) = after {
            after();
        }
        // Something new (a record written by any tab, a login) brings the next poll forward,
        // but never into a failure's backoff, nor within `intervalMs` of the last poll.
        while wait != Some(0) && wait_for(&inner, &listeners, wait, signal).await {
            wait = Some(cadence.woken(DateClock.now_ms(), last_poll, backoff_until));
        }
    }
}

/// Waits `ms` (or, with `None`, as long as it takes) for a change to the session or its
/// records, here or in another tab, or a login after a 401 (`follow_wake`); `true` if one
/// came. Ends at once when stopped.
async fn wait_for(
    inner: &Weak<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    ms: Option<u64>,
    signal: &AbortSignal,
) -> bool {
    if dom::is_aborted(signal) {
        return false;
    }
    let changed = JsValue::from(Object::new());
    let mut timer = None;
    let mut wake = None;
    let mut unsubscribe = JsValue::UNDEFINED;
    let promise = Promise::new(&mut |resolve, _reject| {
        let on_change: Function = resolve
            .bind1(&JsValue::UNDEFINED, &changed)
            .unchecked_into();
        unsubscribe = Listeners::add(listeners, on_change.clone(), true);
        if let Some(state) = inner.upgrade() {
            if let Ok(mut guard) = state.try_borrow_mut() {
                guard.follow_wake = Some(on_change);
            }
        }
        if let Some(ms) = ms {
            timer = set_timeout(&resolve, ms as f64).ok();
        }
        let _ = signal.add_event_listener_with_callback("abort", &resolve);
        wake = Some(resolve);
    });
    let result = JsFuture::from(promise).await;
    if let Some(state) = inner.upgrade() {
        if let Ok(mut guard) = state.try_borrow_mut() {
            guard.follow_wake = None;
        }
    }
    if let Some(id) = timer {
        let _ = clear_timeout(&id);
    }
    if let Some(wake) = &wake {
        let _ = signal.remove_event_listener_with_callback("abort", wake);
    }
    if let Some(unsubscribe) = unsubscribe.dyn_ref::<Function>() {
        let _ = unsubscribe.call0(&JsValue::UNDEFINED);
    }
    matches!(result, Ok(v) if Object::is(&v, &changed))
}
