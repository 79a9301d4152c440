//! The executor: the page's one machine ([`Machine`]), and the loop that hands it what happened
//! and does what it says. It keeps only the live handles the effects name ([`Handles`]): no
//! state the machine decides from lives here.
//!
//! No borrow is held while JS runs: the machine is borrowed for one event or call, then let
//! go, and each effect is done after. An event that comes while effects are being done (an
//! abort listener, a `fetch` that throws at once, an app's listener that calls the guard) is
//! queued and handed over after them; a call the app makes meanwhile runs at once, its
//! effects done before it returns.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{AbortController, AbortSignal};

use super::boundary::to_js;
use super::clock::{clear_timeout, set_timeout, DateClock};
use super::random::MathRandom;
use super::storage::Backend;
use crate::core::error::GuardError;
use crate::core::machine::{
    Effect, Event, GuardId, LockId, Machine, Platform, PromiseId, ReqId, Settled, SignalId, TimerId,
};

/// The browser, as the machine runs over it.
pub struct Browser;

impl Platform for Browser {
    type Storage = Backend;
    type Clock = DateClock;
    type Random = MathRandom;
}

/// What a request keeps here: its controller, the answer, and a result parsed for the app.
pub(super) struct Req {
    pub(super) controller: Option<AbortController>,
    pub(super) response: Option<JsValue>,
    pub(super) kept: Option<JsValue>,
    pub(super) limit: crate::core::endpoints::Limit,
}

/// What a guard keeps here: its `fetch` and headers, its listeners.
pub(super) struct GuardHandles {
    pub(super) id: GuardId,
    pub(super) fetch: Option<Function>,
    pub(super) headers: Vec<(String, String)>,
    /// Each listener: its id, the function, and whether it hears this tab's own changes.
    pub(super) listeners: Vec<(u32, Function, bool)>,
}

/// The live handles, by the machine's ids.
#[derive(Default)]
pub(super) struct Handles {
    pub(super) guards: Vec<GuardHandles>,
    pub(super) requests: Vec<(ReqId, Req)>,
    timers: Vec<(TimerId, JsValue)>,
    promises: Vec<(PromiseId, Function, Promise)>,
    signals: Vec<(SignalId, AbortSignal, Function)>,
    /// Each lock asked for: what aborts the asking, and what lets it go once held.
    pub(super) locks: Vec<(LockId, Option<AbortController>, Option<Function>)>,
    /// Each `fetch` the guards were given (`None`: the page's), by its number.
    servers: Vec<Option<Function>>,
    next: u32,
}

impl Handles {
    pub(super) fn next(&mut self) -> u32 {
        self.next = self.next.wrapping_add(1);
        self.next
    }

    pub(super) fn guard(&mut self, id: GuardId) -> Option<&mut GuardHandles> {
        self.guards.iter_mut().find(|g| g.id == id)
    }

    pub(super) fn request(&mut self, req: ReqId) -> Option<&mut Req> {
        self.requests
            .iter_mut()
            .find(|(r, _)| *r == req)
            .map(|(_, h)| h)
    }

    pub(super) fn take_request(&mut self, req: ReqId) -> Option<Req> {
        let at = self.requests.iter().position(|(r, _)| *r == req)?;
        Some(self.requests.remove(at).1)
    }
}

