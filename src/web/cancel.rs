//! The cancel request over `fetch`: check, send, wait, retry, as the core's [`CancelFlow`]
//! decides, as one async Rust function (wasm-bindgen-futures turns it into the promise
//! `cancel()` returns).
//!
//! No borrow of the guard is held across an `await`, so the app may call the guard (even
//! `logout()`) while a cancel is in flight. Aborting uses the platform's own objects: each
//! cancel has an `AbortController` whose signal goes to `fetch`, aborted by the app's signal,
//! by `logout()` and by a session that ends or changes (here or in another tab). Every wait
//! (the `fetch`, the body, a retry's delay) is raced against that signal and, for a request,
//! against the per-attempt timeout (`timeoutMs`): an app `fetch` that ignores its signal, or a
//! body that never arrives, cannot keep a cancel pending. Each request has a controller of its
//! own, whose signal is the one `fetch` gets: a request that runs out of time is aborted, not
//! left open (the browser would queue the next request to the same URL behind it).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function, JsString, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{AbortController, AbortSignal};

use super::boundary::to_js;
use super::clock::DateClock;
use super::dom;
use super::random::MathRandom;
use super::state::Inner;
use super::tabs::{Change, Listeners, Source};
use crate::core::cancel::CancelCheck;
use crate::core::cancel_flow::{Answer, CancelFlow, CancelOutcome, Step};
use crate::core::clock::Clock;
use crate::core::model::TaskStatus;
use crate::core::options::GuardOptions;
use crate::core::response::{read_status, Contract, Reply, MAX_BODY_CHARS, MAX_PAGE_CHARS};

#[wasm_bindgen]
extern "C" {
    /// The global `setTimeout` (absent outside pages and workers: then nothing waits).
    #[wasm_bindgen(catch, js_name = setTimeout)]
    pub(super) fn set_timeout(callback: &Function, ms: f64) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_name = clearTimeout)]
    pub(super) fn clear_timeout(id: &JsValue) -> Result<(), JsValue>;
}

/// Starts one cancel; the promise resolves to its `CancelOutcome` and never rejects.
/// A second `cancel()` of a job whose cancel is still running gets the same promise: one
/// request, one outcome for both.
pub fn start(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    job_id: String,
    app_signal: Option<AbortSignal>,
) -> Promise {
    // The id its record is stored under (a task's uuid in any case): one cancel per record.
    let job_id = match inner.try_borrow() {
        Ok(guard) => {
            let job_id = guard.store.record_id(&job_id).into_owned();
            if let Some((_, running)) = guard.cancels.iter().find(|(id, _)| *id == job_id) {
                return running.clone();
            }
            job_id
        }
        Err(_) => job_id,
    };
    let state = Rc::clone(inner);
    let listeners = Rc::downgrade(listeners);
    let id = job_id.clone();
    let promise = future_to_promise(async move {
        let outcome = run(Rc::clone(&state), id, app_signal).await;
        if let Ok(mut guard) = state.try_borrow_mut() {
            guard.cancels.retain(|(id, _)| *id != outcome.job_id);
        }
        // An answer from the server may have changed the record (settled above, in `run`).
        if outcome.http_status.is_some() {
            if let Some(listeners) = listeners.upgrade() {
                Listeners::notify(&listeners, Change::JobsChanged, Source::Local);
            }
        }
        // A CancelOutcome always converts; the error would be resolved rather than thrown.
        // Frozen: two callers sharing one cancel share its outcome, and neither can change
        // what the other reads.
        let outcome = to_js(&outcome).unwrap_or_else(|e| e);
        let outcome: &Object = outcome.unchecked_ref();
        Ok(Object::freeze(outcome).into())
    });
    // The future first runs in a later microtask: the entry is there before it can end.
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.cancels.push((job_id, promise.clone()));
    }
    promise
}

