//! The machine: every guard of a page, and everything they have running, as one sans-IO state.
//! Events come in ([`Event`]: answers, bodies, timers, aborts, other tabs' messages and
//! `storage` events, the page's hide and show) and the app's calls (the methods of the
//! rooms below); effects go out ([`Effect`]: send, read a body, end a request, set a timer,
//! settle a promise, notify listeners, post to the tabs, take a lock). Every decision is made
//! here, once, and tested natively; the browser's executor (`src/web/`) does what the effects
//! say and reports what happened, keeping only the live handles, by the ids the effects name.
//!
//! Rooms, by thing:
//! - [`io`]: the events and effects, and the ids of the executor's handles
//! - `guard`: a guard's own state, and the calls that read and write its records
//! - `session`: signing in and out, and what other tabs and guards say of the session
//! - `requests`: the requests in flight and the timers, each with what it is for
//! - `servers`: what each server of the page can do, learned once
//! - `cancels`: `cancel()`, from the local check to its last answer
//! - `cancel_answers`: a cancel's answers, read as its flow needs them
//! - `cancel_requests`: a cancel's request, and the one bar on it
//! - `cancel_endpoints`: a cancel endpoint's first ask, and its absence learned once
//! - `waits`: `waitFor()`'s waiters and their timer
//! - `wait_entry`: a guard's wait entry, which tells the other tabs what it awaits
//! - `queries`: `query()`, from its request to its result
//! - `client_id_probe`: a query's `client_id`, and whether its server takes one, asked once
//! - `chart_answers`: a chart-data request's answers, read as its life needs them
//! - `stops`: stopping one query on the server, for any reason, by what its server can do
//! - `stop_requests`: a synchronous query's stop request, answered, sent again
//! - `stopped`: what comes after a query's stop: its outcome, a late answer, its words
//! - `unawaited`: what a stop cancels (who else awaits a job) and how those cancels go
//! - `stop_all`: stopping every query of a guard at once (a logout, a user switch, another
//!   tab's logout, the page's end, `free()`), and the page's hide and show
//! - `groups`: a logout's `stopped`, settled when what it sent is answered
//! - `following`: `follow()`'s loop: one poller per browser, its cadence, its cursor
//! - `polls`: one poll's answer, and the tasks read back after it

pub mod io;

mod cancel_answers;
mod cancel_endpoints;
mod cancel_requests;
mod cancels;
mod chart_answers;
mod client_id_probe;
mod following;
mod groups;
mod guard;
mod polls;
mod queries;
mod requests;
mod servers;
mod session;
mod stop_all;
pub(super) mod stop_requests;
mod stopped;
pub(super) mod stops;
mod unawaited;
mod wait_entry;
mod waits;

#[cfg(test)]
mod tests;

pub use cancels::CancelStart;
pub use io::*;

use super::clock::Clock;
use super::random::Random;
use super::storage::KeyValue;

use groups::Group;
use guard::GuardState;
use requests::{Open, Wake};
use servers::Servers;

/// What the machine runs over: the guards' storage, the clock and the random source.
pub trait Platform: 'static {
    type Storage: KeyValue;
    type Clock: Clock + Clone;
    type Random: Random;
}

/// The page's own state.
#[derive(Debug, Default)]
struct Page {
    /// The page's token (the prefix of its guards' wait entries), made at its first need.
    token: Option<String>,
}

/// Every guard of a page and what they have running.
pub struct Machine<P: Platform> {
    clock: P::Clock,
    random: P::Random,
    guards: Vec<GuardState<P>>,
    open: Vec<Open>,
    timers: Vec<(TimerId, Wake)>,
    next: u32,
    out: Vec<Effect>,
    page: Page,
    servers: Servers,
    /// The logouts whose `stopped` waits for answers.
    groups: Vec<Group>,
    /// How many connections the browser keeps to the page's server (`None`: no limit).
    connections: Option<usize>,
    /// A connection was freed: what waits for one goes in a timer of 0 ms, once the event or
    /// call that freed it, and the app's task around it, have made all their decisions (a
    /// logout, a signal, the page's end or a filter change stops many queries at once, and
    /// the first one's connection must not send the next one's request).
    hand_on: bool,
    /// The requests asked for after a 401, answered 401 without leaving.
    barred: Vec<ReqId>,
}

