//! One round of `follow()`: whether there is anything to follow, one poll of the guard's
//! contract's stream and what its answer means ([`crate::core::follow`]), applied to the
//! store: a page of events, a `status_changes` answer, a task's status or reason read back.
//! The loop around it, and who leads it, is [`super::follow`].

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use web_sys::AbortSignal;

use super::clock::DateClock;
use super::dom;
use super::http::{Body, Client, Sender};
use super::listeners::Listeners;
use super::random::MathRandom;
use super::request::Request;
use super::state::Inner;
use super::storage;
use crate::core::clock::Clock;
use crate::core::endpoints::{is_json_type, read_status, read_task_error, Limit};
use crate::core::follow::{classify_poll, Cadence, ChangesPage, EventId, PollAnswer, TaskCursor};
use crate::core::ids::TaskId;
use crate::core::model::{JobRecord, Status, TaskStatus};
use crate::core::options::GuardOptions;
use crate::core::pages::EventPage;
use crate::core::quiet::{self, Json};
use crate::core::response::Contract;
use crate::core::tabs::{Change, Source};
use crate::core::task::StatusChange;

/// Where the stream is: the async_event stream's last event id (kept in Superset's own
/// `last_async_event_id` when the guard's storage is localStorage, so the next leader and
/// Superset's own frontend go on from it), the task stream's cursor (in the leader's memory).
#[derive(Default)]
pub(super) struct Cursor {
    /// Whether the guard's storage is the origin's (else the cursor stays in memory).
    shared: bool,
    event: Option<EventId>,
    task: Option<TaskCursor>,
}

impl Cursor {
    /// A cursor at the start; `shared`: the guard's storage is the origin's.
    pub(super) fn new(shared: bool) -> Self {
        Self {
            shared,
            ..Self::default()
        }
    }

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
pub(super) enum Next {
    /// Wait this long (or until a change), then poll.
    Wait(u64),
    /// Nothing to follow: wait for a change.
    Idle,
    /// The guard is gone or the follow stopped.
    End,
}

/// One round: whether there is anything to follow, and if so one poll and what it means.
pub(super) async fn once(
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
        if guard.follow_signed_out || guard.follow_forbidden {
            return Next::Idle;
        }
        if guard.stream_absent {
            return Next::End;
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
            PollAnswer::Forbidden => {
                // As a 401: announced once, here and to the session's other tabs, and no poll
                // until the next `login` (never retried).
                let first = match state.try_borrow_mut() {
                    Ok(mut guard) if !guard.follow_forbidden => {
                        guard.follow_forbidden = true;
                        guard.announce(Change::Forbidden);
                        true
                    }
                    _ => false,
                };
                if let (true, Some(listeners)) = (first, listeners.upgrade()) {
                    Listeners::notify(&listeners, Change::Forbidden, Source::Local);
                }
                Next::Idle
            }
            PollAnswer::Absent => {
                // No stream to follow: remembered, and the loop ends (letting the poller lock
                // go, so each tab finds it out and settles its own waits).
                if let Ok(mut guard) = state.try_borrow_mut() {
                    guard.stream_absent = true;
                }
                Next::End
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
                        Some(mut changed) => {
                            if !sent_cursor {
                                read_statuses(state, &client, &poll, &running, &mut changed).await;
                            }
                            read_reasons(state, &client, &poll, &changed.failed).await;
                            Some(changed.records)
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

/// The task records an answer changed: how many, and the ids of those that failed (whose
/// reasons are read back).
#[derive(Default)]
struct Changed {
    records: usize,
    failed: Vec<String>,
}

impl Changed {
    fn add(&mut self, records: &[JobRecord]) {
        self.records += records.len();
        let failed = records
            .iter()
            .filter(|r| r.status() == Status::Task(TaskStatus::Failure));
        self.failed.extend(failed.map(|r| r.job_id.to_string()));
    }
}

/// Applies a `status_changes` answer and takes its cursor: the records that changed.
fn apply_changes(state: &Rc<RefCell<Inner>>, cursor: &mut Cursor, body: &str) -> Option<Changed> {
    let body = quiet::parse(body).ok()?;
    let page = ChangesPage::read_with(|| Json(&body)).ok()?;
    let records = state
        .try_borrow_mut()
        .ok()?
        .store
        .apply_task_statuses(page.changes);
    if page.cursor.is_some() {
        cursor.task = page.cursor;
    }
    let mut changed = Changed::default();
    changed.add(&records);
    Some(changed)
}

/// Reads task `id` back once: a `GET` of the URL `url_for` makes for it (with the poll's
/// headers), its 2xx JSON answer read by `read`.
async fn read_back<T>(
    state: &Rc<RefCell<Inner>>,
    client: &Client,
    poll: &Request,
    id: &str,
    url_for: fn(&GuardOptions, &str) -> String,
    read: fn(&str) -> Option<T>,
) -> Option<T> {
    let url = state.try_borrow().ok().map(|g| url_for(&g.options, id))?;
    get_text(client, poll, &url).await.as_deref().and_then(read)
}

/// After a fresh cursor (the first poll, or after the server refused the cursor): each running
/// task's status, read back, so that no change made before the cursor is lost; the records that
/// changed are added to `changed`.
async fn read_statuses(
    state: &Rc<RefCell<Inner>>,
    client: &Client,
    poll: &Request,
    running: &[String],
    changed: &mut Changed,
) {
    for id in running {
        let url_for = GuardOptions::status_url_for;
        let Some(status) = read_back(state, client, poll, id, url_for, read_status).await else {
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
            changed.add(&guard.store.apply_task_statuses(vec![change]));
        }
    }
}

/// Each task that failed: why, read back as Superset's own frontend reads it
/// (`GET /api/v1/task/<uuid>`, its `semantic_result_error`), kept as its record's error. A
/// task whose reason cannot be read keeps its record as it is.
async fn read_reasons(
    state: &Rc<RefCell<Inner>>,
    client: &Client,
    poll: &Request,
    failed: &[String],
) {
    for id in failed {
        let url_for = GuardOptions::task_url_for;
        let Some(reason) = read_back(state, client, poll, id, url_for, read_task_error).await
        else {
            continue;
        };
        if let Ok(mut guard) = state.try_borrow_mut() {
            guard.store.keep_task_error(id, &reason);
        }
    }
}
