//! The guard's HTTP client over `fetch`, for the answers it reads (`cancel()`, a `follow()`
//! poll, a query's request and its stop): a [`Request`] (`super::request`) sent with the app's
//! `fetch` or the page's, and the waits.
//!
//! Every wait (the `fetch`, the body, a delay) is raced against the client's abort signal and,
//! for a request, against the per-attempt timeout (`timeoutMs`): an app `fetch` that ignores
//! its signal, or a body that never arrives, cannot keep a caller waiting. The app's signal and
//! the guard's (logout, a session that ended or changed) abort the client's own controller,
//! whose signal the waits listen to. Each request (an attempt) has a controller of its own,
//! whose signal is the one `fetch` gets: a wait that stops, out of time or aborted, aborts it,
//! and so do the next attempt and [`Client::release`] (a request left open would make the
//! browser queue the next one to the same URL behind it). Those two first let an answer's body
//! that was not needed arrive, for a bounded time ([`drain`]): an answer aborted
//! after it came shows as failed in the browser's network log.
//!
//! What an answer means is the core's ([`crate::core::endpoints`]); this room only reads what
//! the core asks for: the status, a header, whether `fetch` followed a redirect, the body's
//! text within a limit.

use std::cell::RefCell;

use js_sys::{Array, Function, JsString, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal};

use super::answer::{answer_of, bound_abort, drain};
pub(super) use super::answer::{Answer, Body};
use super::clock::{clear_timeout, set_timeout, DateClock};
use super::dom;
use super::request::{fetch_of, Request};
use crate::core::clock::Clock;
use crate::core::endpoints::{declared_too_long, Limit};

/// What sends: the app's `fetch` (or the page's at call time) and the per-attempt timeout.
pub(super) struct Sender {
    pub(super) fetch: Option<Function>,
    pub(super) timeout_ms: f64,
}

/// How a wait ended.
enum Waited {
    /// The promise resolved to this.
    Value(JsValue),
    /// It rejected.
    Failed,
    /// The client was aborted, or the attempt ran out of time, first.
    Stopped,
}

/// Why a request got no answer to read.
pub(super) enum Failure {
    /// `fetch` is missing, threw, rejected, or resolved to something without an integer status
    /// in 0..=999.
    Network,
    /// No answer within the per-attempt timeout.
    TimedOut,
}

/// A client for one cancel, or one poll of `follow`, with its abort wiring.
pub(super) struct Client {
    sender: Sender,
    sources: Vec<AbortSignal>,
    controller: Option<AbortController>,
    abort: Option<Function>,
    /// The controller of the request in flight (or whose body is being read).
    attempt: RefCell<Option<AbortController>>,
    /// The attempt's answer while its body is unread.
    unread: RefCell<Option<JsValue>>,
    /// The `fetch` promise of a request this client stopped waiting for when it was aborted
    /// (it may still answer: [`Client::abandoned`]).
    abandoned: RefCell<Option<JsValue>>,
    /// Whether an abort leaves the request in flight for the caller to take ([`Client::keeping`]).
    keeps: bool,
    /// A signal that ends the request in flight at once, kept or not ([`Client::ended_by`]), and
    /// the attempt's bound `abort` it calls.
    end: Option<AbortSignal>,
    end_listener: RefCell<Option<Function>>,
}

impl Client {
    /// A client whose waits end when `app` or `logout` aborts.
    pub(super) fn new(
        sender: Sender,
        app: Option<AbortSignal>,
        logout: Option<AbortSignal>,
    ) -> Self {
        let sources: Vec<AbortSignal> = app.into_iter().chain(logout).collect();
        let controller = AbortController::new().ok();
        let abort = controller.as_ref().and_then(bound_abort);
        if let Some(abort) = &abort {
            for source in &sources {
                let _ = source.add_event_listener_with_callback("abort", abort);
            }
        }
        Self {
            sender,
            sources,
            controller,
            abort,
            attempt: RefCell::new(None),
            unread: RefCell::new(None),
            abandoned: RefCell::new(None),
            keeps: false,
            end: None,
            end_listener: RefCell::new(None),
        }
    }

    /// This client, whose request in flight `end` aborts at once, kept or not.
    pub(super) fn ended_by(mut self, end: Option<AbortSignal>) -> Self {
        self.end = end;
        self
    }

    /// This client, with an abort that stops its waiting but leaves its request in flight: the
    /// caller takes it with [`Client::abandoned`] (to read a late answer, then end it).
    pub(super) fn keeping(mut self) -> Self {
        self.keeps = true;
        self
    }

    fn signal(&self) -> Option<AbortSignal> {
        self.controller.as_ref().and_then(dom::signal_of)
    }

    /// Ends the attempt where a wait stopped, unless an abort leaves it to the caller.
    fn stop_attempt(&self) {
        if !(self.keeps && self.aborted()) {
            self.end_attempt(false);
        }
    }

