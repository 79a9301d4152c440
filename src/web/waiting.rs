//! `waitFor()`: the guard's waiters on the session's jobs, wired to what feeds them. The rules
//! (what settles a waiter, what an abort cancels) are the core's ([`crate::core::waiters`],
//! [`crate::core::awaited`]); this room registers a waiter in the tick `waitFor` is called,
//! re-reads the waiters after every change the guard hears (this tab's, the page's other
//! guards', other tabs', a 401) and after every round of `follow()`, keeps one timer for the
//! first deadline (a stale clock, a record's expiry, the grace of a missing record, the wait
//! entry's refresh), holds `follow()` while anything waits, keeps the guard's wait entry in
//! storage for other tabs, and cancels through `cancel()`'s path on an abort
//! ([`super::closing`]: on the page's end).
//!
//! A waiter's promise never rejects. No borrow of the guard is held while JS runs: resolving a
//! promise, aborting a controller and sending a request all happen after the borrow ends.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;
use web_sys::{AbortController, AbortSignal};

use super::boundary::to_js;
use super::cancel;
use super::clock::DateClock;
use super::clock::{clear_timeout, set_timeout};
use super::closing;
use super::dom;
use super::listeners::Listeners;
use super::page;
use super::state::Inner;
use super::wait_input::{self, admit_all, hearing_of, read_options, WaitOptions};
use super::wait_state::{Pending, Resolve, Waiting};
use crate::core::awaited::after_abort;
use crate::core::clock::Clock;
use crate::core::query::Phase;
use crate::core::store::Awaited;
use crate::core::tabs::{Change, Source};
use crate::core::wait_input::{WaitInput, WaitSettings};
use crate::core::wait_outcome::{Refused, WaitOutcome, WaitRefusal};

/// What the guard's state and listeners are, for the callbacks that outlive a call.
#[derive(Clone)]
pub(super) struct Guard {
    pub(super) inner: Weak<RefCell<Inner>>,
    listeners: Weak<RefCell<Listeners>>,
    /// Whether anything waits ([`Waiting::active`]): read without borrowing the guard.
    active: Rc<Cell<bool>>,
}

impl Guard {
    fn of(inner: &Rc<RefCell<Inner>>, listeners: &Rc<RefCell<Listeners>>) -> Self {
        let active = inner
            .try_borrow()
            .map(|g| Rc::clone(&g.waiting.active))
            .unwrap_or_default();
        Guard {
            inner: Rc::downgrade(inner),
            listeners: Rc::downgrade(listeners),
            active,
        }
    }
}

/// A promise already settled with `outcome`.
fn settled(outcome: &WaitOutcome) -> Promise {
    Promise::resolve(&frozen(outcome))
}

/// The outcome as a frozen JS object (several readers of one promise see the same).
fn frozen(outcome: &WaitOutcome) -> JsValue {
    let value = to_js(outcome).unwrap_or_else(|e| e);
    let object: &Object = value.unchecked_ref();
    Object::freeze(object).into()
}

fn refusal(job_ids: &[String], job_id: Option<&str>, (reason, message): Refused) -> Promise {
    settled(&WaitOutcome::refused(job_ids, job_id, reason, message))
}

/// `waitFor(input, options)`: registers a waiter now; the promise settles with its outcome.
pub fn start(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    input: &JsValue,
    options: &JsValue,
) -> Promise {
    // Without the guard's state (a call from inside one of its own calls), `admit_all` refuses.
    let guards = inner.try_borrow().is_ok_and(|g| g.options.cancel_on_close);
    let WaitOptions { signal, settings } = match read_options(options, guards) {
        Ok(read) => read,
        Err(refused) => return refusal(&[], None, refused),
    };
    let input = match wait_input::read(input) {
        Ok(input) => input,
        Err(refused) => return refusal(&[], None, refused),
    };
    let mut resolver = None;
    let promise = Promise::new(&mut |resolve, _reject| resolver = Some(resolve));
    let Some(resolve) = resolver else {
        return promise;
    };
    match register(
        inner,
        listeners,
        input,
        settings,
        signal,
        Resolve::Js(resolve),
        |_, _, _| {},
    ) {
        Ok(_) => promise,
        Err(refused) => settled(&refused),
    }
}

