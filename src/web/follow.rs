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
use super::dom;
use super::http::{clear_timeout, set_timeout, Body, Client, Request, Sender};
use super::listeners::Listeners;
use super::random::MathRandom;
use super::state::Inner;
use super::storage;
use super::tabs::TabHost;
use crate::core::clock::Clock;
use crate::core::endpoints::{is_json_type, read_status, read_task_error, Limit};
use crate::core::fallback::StorageMode;
use crate::core::follow::{
    classify_poll, Cadence, ChangesPage, EventId, FollowOptions, PollAnswer, TaskCursor,
};
use crate::core::ids::TaskId;
use crate::core::model::{JobRecord, Status, TaskStatus};
use crate::core::pages::EventPage;
use crate::core::quiet::{self, Json};
use crate::core::response::Contract;
use crate::core::tabs::{Change, Source};
use crate::core::task::StatusChange;

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

/// Starts following; returns the function that stops it. A guard follows once: a second
/// `follow()` stops the first.
pub fn start(
    inner: &Rc<RefCell<Inner>>,
    listeners: &Rc<RefCell<Listeners>>,
    options: FollowOptions,
) -> Result<Function, JsValue> {
    let controller = AbortController::new()?;
    let signal = dom::signal_of(&controller).ok_or_else(|| JsValue::from_str("no signal"))?;
    // `controller.abort` bound to the controller: the stop function, with no Rust behind it.
    let stop = Reflect::get(&controller, &JsValue::from_str("abort"))?
        .dyn_into::<Function>()?
        .bind0(&controller);
    let earlier = match inner.try_borrow_mut() {
        Ok(mut guard) => guard.follow.replace(controller),
        Err(_) => None,
    };
    if let Some(earlier) = earlier {
        dom::abort(&earlier);
    }
    let weak = Rc::downgrade(inner);
    let listeners = Rc::downgrade(listeners);
    wasm_bindgen_futures::spawn_local(lead(weak, listeners, options, signal));
    Ok(stop)
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
    options: FollowOptions,
    signal: AbortSignal,
) {
    let name = {
        let Some(state) = inner.upgrade() else { return };
        let Ok(guard) = state.try_borrow() else {
            return;
        };
        let shared = guard.store.storage_status().kind != StorageMode::Memory;
        shared.then(|| format!("superset-job-guard:{}:follow", guard.options.namespace))
    };
    let locks = name.as_ref().and_then(|_| locks());
    let (Some(locks), Some(name)) = (locks, name) else {
        poll(inner, listeners, options, &signal).await;
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
        poll(inner, listeners, options, &signal).await;
        return;
    };
    // The request rejects when `stop()` aborts it before the lock comes.
    let won = JsFuture::from(Promise::race(&Array::of2(&acquired, &requested))).await;
    if won.is_ok() && !dom::is_aborted(&signal) {
        poll(inner, listeners, options, &signal).await;
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

/// Where the stream is: the async_event stream's last event id (kept in Superset's own
/// `last_async_event_id` when the guard's storage is localStorage, so the next leader and
/// Superset's own frontend go on from it), the task stream's cursor (in the leader's memory).
#[derive(Default)]
struct Cursor {
    /// Whether the guard's storage is the origin's (else the cursor stays in memory).
    shared: bool,
    event: Option<EventId>,
    task: Option<TaskCursor>,
}

impl Cursor {
    /// The async_event cursor: Superset's key when it holds one, else this leader's.
    fn event(&mut self) -> Option<EventId> {
        let stored = self.shared.then(storage::last_event_id).flatten();
        if let Some(stored) = stored.as_deref().and_then(EventId::parse) {
            self.event = Some(stored);
        }
        self.event.clone()
    }

    fn set_event(&mut self, id: EventId) {
        if self.shared {
            storage::set_last_event_id(id.as_str());
        }
        self.event = Some(id);
    }
}

/// What the loop does next.
enum Next {
    /// Wait this long (or until a change), then poll.
    Wait(u64),
    /// Nothing to follow: wait for a change.
    Idle,
    /// The guard is gone or the follow stopped.
    End,
}

/// Polls while there is something to follow, until stopped.
async fn poll(
    inner: Weak<RefCell<Inner>>,
    listeners: Weak<RefCell<Listeners>>,
    options: FollowOptions,
    signal: &AbortSignal,
) {
    let mut cadence = Cadence::new(options);
    let mut cursor = Cursor {
        shared: inner.upgrade().is_some_and(|state| {
            state
                .try_borrow()
                .is_ok_and(|g| g.store.storage_status().kind != StorageMode::Memory)
        }),
        ..Cursor::default()
    };
    // When the last poll went out, and until when a failure's backoff holds.
    let mut last_poll = None;
    let mut backoff_until = None;
    loop {
        if dom::is_aborted(signal) {
            return;
        }
        let started = DateClock.now_ms();
        let next = match inner.upgrade() {
            Some(state) => once(&state, &listeners, &mut cadence, &mut cursor, signal).await,
            None => Next::End,
        };
        let mut wait = match next {
            Next::End => return,
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
        // Something new (a record written by any tab, a login) brings the next poll forward,
        // but never into a failure's backoff, nor within `intervalMs` of the last poll.
        while wait != Some(0) && wait_for(&inner, &listeners, wait, signal).await {
            wait = Some(cadence.woken(DateClock.now_ms(), last_poll, backoff_until));
        }
    }
}

/// One round: whether there is anything to follow, and if so one poll and what it means.
async fn once(
    state: &Rc<RefCell<Inner>>,
    listeners: &Weak<RefCell<Listeners>>,
    cadence: &mut Cadence,
    cursor: &mut Cursor,
    signal: &AbortSignal,
) -> Next {
    let (contract, running, client, poll, sent_cursor) = {
        let Ok(mut guard) = state.try_borrow_mut() else {
            return Next::Wait(cadence.current_ms());
        };
        let contract = guard.options.contract;
        if guard.follow_signed_out {
            return Next::Idle;
        }
        let running = guard.store.running(contract);
        if running.is_empty() {
            return Next::Idle;
        }
        let (url, sent_cursor) = match contract {
            Contract::AsyncEvent => {
                let last = cursor.event();
                let url = guard.options.events_url(last.as_ref().map(EventId::as_str));
                (url, last.is_some())
            }
            Contract::Task => {
                let url = guard
                    .options
                    .changes_url(cursor.task.as_ref().map(TaskCursor::as_str));
                (url, cursor.task.is_some())
            }
        };
        let poll = Request::new(url, &guard.options.headers, "GET", None);
        let sender = Sender {
            fetch: guard.fetch.clone(),
            timeout_ms: guard.options.timeout_ms as f64,
        };
        let logout = guard.logout_signal();
        let client = Client::new(sender, Some(signal.clone()), logout);
        (contract, running, client, poll, sent_cursor)
    };
    let answer = read(&client, &poll, Limit::Page).await;
    let now = DateClock.now_ms();
    let next = match answer {
        // Stopped; or a logout (which aborts requests in flight) ended this poll: wait for a
        // session.
        None if dom::is_aborted(signal) => Next::End,
        None => Next::Idle,
        Some(Err(())) => Next::Wait(cadence.failed(None, now, &mut MathRandom)),
        Some(Ok(Polled {
            status,
            json,
            retry_after,
            text,
            cut,
        })) => match classify_poll(status, json, contract, sent_cursor) {
            PollAnswer::SignedOut => {
                // Announced once, to this tab's `subscribe` and to the other tabs' listeners
                // (the app's cue to sign in again); the next `login` resumes following.
                let first = match state.try_borrow_mut() {
                    Ok(mut guard) if !guard.follow_signed_out => {
                        guard.follow_signed_out = true;
                        guard.announce(Change::Unauthorized);
                        true
                    }
                    _ => false,
                };
                if let (true, Some(listeners)) = (first, listeners.upgrade()) {
                    Listeners::notify(&listeners, Change::Unauthorized, Source::Local);
                }
                Next::Idle
            }
            PollAnswer::CursorRefused => {
                cursor.task = None;
                Next::Wait(cadence.failed(None, now, &mut MathRandom))
            }
            PollAnswer::Failed => {
                Next::Wait(cadence.failed(retry_after.as_deref(), now, &mut MathRandom))
            }
            PollAnswer::Read => {
                // Read from its text by the readers `applyEvent` and `applyStatusChanges`
                // use (one reader of each shape in the module).
                let changed = match (text, contract) {
                    (None, _) => None,
                    (Some(body), Contract::AsyncEvent) => {
                        apply_events(state, cursor, &body, cut).map(|(changed, more)| {
                            // Read in part: the rest comes with the next poll, at once.
                            if more {
                                cadence.restart();
                            }
                            changed
                        })
                    }
                    (Some(_), Contract::Task) if cut => {
                        skip_changes(state, cursor);
                        None
                    }
                    (Some(body), Contract::Task) => match apply_changes(state, cursor, &body) {
                        Some(mut failed) => {
                            let mut changed = failed.len();
                            if !sent_cursor {
                                changed +=
                                    read_statuses(state, &client, &poll, &running, &mut failed)
                                        .await;
                            }
                            read_reasons(state, &client, &poll, &failed).await;
                            Some(changed)
                        }
                        None => {
                            skip_changes(state, cursor);
                            None
                        }
                    },
                };
                match changed {
                    None => Next::Wait(cadence.failed(None, now, &mut MathRandom)),
                    Some(0) => Next::Wait(cadence.quiet()),
                    Some(_) => {
                        if let Some(listeners) = listeners.upgrade() {
                            Listeners::notify(&listeners, Change::JobsChanged, Source::Local);
                        }
                        Next::Wait(cadence.changed())
                    }
                }
            }
        },
    };
    client.release();
    next
}

/// A poll's answer, as far as `follow` reads it.
struct Polled {
    status: u16,
    /// Whether its `Content-Type` is JSON (and it was not reached by a redirect).
    json: bool,
    retry_after: Option<String>,
    /// A 2xx JSON body's text (its start, when `cut`).
    text: Option<String>,
    /// The body was longer than the page limit: `text` is its start.
    cut: bool,
}

/// Sends `request` once: its status, whether its body is JSON, its `Retry-After`, and a 2xx
/// JSON body's text within `limit`. `Some(Err(()))` for a network error or a timeout; `None`
/// when it was aborted first.
async fn read(client: &Client, request: &Request, limit: Limit) -> Option<Result<Polled, ()>> {
    let answer = match client.send(request).await? {
        Ok(answer) => answer,
        Err(_) => return Some(Err(())),
    };
    let status = answer.status;
    let json = !answer.redirected()
        && answer
            .header("Content-Type")
            .is_some_and(|k| is_json_type(&k));
    let (text, cut) = if json && (200..=299).contains(&status) {
        match client.text(&answer, limit).await {
            Ok(Body::Text(text)) => (Some(text), false),
            Ok(Body::Cut(text)) => (Some(text), true),
            Ok(Body::TooLong | Body::Broken) => (None, false),
            Err(()) if client.aborted() => return None,
            Err(()) => return Some(Err(())),
        }
    } else {
        (None, false)
    };
    Some(Ok(Polled {
        status,
        json,
        retry_after: answer.header("Retry-After"),
        text,
        cut,
    }))
}

/// Sends `url` a `GET` like `like` (its headers), once: the text of a 2xx JSON answer within
/// the body limit (a task read back).
async fn get_text(client: &Client, like: &Request, url: &str) -> Option<String> {
    let request = Request {
        url: url.to_owned(),
        init: like.init.clone(),
    };
    match read(client, &request, Limit::Body).await? {
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

/// Applies a page of the async_event stream, `{ result: [event, …] }` (its start, when
/// `cut`), and moves the cursor past what it read; how many records changed, and whether the
/// page was read only in part (there is more to read at once). `None` for a page of which
/// nothing could be read.
fn apply_events(
    state: &Rc<RefCell<Inner>>,
    cursor: &mut Cursor,
    body: &str,
    cut: bool,
) -> Option<(usize, bool)> {
    let page = EventPage::from_text(body, cut).ok()?;
    let mut guard = state.try_borrow_mut().ok()?;
    guard
        .store
        .count_page(page.skipped, page.unknown, page.partial);
    let mut changed = 0;
    for event in page.events {
        if let Ok(Some(_)) = guard.store.apply_event(event) {
            changed += 1;
        }
    }
    drop(guard);
    let mut more = false;
    if let Some(last) = page.last_id {
        if cursor.event.as_ref().is_none_or(|sent| last > *sent) {
            cursor.set_event(last);
            more = page.partial;
        }
    }
    Some((changed, more))
}

/// A `status_changes` answer that cannot be read (or is longer than the page limit): counted,
/// and the stream starts again from a fresh cursor, whose first answer reads each running
/// task's status back, so that the stream is not stuck on it and nothing is lost.
fn skip_changes(state: &Rc<RefCell<Inner>>, cursor: &mut Cursor) {
    cursor.task = None;
    if let Ok(mut guard) = state.try_borrow_mut() {
        guard.store.count_page(0, 0, true);
    }
}

/// Applies a `status_changes` answer and takes its cursor: the records that changed, as the
/// ids of those that failed (for [`read_reasons`]) beside the others (`None` in their place).
fn apply_changes(
    state: &Rc<RefCell<Inner>>,
    cursor: &mut Cursor,
    body: &str,
) -> Option<Vec<Option<String>>> {
    let body = quiet::parse(body).ok()?;
    let page = ChangesPage::read_with(|| Json(&body)).ok()?;
    let changed = state
        .try_borrow_mut()
        .ok()?
        .store
        .apply_task_statuses(page.changes);
    if page.cursor.is_some() {
        cursor.task = page.cursor;
    }
    Some(changed.iter().map(failed_id).collect())
}

/// A changed record's id if it is a task that failed.
fn failed_id(record: &JobRecord) -> Option<String> {
    (record.status() == Status::Task(TaskStatus::Failure)).then(|| record.job_id.to_string())
}

/// After a fresh cursor (the first poll, or after the server refused the cursor): each running
/// task's status, read back, so that no change made before the cursor is lost. How many
/// records changed; those that failed are added to `failed`.
async fn read_statuses(
    state: &Rc<RefCell<Inner>>,
    client: &Client,
    poll: &Request,
    running: &[String],
    failed: &mut Vec<Option<String>>,
) -> usize {
    let mut changed = 0;
    for id in running {
        let Ok(url) = state.try_borrow().map(|g| g.options.status_url_for(id)) else {
            break;
        };
        let Some(status) = get_text(client, poll, &url)
            .await
            .as_deref()
            .and_then(read_status)
        else {
            continue;
        };
        let Some(task_id) = TaskId::parse(id) else {
            continue;
        };
        let change = StatusChange {
            task_id,
            status: Some(status),
        };
        if let Ok(mut guard) = state.try_borrow_mut() {
            let records = guard.store.apply_task_statuses(vec![change]);
            changed += records.len();
            failed.extend(records.iter().map(failed_id));
        }
    }
    changed
}

/// Each task that failed: why, read back as Superset's own frontend reads it
/// (`GET /api/v1/task/<uuid>`, its `semantic_result_error`), kept as its record's error. A
/// task whose reason cannot be read keeps its record as it is.
async fn read_reasons(
    state: &Rc<RefCell<Inner>>,
    client: &Client,
    poll: &Request,
    failed: &[Option<String>],
) {
    for id in failed.iter().flatten() {
        let Ok(url) = state.try_borrow().map(|g| g.options.task_url_for(id)) else {
            break;
        };
        let Some(reason) = get_text(client, poll, &url)
            .await
            .as_deref()
            .and_then(read_task_error)
        else {
            continue;
        };
        if let Ok(mut guard) = state.try_borrow_mut() {
            guard.store.keep_task_error(id, &reason);
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