/// One cancel, from the local check to its outcome. The record's kind says the contract: its
/// endpoint, body and answer table.
async fn run(
    inner: Rc<RefCell<Inner>>,
    job_id: String,
    app_signal: Option<AbortSignal>,
) -> CancelOutcome {
    let (mut flow, request) = {
        let Ok(mut guard) = inner.try_borrow_mut() else {
            // Only reachable if JS re-entered the guard from inside a guard call.
            return CancelFlow::new(&job_id, Default::default(), Default::default(), 0).aborted();
        };
        let check = guard.store.check_cancel(&job_id);
        let contract = match &check {
            CancelCheck::Allowed(record) if record.is_task() => Contract::Task,
            _ => Contract::AsyncEvent,
        };
        let (retry, timeout_ms) = (guard.options.retry, guard.options.timeout_ms);
        let flow = CancelFlow::new(&job_id, retry, contract, timeout_ms);
        if let Some(refused) = flow.refusal(&check) {
            return refused;
        }
        let tab = match contract {
            Contract::Task => guard.store.cancel_tab(&job_id),
            Contract::AsyncEvent => None,
        };
        let options = &guard.options;
        let post = Request {
            url: options.cancel_url_for(&job_id, contract),
            init: request_init(
                &options.headers,
                "POST",
                GuardOptions::cancel_body(contract, tab.as_deref()).as_deref(),
            ),
        };
        let status = (contract == Contract::Task).then(|| Request {
            url: options.status_url_for(&job_id),
            init: request_init(&options.headers, "GET", None),
        });
        let sender = Sender {
            fetch: guard.fetch.clone(),
            timeout_ms: timeout_ms as f64,
        };
        let logout = guard.logout_signal();
        (
            flow,
            Requests::new(sender, post, status, app_signal, logout),
        )
    };

    let outcome = loop {
        if request.aborted() {
            break flow.aborted();
        }
        if flow.sent() > 0 {
            // The session may have changed meanwhile, in this tab or another.
            let check = match inner.try_borrow_mut() {
                Ok(mut guard) => guard.store.check_cancel(&job_id),
                Err(_) => break flow.aborted(),
            };
            if let Some(refused) = flow.refusal(&check) {
                break refused;
            }
        }
        flow.sending();
        // `None`: this cancel was aborted before an answer came.
        let Some(answer) = request.send().await else {
            break flow.aborted();
        };
        match flow.after(&answer, DateClock.now_ms(), &mut MathRandom) {
            Step::Finish(outcome) => break outcome,
            Step::ReadStatus => break flow.after_status(request.task_status().await),
            // An abort during the request ends the cancel rather than a wait.
            Step::Wait(_) if request.aborted() => break flow.aborted(),
            Step::Wait(ms) => request.sleep(ms).await,
        }
    };
    request.release();
    if let Ok(mut guard) = inner.try_borrow_mut() {
        guard.store.settle_cancel(
            &job_id,
            outcome.outcome,
            outcome.action.as_deref(),
            outcome.status,
        );
    }
    outcome
}

/// One request: where, and its `init` (the signal is added per cancel).
pub(super) struct Request {
    pub(super) url: String,
    pub(super) init: Object,
}

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
    /// The cancel was aborted, or the attempt ran out of time, first.
    Stopped,
}

/// The cancel's requests (and `follow`'s polls, with the follow's signal as the app's) with
/// their abort wiring: the app's signal and the guard's (logout, a session that ended or
/// changed) abort this cancel's own controller, whose signal the waits listen to. Each request
/// (an attempt) has a controller of its own, whose signal goes to `fetch`: a wait that stops,
/// out of time or aborted, aborts it, and so does the next attempt and [`release`](Self::release).
pub(super) struct Requests {
    sender: Sender,
    post: Request,
    status: Option<Request>,
    sources: Vec<AbortSignal>,
    controller: Option<AbortController>,
    abort: Option<Function>,
    /// The controller of the request in flight (or whose body is being read).
    attempt: RefCell<Option<AbortController>>,
}

impl Requests {
    pub(super) fn new(
        sender: Sender,
        post: Request,
        status: Option<Request>,
        app: Option<AbortSignal>,
        logout: Option<AbortSignal>,
    ) -> Self {
        let sources: Vec<AbortSignal> = app.into_iter().chain(logout).collect();
        let controller = AbortController::new().ok();
        // `controller.abort` bound to the controller: a listener with no Rust behind it.
        let abort = controller.as_ref().and_then(|c| {
            Reflect::get(c, &JsValue::from_str("abort"))
                .ok()?
                .dyn_into::<Function>()
                .ok()
                .map(|f| f.bind0(c))
        });
        if let Some(abort) = &abort {
            for source in &sources {
                let _ = source.add_event_listener_with_callback("abort", abort);
            }
        }
        Self {
            sender,
            post,
            status,
            sources,
            controller,
            abort,
            attempt: RefCell::new(None),
        }
    }