/// Registers a waiter for `input` (a `202` body is recorded first) now: its id and the jobs it
/// awaits, or the outcome that refused it (nothing registered). `then` hears its outcome;
/// `added` is told its id and jobs as it is added, in the same borrow, before the page's
/// listeners hear of the record (one that signs out from there finds the waiter and whose it
/// is).
pub(super) fn register(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    input: WaitInput,
    settings: WaitSettings,
    signal: Option<AbortSignal>,
    then: Resolve,
    added: impl FnOnce(&mut Inner, u32, &[String]),
) -> Result<(u32, Vec<String>), WaitOutcome> {
    let recorded = !matches!(input, WaitInput::Ids(_));
    let admitted = match inner.try_borrow_mut() {
        Ok(mut guard) => admit_all(&mut guard, input),
        Err(_) => Err((
            Vec::new(),
            None,
            (
                WaitRefusal::InvalidInput,
                "waitFor was called from inside one of the guard's own calls".to_owned(),
            ),
        )),
    };
    let (jobs, owner) = match admitted {
        Ok(admitted) => admitted,
        Err((jobs, job, (reason, message))) => {
            return Err(WaitOutcome::refused(&jobs, job.as_deref(), reason, message));
        }
    };
    let me = Guard::of(inner, listeners);
    let awaited = jobs.clone();
    let added = inner.try_borrow_mut().ok().map(|mut guard| {
        let id = guard.waiting.rules.add(
            jobs,
            settings.stale_ms,
            DateClock.now_ms(),
            settings.cancel_on_close,
            owner,
        );
        guard.waiting.active.set(true);
        guard.waiting.pending.push(Pending {
            id,
            resolve: then,
            signal: None,
        });
        added(&mut guard, id, &awaited);
        id
    });
    let Some(id) = added else {
        return Err(WaitOutcome::refused(
            &awaited,
            None,
            WaitRefusal::InvalidInput,
            "the guard's state was in use".to_owned(),
        ));
    };
    if recorded {
        Listeners::notify(listeners, Change::JobsChanged, Source::Local);
    }
    // Aborted already (a 202 that came after its query was superseded, or by a listener just
    // now): recorded, and what no other waiter awaits is cancelled at once, as by an abort a
    // moment later.
    if signal.as_ref().is_some_and(dom::is_aborted) {
        abort(&me, id);
        return Ok((id, awaited));
    }
    if let Some(signal) = signal {
        let on_abort = {
            let me = me.clone();
            Closure::<dyn FnMut()>::new(move || abort(&me, id))
        };
        let _ = signal.add_event_listener_with_callback("abort", on_abort.as_ref().unchecked_ref());
        if let Ok(mut guard) = inner.try_borrow_mut() {
            if let Some(p) = guard.waiting.pending.iter_mut().find(|p| p.id == id) {
                p.signal = Some((signal, on_abort));
            }
        }
    }
    closing::watch_page();
    #[cfg(feature = "follow")]
    hold_follow(inner, listeners);
    // A job that has already ended settles the waiter now (its promise resolves after this
    // call returns, as a promise does); the wait entry is written.
    check(&me);
    Ok((id, awaited))
}

/// Re-reads every waiter and settles those that can; then keeps the timer, the wait entry and
/// the hold on `follow()` to what is left. Runs after every change the guard hears.
fn check(me: &Guard) {
    if !me.active.get() {
        return;
    }
    let Some(inner) = me.inner.upgrade() else {
        return;
    };
    let now = DateClock.now_ms();
    let Ok(mut borrowed) = inner.try_borrow_mut() else {
        // Inside another of the guard's calls: once it has returned.
        let me = me.clone();
        later(move || check(&me));
        return;
    };
    let guard = &mut *borrowed;
    let heard = hearing_of(guard);
    let hearing = heard.hearing();
    let store = &mut guard.store;
    let settled = guard
        .waiting
        .rules
        .check(now, hearing, |id| store.awaited(id));
    let resolved: Vec<(Pending, WaitOutcome)> = settled
        .into_iter()
        .filter_map(|(id, outcome)| guard.waiting.take(id).map(|p| (p, outcome)))
        .collect();
    let stop = tidy(guard, me, now);
    drop(borrowed);
    finish(resolved, stop);
}

/// Runs `f` once the guard's current call has returned (a timer of 0 ms).
fn later(f: impl FnOnce() + 'static) {
    let run = Closure::once_into_js(f);
    let _ = set_timeout(run.unchecked_ref(), 0.0);
}