thread_local! {
    static MACHINE: RefCell<Machine<Browser>> = RefCell::new(Machine::new(DateClock, MathRandom));
    pub(super) static HANDLES: RefCell<Handles> = RefCell::new(Handles::default());
    static QUEUE: RefCell<VecDeque<Event>> = const { RefCell::new(VecDeque::new()) };
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` on the handles (a short borrow; `None` inside another).
pub(super) fn handles<T>(f: impl FnOnce(&mut Handles) -> T) -> Option<T> {
    HANDLES.with(|h| h.try_borrow_mut().ok().map(|mut h| f(&mut h)))
}

/// How many `fetch` functions are told apart; the guards of any after them share one number.
const SERVERS: usize = 64;

/// The number of the server a guard sending with `fetch` reaches: one per `fetch` function
/// (what is learned of a server is learned for every guard that reaches it), the first
/// [`SERVERS`] of them told apart.
pub(super) fn server_of(fetch: Option<&Function>) -> u32 {
    handles(|h| {
        let same = |f: &Option<Function>| match (f, fetch) {
            (None, None) => true,
            (Some(a), Some(b)) => Object::is(a, b),
            _ => false,
        };
        match h.servers.iter().position(same) {
            Some(at) => at as u32,
            None if h.servers.len() >= SERVERS => SERVERS as u32,
            None => {
                h.servers.push(fetch.cloned());
                (h.servers.len() - 1) as u32
            }
        }
    })
    .unwrap_or_default()
}

/// The error of a call made while the machine is borrowed (page code reached through storage
/// calling the guard).
fn busy() -> JsValue {
    GuardError::Internal("the guard was called from inside one of its own calls".to_owned()).into()
}

/// Runs an app's call on the machine, then does its effects: its answer.
pub(super) fn call<T>(f: impl FnOnce(&mut Machine<Browser>) -> T) -> Result<T, JsValue> {
    let (value, effects) = MACHINE
        .with(|m| {
            m.try_borrow_mut().ok().map(|mut m| {
                let value = f(&mut m);
                (value, m.effects())
            })
        })
        .ok_or_else(busy)?;
    perform(effects);
    drain();
    Ok(value)
}

/// Hands `event` to the machine (after what is being done now, if anything is).
pub(super) fn dispatch(event: Event) {
    QUEUE.with(|q| {
        if let Ok(mut q) = q.try_borrow_mut() {
            q.push_back(event);
        }
    });
    drain();
}

/// Hands the queued events over, one at a time, each one's effects done before the next.
fn drain() {
    if RUNNING.with(Cell::get) {
        return;
    }
    RUNNING.with(|r| r.set(true));
    loop {
        let next = QUEUE.with(|q| q.try_borrow_mut().ok().and_then(|mut q| q.pop_front()));
        let Some(event) = next else {
            break;
        };
        let effects = MACHINE.with(|m| match m.try_borrow_mut() {
            Ok(mut m) => {
                m.handle(event);
                Ok(m.effects())
            }
            Err(_) => Err(event),
        });
        let effects = match effects {
            Ok(effects) => effects,
            Err(event) => {
                // The machine is in a call (page code reached from inside it): the event waits for
                // its end, where the call drains the queue.
                QUEUE.with(|q| {
                    if let Ok(mut q) = q.try_borrow_mut() {
                        q.push_front(event);
                    }
                });
                break;
            }
        };
        perform(effects);
    }
    RUNNING.with(|r| r.set(false));
}

/// Does each effect, in order.
fn perform(effects: Vec<Effect>) {
    for effect in effects {
        match effect {
            Effect::Send(request) => super::net::send(request),
            Effect::Read { req, limit } => super::net::read(req, limit),
            Effect::End { req, drain } => super::net::end(req, drain),
            Effect::SetTimer { timer, ms } => start_timer(timer, ms),
            Effect::ClearTimer(timer) => {
                if let Some(id) = handles(|h| take(&mut h.timers, |(t, _)| *t == timer)).flatten() {
                    let _ = clear_timeout(&id.1);
                }
            }
            Effect::Settle { promise, value } => settle(promise, value),
            Effect::Forget(signal) => forget(signal),
            Effect::Notify {
                guard,
                change,
                source,
            } => super::listeners::notify(guard, change, source),
            Effect::Post {
                namespace,
                message,
                shared,
            } => super::page::post(&namespace, &message, shared),
            Effect::Lock { lock, name } => super::page::lock(lock, &name),
            Effect::Unlock(lock) => super::page::unlock(lock),
            Effect::Gone(guard) => {
                handles(|h| h.guards.retain(|g| g.id != guard));
            }
        }
    }
}

/// Takes the first item of `list` that `f` picks.
pub(super) fn take<T>(list: &mut Vec<T>, f: impl Fn(&T) -> bool) -> Option<T> {
    let at = list.iter().position(f)?;
    Some(list.remove(at))
}

thread_local! {
    /// The one function every timer calls, bound to its id.
    static ON_TIMER: Closure<dyn FnMut(JsValue)> = Closure::new(|timer: JsValue| {
        let timer = TimerId(timer.as_f64().unwrap_or_default() as u32);
        handles(|h| h.timers.retain(|(t, _)| *t != timer));
        dispatch(Event::Timer(timer));
    });
    /// The one abort listener of the app's signals, bound to each one's id.
    static ON_ABORT: Closure<dyn FnMut(JsValue)> = Closure::new(|signal: JsValue| {
        dispatch(Event::Aborted(SignalId(signal.as_f64().unwrap_or_default() as u32)));
    });
}

/// `f` bound to `id` as its first argument: a JS function with no Rust of its own.
pub(super) fn bound(f: &JsValue, id: u32) -> Function {
    let bind = Reflect::get(f, &JsValue::from_str("bind"))
        .ok()
        .and_then(|b| b.dyn_into::<Function>().ok());
    bind.and_then(|b| b.call2(f, &JsValue::NULL, &JsValue::from(id)).ok())
        .map_or_else(|| f.clone().unchecked_into(), JsCast::unchecked_into)
}

/// `promise.then(ok, failed)`, through a `then` that page code may have replaced with one
/// that throws: whether it took.
pub(super) fn then2(promise: &JsValue, ok: &Function, failed: &Function) -> bool {
    Reflect::get(promise, &JsValue::from_str("then"))
        .ok()
        .and_then(|t| t.dyn_into::<Function>().ok())
        .is_some_and(|t| t.call2(promise, ok, failed).is_ok())
}

fn start_timer(timer: TimerId, ms: u64) {
    // The machine keeps every timer within what a browser takes.
    let ms = ms as f64;
    let callback = ON_TIMER.with(|f| bound(f.as_ref(), timer.0));
    // No timers here (not a page): the timer never comes, as nothing can wait.
    if let Ok(id) = set_timeout(&callback, ms) {
        handles(|h| h.timers.push((timer, id)));
    }
}

/// A new promise the machine will settle, and its id.
pub(super) fn promise() -> (PromiseId, Promise) {
    let mut resolver = None;
    let promise = Promise::new(&mut |resolve, _reject| resolver = Some(resolve));
    let id = PromiseId(handles(Handles::next).unwrap_or_default());
    if let Some(resolve) = resolver {
        handles(|h| h.promises.push((id, resolve, promise.clone())));
    }
    (id, promise)
}

/// The promise of id `id`, while it is pending.
pub(super) fn promise_of(id: PromiseId) -> Option<Promise> {
    handles(|h| {
        h.promises
            .iter()
            .find(|(p, _, _)| *p == id)
            .map(|(_, _, p)| p.clone())
    })
    .flatten()
}

/// Drops the promise `id` never handed to the app.
pub(super) fn drop_promise(id: PromiseId) {
    handles(|h| h.promises.retain(|(p, _, _)| *p != id));
}

/// A call the machine never took: its promise goes, and the app's signal is no longer
/// listened to.
pub(super) fn abandon(id: PromiseId, signal: Option<(SignalId, bool)>) {
    drop_promise(id);
    if let Some((signal, _)) = signal {
        forget(signal);
    }
}

/// Listens to the app's `signal`; its id and whether it is aborted already.
pub(super) fn listen(signal: AbortSignal) -> (SignalId, bool) {
    let id = SignalId(handles(Handles::next).unwrap_or_default());
    let aborted = super::dom::is_aborted(&signal);
    if !aborted {
        let listener = ON_ABORT.with(|f| bound(f.as_ref(), id.0));
        let _ = signal.add_event_listener_with_callback("abort", &listener);
        handles(|h| h.signals.push((id, signal, listener)));
    }
    (id, aborted)
}

fn forget(signal: SignalId) {
    if let Some((_, signal, listener)) =
        handles(|h| take(&mut h.signals, |(s, _, _)| *s == signal)).flatten()
    {
        let _ = signal.remove_event_listener_with_callback("abort", &listener);
    }
}

/// Settles promise `id` with `value`, as a frozen object (several readers of one promise see
/// the same); a query's `done` carries its result as `JSON.parse` read it.
fn settle(id: PromiseId, value: Settled) {
    let Some((_, resolve, _)) = handles(|h| take(&mut h.promises, |(p, _, _)| *p == id)).flatten()
    else {
        return;
    };
    let value = match value {
        Settled::Cancel(outcome) => frozen(to_js(&outcome)),
        Settled::Wait(outcome) => frozen(to_js(&outcome)),
        Settled::Query(outcome, result) => {
            let value = to_js(&*outcome).unwrap_or_else(|e| e);
            if let Some(kept) =
                result.and_then(|req| handles(|h| h.request(req)?.kept.take()).flatten())
            {
                let _ = Reflect::set(&value, &JsValue::from_str("result"), &kept);
            }
            frozen(Ok(value))
        }
        Settled::Nothing => JsValue::UNDEFINED,
    };
    let _ = resolve.call1(&JsValue::UNDEFINED, &value);
}

fn frozen(value: Result<JsValue, JsValue>) -> JsValue {
    let value = value.unwrap_or_else(|e| e);
    let object: &Object = value.unchecked_ref();
    Object::freeze(object).into()
}

/// A promise already settled with `value` (a refusal decided before the machine).
pub(super) fn settled<T: serde::Serialize>(value: &T) -> Promise {
    Promise::resolve(&frozen(to_js(value)))
}