    /// A copy of `request`'s `init` whose `signal` is a new attempt's (the one before it
    /// aborted, if still open).
    fn begin_attempt(&self, request: &Request) -> Object {
        self.end_attempt();
        let init = Object::assign(&Object::new(), &request.init);
        if let Ok(controller) = AbortController::new() {
            if let Some(signal) = dom::signal_of(&controller) {
                let _ = Reflect::set(&init, &JsValue::from_str("signal"), &signal);
            }
            if let Ok(mut attempt) = self.attempt.try_borrow_mut() {
                *attempt = Some(controller);
            }
        }
        init
    }

    /// Aborts the attempt's request, if one is open: its `fetch`, or the body still coming.
    fn end_attempt(&self) {
        let open = self
            .attempt
            .try_borrow_mut()
            .ok()
            .and_then(|mut a| a.take());
        if let Some(controller) = open {
            dom::abort(&controller);
        }
    }

    fn signal(&self) -> Option<AbortSignal> {
        self.controller.as_ref().and_then(dom::signal_of)
    }

    fn aborted(&self) -> bool {
        self.sources.iter().any(dom::is_aborted)
            || self.signal().is_some_and(|s| dom::is_aborted(&s))
    }

    /// Ends the request still open and removes the listeners this cancel added.
    pub(super) fn release(&self) {
        self.end_attempt();
        if let Some(abort) = &self.abort {
            for source in &self.sources {
                let _ = source.remove_event_listener_with_callback("abort", abort);
            }
        }
    }

    /// What a wait that stopped means: `None` if the cancel was aborted, else a timeout.
    fn stopped(&self) -> Option<Answer> {
        (!self.aborted()).then_some(Answer::TimedOut)
    }

    /// Sends `request` once and reads its answer before `deadline` (ms since the epoch): the
    /// status, `Retry-After` and what the body says; a network error if `fetch` threw, rejected
    /// or resolved to something without an integer status in 0..=999. `None` when the cancel
    /// was aborted first.
    async fn fetch(&self, request: &Request) -> Option<Result<(JsValue, u16, f64), Answer>> {
        let deadline = DateClock.now_ms() as f64 + self.sender.timeout_ms;
        let global = js_sys::global();
        let fetch = self.sender.fetch.clone().or_else(|| {
            Reflect::get(&global, &JsValue::from_str("fetch"))
                .ok()?
                .dyn_into::<Function>()
                .ok()
        });
        let Some(fetch) = fetch else {
            return Some(Err(Answer::NetworkError));
        };
        let url = JsValue::from_str(&request.url);
        let init = self.begin_attempt(request);
        let Ok(pending) = fetch.call2(&global, &url, &init) else {
            return Some(Err(Answer::NetworkError));
        };
        let response = match self.wait(&pending, deadline).await {
            Waited::Value(response) => response,
            Waited::Failed if self.aborted() => return None,
            Waited::Failed => return Some(Err(Answer::NetworkError)),
            Waited::Stopped => return self.stopped().map(Err),
        };
        let status = Reflect::get(&response, &JsValue::from_str("status"))
            .ok()
            .and_then(|s| s.as_f64())
            .filter(|s| s.fract() == 0.0 && (0.0..=999.0).contains(s));
        match status {
            Some(status) => Some(Ok((response, status as u16, deadline))),
            None => Some(Err(Answer::NetworkError)),
        }
    }

    /// Sends the cancel request once. `None` when the cancel was aborted before its answer.
    async fn send(&self) -> Option<Answer> {
        let (response, status, deadline) = match self.fetch(&self.post).await? {
            Ok(answered) => answered,
            Err(answer) => return Some(answer),
        };
        let reply = match reply(&response, status) {
            Read::Decided(reply) => reply,
            Read::Text => match self.text(&response, deadline, MAX_BODY_CHARS).await {
                Ok(Body::Text(text)) => Reply::from_text(&text),
                // A 2xx's body that broke: the status is the server's yes.
                Ok(Body::Broken) if (200..=299).contains(&status) => Reply::Unreadable,
                Ok(_) => Reply::NotJson,
                Err(()) => return self.stopped(),
            },
        };
        Some(Answer::Status {
            status,
            retry_after: header(&response, "Retry-After"),
            reply,
        })
    }

    /// A task's status, read once after its 422 (`GET /api/v1/task/<uuid>/status`, no retry):
    /// `None` for anything but a 2xx JSON answer naming a status the guard knows.
    async fn task_status(&self) -> Option<TaskStatus> {
        let request = self.status.as_ref()?;
        let (response, status, deadline) = self.fetch(request).await?.ok()?;
        if !(200..=299).contains(&status) || !matches!(reply(&response, status), Read::Text) {
            return None;
        }
        match self.text(&response, deadline, MAX_BODY_CHARS).await.ok()? {
            Body::Text(text) => read_status(&text),
            _ => None,
        }
    }