    /// Whether the app's signal or the guard's aborted this client.
    pub(super) fn aborted(&self) -> bool {
        self.sources.iter().any(dom::is_aborted)
            || self.signal().is_some_and(|s| dom::is_aborted(&s))
    }

    /// Ends the request still open (an answer's unneeded body first arrives, within a bound) and
    /// removes the listeners this client added.
    pub(super) fn release(&self) {
        self.end_attempt(true);
        if let Some(abort) = &self.abort {
            for source in &self.sources {
                let _ = source.remove_event_listener_with_callback("abort", abort);
            }
        }
    }

    /// A copy of `request`'s `init` whose `signal` is a new attempt's (the one before it
    /// aborted, if still open).
    fn begin_attempt(&self, request: &Request) -> Object {
        self.end_attempt(true);
        let init = Object::assign(&Object::new(), &request.init);
        if let Ok(controller) = AbortController::new() {
            if let Some(signal) = dom::signal_of(&controller) {
                let _ = Reflect::set(&init, &JsValue::from_str("signal"), &signal);
            }
            if let Some(end) = &self.end {
                if dom::is_aborted(end) {
                    dom::abort(&controller);
                } else if let Some(abort) = bound_abort(&controller) {
                    let _ = end.add_event_listener_with_callback("abort", &abort);
                    if let Ok(mut listener) = self.end_listener.try_borrow_mut() {
                        *listener = Some(abort);
                    }
                }
            }
            if let Ok(mut attempt) = self.attempt.try_borrow_mut() {
                *attempt = Some(controller);
            }
        }
        init
    }

    /// Aborts the attempt's request, if one is open: its `fetch`, or the body still coming; with
    /// `drain`, an answer whose body was not read first lets it come ([`drain`]).
    fn end_attempt(&self, drain: bool) {
        let listener = self
            .end_listener
            .try_borrow_mut()
            .ok()
            .and_then(|mut l| l.take());
        if let (Some(end), Some(listener)) = (&self.end, listener) {
            let _ = end.remove_event_listener_with_callback("abort", &listener);
        }
        let open = self
            .attempt
            .try_borrow_mut()
            .ok()
            .and_then(|mut a| a.take());
        let unread = self.unread.try_borrow_mut().ok().and_then(|mut u| u.take());
        match (open, unread) {
            (Some(controller), Some(response)) if drain => self::drain(&response, controller),
            (Some(controller), _) => dom::abort(&controller),
            (None, _) => {}
        }
    }

    /// What a wait that stopped means: `None` if the client was aborted, else a timeout.
    pub(super) fn stopped(&self) -> Option<Failure> {
        (!self.aborted()).then_some(Failure::TimedOut)
    }

    /// Sends `request` once; its answer before the per-attempt deadline. `None` when the
    /// client was aborted first.
    pub(super) async fn send(&self, request: &Request) -> Option<Result<Answer, Failure>> {
        // Aborted already: nothing leaves.
        if self.aborted() {
            return None;
        }
        let deadline = DateClock.now_ms() as f64 + self.sender.timeout_ms;
        let global = js_sys::global();
        let Some(fetch) = fetch_of(self.sender.fetch.as_ref()) else {
            return Some(Err(Failure::Network));
        };
        let url = JsValue::from_str(&request.url);
        let init = self.begin_attempt(request);
        let Ok(pending) = fetch.call2(&global, &url, &init) else {
            return Some(Err(Failure::Network));
        };
        let response = match self.wait(&pending, deadline).await {
            Waited::Value(response) => response,
            Waited::Failed if self.aborted() => return None,
            Waited::Failed => return Some(Err(Failure::Network)),
            Waited::Stopped => {
                if self.aborted() {
                    if let Ok(mut abandoned) = self.abandoned.try_borrow_mut() {
                        *abandoned = Some(pending);
                    }
                }
                return self.stopped().map(Err);
            }
        };
        let answer = answer_of(response, deadline).ok_or(Failure::Network);
        if let (Ok(answer), Ok(mut unread)) = (&answer, self.unread.try_borrow_mut()) {
            *unread = Some(answer.response.clone());
        }
        Some(answer)
    }

    /// The `fetch` promise this client stopped waiting for when it was aborted, once; with the
    /// controller that ends it, when the client keeps its requests.
    pub(super) fn abandoned(&self) -> Option<(JsValue, Option<AbortController>)> {
        let pending = self.abandoned.try_borrow_mut().ok()?.take()?;
        let attempt = if self.keeps {
            self.attempt
                .try_borrow_mut()
                .ok()
                .and_then(|mut a| a.take())
        } else {
            None
        };
        Some((pending, attempt))
    }