impl<P: Platform> Machine<P> {
    pub fn new(clock: P::Clock, random: P::Random) -> Self {
        Self {
            clock,
            random,
            guards: Vec::new(),
            open: Vec::new(),
            timers: Vec::new(),
            next: 0,
            out: Vec::new(),
            page: Page::default(),
            servers: Servers::default(),
            groups: Vec::new(),
            connections: None,
            hand_on: false,
            barred: Vec::new(),
        }
    }

    /// The effects asked for since the last call, in order (the requests that waited for a
    /// connection freed meanwhile among them).
    pub fn effects(&mut self) -> Vec<Effect> {
        self.answer_barred();
        let waiting = self.open.iter().any(|o| o.waiting.is_some());
        let set = self.timers.iter().any(|(_, w)| *w == Wake::HandOn);
        if std::mem::take(&mut self.hand_on) && waiting && !set {
            self.set_timer(Wake::HandOn, 0);
        }
        std::mem::take(&mut self.out)
    }

    /// Whether anything is left to do: a request, a timer.
    pub fn is_idle(&self) -> bool {
        self.open.is_empty() && self.timers.is_empty()
    }

    /// A fresh id for what the machine asks for.
    fn id(&mut self) -> u32 {
        self.next = self.next.wrapping_add(1);
        self.next
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    fn emit(&mut self, effect: Effect) {
        self.out.push(effect);
    }

    /// Hears `event`.
    pub fn handle(&mut self, event: Event) {
        match event {
            Event::Answered(req, answer) => self.answered(req, answer),
            Event::NoAnswer(req) => self.no_answer(req),
            Event::Body(req, body) => self.body(req, body),
            Event::Timer(timer) => self.timer(timer),
            Event::Aborted(signal) => self.aborted(signal),
            Event::Storage(event) => self.storage_event(&event),
            Event::Message { namespace, message } => self.message(&namespace, &message),
            Event::PageHide { persisted } => self.page_hide(persisted),
            Event::PageShow { persisted } => self.page_show(persisted),
            Event::Locked(lock) => self.locked(lock),
            // Without locks there is no one poller of the browser: each tab polls for itself,
            // as if it held the lock (the cursor in storage is still shared).
            Event::NoLock(lock) => self.locked(lock),
            Event::Freed(id) => self.free(id),
        }
        self.settle_waits();
    }

    /// An app's signal aborted: whatever listens to it stops.
    fn aborted(&mut self, signal: SignalId) {
        self.emit(Effect::Forget(signal));
        let ids: Vec<GuardId> = self.guards.iter().map(|g| g.id).collect();
        for guard in ids {
            self.abort_cancels_of(guard, signal);
            self.abort_waiters_of(guard, signal);
            self.abort_queries_of(guard, signal);
        }
    }

    fn guard(&mut self, id: GuardId) -> Option<&mut GuardState<P>> {
        self.guards.iter_mut().find(|g| g.id == id)
    }

    /// This page's token: random, made once (`[0-9a-z]`, 11 characters).
    fn page_token(&mut self) -> String {
        if let Some(token) = &self.page.token {
            return token.clone();
        }
        let mut n = (self.random.next_f64().clamp(0.0, 1.0) * 9_007_199_254_740_992.0) as u64;
        let mut token = String::new();
        for _ in 0..11 {
            token.extend(char::from_digit((n % 36) as u32, 36));
            n /= 36;
        }
        self.page.token = Some(token.clone());
        token
    }
}