    /// Sends the first request (a poll of `follow`) once: its status, whether its body is
    /// JSON, its `Retry-After`, and the JSON body's text (its first [`MAX_PAGE_CHARS`] when it
    /// is longer). `Some(Err(()))` for a network error or a timeout; `None` when it was
    /// aborted first.
    #[cfg(feature = "follow")]
    pub(super) async fn get(&self) -> Option<Result<Polled, ()>> {
        self.read(&self.post, MAX_PAGE_CHARS).await
    }

    /// Sends `url` a `GET` like the first request (its headers, a signal of its own), once:
    /// the text of a 2xx JSON answer of at most [`MAX_BODY_CHARS`] (a task read back).
    #[cfg(feature = "follow")]
    pub(super) async fn get_text(&self, url: &str) -> Option<String> {
        let request = Request {
            url: url.to_owned(),
            init: self.post.init.clone(),
        };
        match self.read(&request, MAX_BODY_CHARS).await? {
            Ok(Polled {
                status: 200..=299,
                json: true,
                text: Some(text),
                cut: false,
                ..
            }) => Some(text),
            _ => None,
        }
    }

    #[cfg(feature = "follow")]
    async fn read(&self, request: &Request, limit: usize) -> Option<Result<Polled, ()>> {
        let (response, status, deadline) = match self.fetch(request).await? {
            Ok(answered) => answered,
            Err(_) => return Some(Err(())),
        };
        let redirected = Reflect::get(&response, &JsValue::from_str("redirected"))
            .ok()
            .and_then(|r| r.as_bool())
            == Some(true);
        let json =
            !redirected && header(&response, "Content-Type").is_some_and(|k| is_json_type(&k));
        let (text, cut) = if json && (200..=299).contains(&status) {
            match self.text(&response, deadline, limit).await {
                Ok(Body::Text(text)) => (Some(text), false),
                Ok(Body::Cut(text)) => (Some(text), true),
                Ok(Body::TooLong | Body::Broken) => (None, false),
                Err(()) if self.aborted() => return None,
                Err(()) => return Some(Err(())),
            }
        } else {
            (None, false)
        };
        Some(Ok(Polled {
            status,
            json,
            retry_after: header(&response, "Retry-After"),
            text,
            cut,
        }))
    }