    /// Waits for `pending` (an abandoned `fetch`), within this client's timeout: its answer, if
    /// it gives one.
    pub(super) async fn answer_to(&self, pending: &JsValue) -> Option<Answer> {
        let deadline = DateClock.now_ms() as f64 + self.sender.timeout_ms;
        match self.wait(pending, deadline).await {
            Waited::Value(response) => answer_of(response, deadline),
            _ => None,
        }
    }

    /// The answer's body, if it is at most `limit` UTF-16 code units long; a longer one is
    /// [`Body::TooLong`] or, for a page ([`Limit::Page`], which may be read in part), its
    /// start ([`Body::Cut`]). `Err` when the wait stopped (aborted, or out of time).
    pub(super) async fn text(&self, answer: &Answer, limit: Limit) -> Result<Body, ()> {
        if declared_too_long(answer.header("Content-Length").as_deref(), limit) {
            return Ok(Body::TooLong);
        }
        let response = &answer.response;
        let pending = Reflect::get(response, &JsValue::from_str("text"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
            .and_then(|f| f.call0(response).ok());
        let Some(pending) = pending else {
            return Ok(Body::Broken);
        };
        // Its body is being read (or broke): nothing is left to let arrive.
        if let Ok(mut unread) = self.unread.try_borrow_mut() {
            unread.take();
        }
        let text = match self.wait(&pending, answer.deadline).await {
            Waited::Value(text) => text,
            Waited::Failed => return Ok(Body::Broken),
            Waited::Stopped => return Err(()),
        };
        let Some(text) = text.dyn_ref::<JsString>() else {
            return Ok(Body::Broken);
        };
        let chars = limit.chars();
        if text.length() as usize <= chars {
            return Ok(text.as_string().map_or(Body::Broken, Body::Text));
        }
        if limit != Limit::Page {
            return Ok(Body::TooLong);
        }
        // Not inside a surrogate pair.
        let mut end = chars as u32;
        if text.char_code_at(end - 1) as u32 & 0xFC00 == 0xD800 {
            end -= 1;
        }
        Ok(text
            .slice(0, end)
            .as_string()
            .map_or(Body::Broken, Body::Cut))
    }

    /// Waits for `pending` (a promise, a thenable or a value) until it settles, the client is
    /// aborted, or `deadline` (ms since the epoch) passes, whichever comes first.
    async fn wait(&self, pending: &JsValue, deadline: f64) -> Waited {
        if self.aborted() {
            self.stop_attempt();
            return Waited::Stopped;
        }
        let signal = self.signal();
        let stop_token = JsValue::from(Object::new());
        let mut timer = None;
        let mut wake = None;
        let stop = Promise::new(&mut |resolve, _reject| {
            let fire: Function = resolve
                .bind1(&JsValue::UNDEFINED, &stop_token)
                .unchecked_into();
            let left = (deadline - DateClock.now_ms() as f64).max(0.0);
            timer = set_timeout(&fire, left).ok();
            if let Some(signal) = &signal {
                let _ = signal.add_event_listener_with_callback("abort", &fire);
            }
            wake = Some(fire);
        });
        let race = Promise::race(&Array::of2(&Promise::resolve(pending), &stop));
        let result = JsFuture::from(race).await;
        if let Some(id) = timer {
            let _ = clear_timeout(&id);
        }
        if let (Some(signal), Some(wake)) = (&signal, &wake) {
            let _ = signal.remove_event_listener_with_callback("abort", wake);
        }
        match result {
            Ok(value) if Object::is(&value, &stop_token) => {
                // Out of time or aborted: the request itself ends too (unless kept).
                self.stop_attempt();
                Waited::Stopped
            }
            Ok(value) => Waited::Value(value),
            Err(_) => Waited::Failed,
        }
    }

    /// Waits for `pending` (another request's end, say) until it settles, the client is
    /// aborted, or the client's timeout passes: whether it settled first.
    pub(super) async fn settles(&self, pending: &JsValue) -> bool {
        let deadline = DateClock.now_ms() as f64 + self.sender.timeout_ms;
        !matches!(self.wait(pending, deadline).await, Waited::Stopped)
    }

    /// Waits `ms`, or less if the client is aborted first; not at all without timers.
    pub(super) async fn sleep(&self, ms: u64) {
        let signal = self.signal();
        let mut wake = None;
        let mut timer = None;
        let promise = Promise::new(&mut |resolve, _reject| {
            if let Ok(id) = set_timeout(&resolve, ms as f64) {
                timer = Some(id);
                if let Some(signal) = &signal {
                    let _ = signal.add_event_listener_with_callback("abort", &resolve);
                }
            } else {
                let _ = resolve.call0(&JsValue::UNDEFINED);
            }
            wake = Some(resolve);
        });
        let _ = JsFuture::from(promise).await;
        if let Some(id) = timer {
            let _ = clear_timeout(&id);
        }
        if let (Some(signal), Some(wake)) = (&signal, &wake) {
            let _ = signal.remove_event_listener_with_callback("abort", wake);
        }
    }
}