/// Resolves each settled waiter's promise and removes its abort listener; stops the `follow()`
/// loop if the waiters were its last holder. (After the borrow: this runs JS.)
fn finish(resolved: Vec<(Pending, WaitOutcome)>, stop: Option<AbortController>) {
    for (pending, outcome) in resolved {
        if let Some((signal, listener)) = &pending.signal {
            let _ = signal
                .remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
        match pending.resolve {
            Resolve::Js(resolve) => {
                let _ = resolve.call1(&JsValue::UNDEFINED, &frozen(&outcome));
            }
            Resolve::Rust(then) => then(outcome),
        }
    }
    if let Some(follow) = stop {
        dom::abort(&follow);
    }
}

/// What the guard's entry lists now: the jobs its waiters await, those only its queries'
/// waiters await, and its queries' synchronous requests in flight (their stop URL and
/// `client_id`, where a stop can reach them).
fn listed(guard: &Inner) -> Awaited {
    let jobs = guard.waiting.rules.jobs(false);
    let query_waiters = guard.queries.waiters();
    let queries = jobs
        .iter()
        .filter(|j| !guard.waiting.rules.awaits_except(j, &query_waiters))
        .cloned()
        .collect();
    let stops = guard
        .queries
        .running
        .iter()
        .filter(|q| q.sent && q.reason.is_none())
        .filter(|q| matches!(q.phase, Phase::Sending | Phase::Refetching))
        .filter(|q| !guard.queries.no_stop.contains(&q.stop_url))
        .filter_map(|q| Some((q.stop_url.clone(), q.client_id.clone()?)))
        .collect();
    Awaited {
        jobs,
        queries,
        stops,
    }
}

/// Writes the guard's entry when what it lists changed or its refresh is due (after every
/// change its waiters hear, and as its queries' requests leave and end).
pub(super) fn keep_entry(guard: &mut Inner, now: u64) {
    // The session ended (another tab's logout, maybe not heard yet): what that tab took is
    // noted, and nothing more is written until the next login.
    if guard.store.session().is_none() {
        use super::tabs::TabHost;
        guard.session_ended_elsewhere();
    }
    if guard.waiting.entry.taken.is_some() {
        return;
    }
    let now_listed = listed(guard);
    let entry = &mut guard.waiting.entry;
    if let Some(listed) = entry.state.due(now_listed, now) {
        let token = entry
            .token
            .get_or_insert_with(|| page::token_of(entry.page_id));
        guard.store.keep_entry(token, &listed);
    }
}

/// Writes the guard's wait entry when what it awaits changed or its refresh is due, and re-arms
/// the timer for the first deadline. With no waiter left, lets `follow()` go: its loop's
/// controller to stop, if the waiters were its last holder.
fn tidy(guard: &mut Inner, me: &Guard, now: u64) -> Option<AbortController> {
    keep_entry(guard, now);
    let waiting = &mut guard.waiting;
    let waits = !waiting.rules.is_empty();
    waiting.active.set(waits);
    if let Some(timer) = waiting.timer.take() {
        let _ = clear_timeout(&timer);
    }
    if waits {
        let deadline = waiting
            .rules
            .next_deadline()
            .map_or(waiting.entry.state.refresh_at, |d| {
                d.min(waiting.entry.state.refresh_at)
            });
        let on_timer = waiting.on_timer.get_or_insert_with(|| {
            let me = me.clone();
            Closure::<dyn FnMut()>::new(move || check(&me))
        });
        // At most a day (the longest stale timeout); a browser's timer takes up to 2^31-1 ms.
        let ms = deadline.saturating_sub(now).min(86_400_000) as f64;
        waiting.timer = set_timeout(on_timer.as_ref().unchecked_ref(), ms).ok();
        return None;
    }
    #[cfg(feature = "follow")]
    {
        let hold = waiting.follow_hold.take()?;
        super::follow::release_in(guard, hold)
    }
    #[cfg(not(feature = "follow"))]
    None
}

/// The waiter's signal aborted: it settles `aborted`, and the jobs of it that no other waiter
/// of the browser awaits (this guard's, the page's other guards', other tabs') and no cancel
/// in flight covers are cancelled through `cancel()`'s path (its ownership check, one request
/// per job).
fn abort(me: &Guard, id: u32) {
    let (Some(inner), Some(listeners)) = (me.inner.upgrade(), me.listeners.upgrade()) else {
        return;
    };
    // What the page's other guards await is read after the waiter goes; a guard of the page
    // that is busy now is asked once its call has returned.
    if page::others(&inner).is_none() {
        let me = me.clone();
        return later(move || abort(&me, id));
    }
    let Ok(mut guard) = inner.try_borrow_mut() else {
        let me = me.clone();
        return later(move || abort(&me, id));
    };
    let Some((jobs, alone)) = guard.waiting.rules.remove(id) else {
        return;
    };
    let pending = guard.waiting.take(id);
    let stop = tidy(&mut guard, me, DateClock.now_ms());
    drop(guard);
    let cancelling = cancel_unawaited(&inner, &listeners, alone);
    let outcome = WaitOutcome::aborted(&jobs, cancelling);
    finish(pending.map(|p| (p, outcome)).into_iter().collect(), stop);
}

/// Cancels, through `cancel()`'s path, each of `alone` (jobs no waiter of this guard awaits any
/// more) that no waiter of the page's other guards or of another tab awaits, whose cancel no
/// other guard has in flight, and that the session may cancel; the ones it started. (Outside
/// any borrow: it reads the page's other guards.)
pub(super) fn cancel_unawaited(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    alone: Vec<String>,
) -> Vec<String> {
    if alone.is_empty() {
        return alone;
    }
    // A guard of the page that is busy cannot say what it awaits: nothing is cancelled.
    let Some(others) = page::others(inner) else {
        return Vec::new();
    };
    let cancelling: Vec<String> = match inner.try_borrow_mut() {
        Ok(mut guard) => {
            let elsewhere = guard.store.awaited_elsewhere(&page::this_page());
            let chosen = page::with_views(&others, |views| after_abort(alone, views, &elsewhere));
            chosen
                .into_iter()
                .filter(|job| guard.store.check_cancel(job).is_allowed())
                .collect()
        }
        Err(_) => Vec::new(),
    };
    for job in &cancelling {
        // Never rejects; its outcome reaches the record and `subscribe`'s listeners.
        let _ = cancel::start(inner, listeners, job.clone(), None);
    }
    cancelling
}

/// Holds `follow()` for the waiters (once: the hold lasts while anything waits).
#[cfg(feature = "follow")]
fn hold_follow(inner: &Rc<RefCell<Inner>>, listeners: &Rc<RefCell<Listeners>>) {
    let held = inner
        .try_borrow()
        .map(|g| g.waiting.follow_hold.is_some())
        .unwrap_or(true);
    if held {
        return;
    }
    if let Ok(hold) = super::follow::hold(inner, listeners, None) {
        if let Ok(mut guard) = inner.try_borrow_mut() {
            guard.waiting.follow_hold = Some(hold);
        }
    }
}

/// The hook [`Listeners`] calls after each change it hands out (and `follow()` after each
/// round): the waiters re-read.
pub fn hook(inner: &Rc<RefCell<Inner>>, listeners: &Rc<RefCell<Listeners>>) -> Rc<dyn Fn()> {
    let me = Guard::of(inner, listeners);
    // Checked here too, so that a page that never waits never compiles `check`.
    Rc::new(move || {
        if me.active.get() {
            check(&me);
        }
    })
}

/// The guard's end (`free()`): every waiter settles `aborted`, nothing is cancelled (the guard
/// that would send it is going), the timer goes and the wait entry is removed.
pub fn end(inner: &Rc<RefCell<Inner>>) {
    let Ok(mut guard) = inner.try_borrow_mut() else {
        return;
    };
    guard.waiting.active.set(false);
    page::leave(guard.waiting.entry.page_id);
    let Waiting {
        pending,
        timer,
        entry,
        ..
    } = std::mem::take(&mut guard.waiting);
    if let Some(token) = &entry.token {
        guard.store.keep_waits(token, &[]);
    }
    drop(guard);
    if let Some(timer) = timer {
        let _ = clear_timeout(&timer);
    }
    let outcome = WaitOutcome::aborted(&[], Vec::new());
    finish(
        pending.into_iter().map(|p| (p, outcome.clone())).collect(),
        None,
    );
}