    /// The body's text, if it is at most `limit` UTF-16 code units long; a longer one is
    /// [`Body::TooLong`] or, where a page may be read in part ([`MAX_PAGE_CHARS`]), its first
    /// `limit` units ([`Body::Cut`]). `Err` when the wait stopped (aborted, or out of time).
    async fn text(&self, response: &JsValue, deadline: f64, limit: usize) -> Result<Body, ()> {
        let may_cut = limit == MAX_PAGE_CHARS;
        // A declared length beyond what the limit allows (at most 3 bytes of UTF-8 for each
        // UTF-16 unit) is not read at all, unless its start is to be read.
        let declared = header(response, "Content-Length")
            .filter(|n| n.len() <= 20 && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok());
        if !may_cut && declared.is_some_and(|n| n > 3 * limit as u64) {
            return Ok(Body::TooLong);
        }
        let pending = Reflect::get(response, &JsValue::from_str("text"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
            .and_then(|f| f.call0(response).ok());
        let Some(pending) = pending else {
            return Ok(Body::Broken);
        };
        let text = match self.wait(&pending, deadline).await {
            Waited::Value(text) => text,
            Waited::Failed => return Ok(Body::Broken),
            Waited::Stopped => return Err(()),
        };
        let Some(text) = text.dyn_ref::<JsString>() else {
            return Ok(Body::Broken);
        };
        let length = text.length() as usize;
        if length <= limit {
            return Ok(text.as_string().map_or(Body::Broken, Body::Text));
        }
        if !may_cut {
            return Ok(Body::TooLong);
        }
        // Not inside a surrogate pair.
        let mut end = limit as u32;
        if text.char_code_at(end - 1) as u32 & 0xFC00 == 0xD800 {
            end -= 1;
        }
        Ok(text
            .slice(0, end)
            .as_string()
            .map_or(Body::Broken, Body::Cut))
    }

    /// Waits for `pending` (a promise, a thenable or a value) until it settles, this cancel is
    /// aborted, or `deadline` (ms since the epoch) passes, whichever comes first.
    async fn wait(&self, pending: &JsValue, deadline: f64) -> Waited {
        if self.aborted() {
            self.end_attempt();
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
                // Out of time or aborted: the request itself ends too.
                self.end_attempt();
                Waited::Stopped
            }
            Ok(value) => Waited::Value(value),
            Err(_) => Waited::Failed,
        }
    }

    /// Waits `ms`, or less if this cancel is aborted first; not at all without timers.
    async fn sleep(&self, ms: u64) {
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

/// A poll's answer, as far as `follow` reads it.
#[cfg(feature = "follow")]
pub(super) struct Polled {
    pub(super) status: u16,
    /// Whether its `Content-Type` is JSON (and it was not reached by a redirect).
    pub(super) json: bool,
    pub(super) retry_after: Option<String>,
    /// A 2xx JSON body's text (its start, when `cut`).
    pub(super) text: Option<String>,
    /// The body was longer than the page limit: `text` is its first [`MAX_PAGE_CHARS`].
    pub(super) cut: bool,
}

/// What reading a body gave.
enum Body {
    Text(String),
    /// The first [`MAX_PAGE_CHARS`] of a longer page.
    #[cfg_attr(not(feature = "follow"), allow(dead_code))]
    Cut(String),
    /// Longer than the limit.
    TooLong,
    /// `text()` is missing, threw, rejected, or gave something that is not a string.
    Broken,
}

/// `response.headers.get(name)`, if there is one to read.
fn header(response: &JsValue, name: &str) -> Option<String> {
    let headers = Reflect::get(response, &JsValue::from_str("headers")).ok()?;
    let get = Reflect::get(&headers, &JsValue::from_str("get"))
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    get.call1(&headers, &JsValue::from_str(name))
        .ok()?
        .as_string()
}

/// What an answer's body says, as far as it can be told without reading it.
enum Read {
    Decided(Reply),
    /// A JSON body the outcome depends on: read its text.
    Text,
}

/// What the answer's body says, read only where the outcome depends on it (a 2xx, a 404, a
/// 422). An answer `fetch` reached by following a redirect is another page's. JSON is told by
/// its `Content-Type`; a body of another type (Superset's HTML error page or login page) is
/// not the endpoint's answer. A 404 without a `Content-Type` is not either (Superset's own
/// 404s are JSON; a dev server's bare 404 for a route it does not have is not "job not
/// found"): the record is kept. Otherwise no `Content-Type` says nothing: read by status alone.
fn reply(response: &JsValue, status: u16) -> Read {
    let redirected = Reflect::get(response, &JsValue::from_str("redirected")).ok();
    if redirected.and_then(|r| r.as_bool()) == Some(true) {
        return Read::Decided(Reply::Redirected);
    }
    if !matches!(status, 200..=299 | 404 | 422) {
        return Read::Decided(Reply::Unread);
    }
    let Some(kind) = header(response, "Content-Type") else {
        return Read::Decided(if status == 404 {
            Reply::NotJson
        } else {
            Reply::Unread
        });
    };
    if is_json_type(&kind) {
        Read::Text
    } else {
        Read::Decided(Reply::NotJson)
    }
}

/// Whether a `Content-Type` is JSON's (`application/json`, or a `+json` type).
fn is_json_type(kind: &str) -> bool {
    let kind = kind.to_ascii_lowercase();
    kind.starts_with("application/json") || kind.contains("+json")
}

/// `{ method, credentials: "same-origin", headers, body? }`; the signal is added per cancel.
/// The request carries no identity of its own: Superset reads it from the `async-token`
/// cookie (or its session). A JSON `body` (the task contract's) comes with
/// `Content-Type: application/json`.
pub(super) fn request_init(
    headers: &[(String, String)],
    method: &str,
    body: Option<&str>,
) -> Object {
    let init = Object::new();
    let set = |target: &JsValue, key: &str, value: &JsValue| {
        let _ = Reflect::set(target, &JsValue::from_str(key), value);
    };
    set(&init, "method", &JsValue::from_str(method));
    set(&init, "credentials", &JsValue::from_str("same-origin"));
    let header_object = Object::new();
    for (name, value) in headers {
        if body.is_some() && name.eq_ignore_ascii_case("content-type") {
            continue;
        }
        set(&header_object, name, &JsValue::from_str(value));
    }
    if let Some(body) = body {
        set(
            &header_object,
            "Content-Type",
            &JsValue::from_str("application/json"),
        );
        set(&init, "body", &JsValue::from_str(body));
    }
    set(&init, "headers", &header_object);
    init
}
