//! One round of `follow()`: whether there is anything to follow, one poll of the guard's
//! contract's stream, what its answer means ([`classify_poll`]) applied to the store (a page
//! of events, a `status_changes` answer), and the tasks read back after it (each running
//! task's status after a fresh cursor, each failed task's reason), one at a time.

use super::super::endpoints::{read_status, read_task_error, Limit};
use super::super::follow::{classify_poll, ChangesPage, EventId, PollAnswer};
use super::super::ids::TaskId;
use super::super::model::{JobRecord, Status, TaskStatus};
use super::super::pages::EventPage;
use super::super::quiet::{self, Json};
use super::super::response::Contract;
use super::super::tabs::Change;
use super::super::task::StatusChange;
use super::super::waiters::Waiters;
use super::following::Loop;
use super::io::{Answer, Body, GuardId, Method, ReqId};
use super::requests::Purpose;
use super::{Machine, Platform};

/// A task read back.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Back {
    /// Its status (`GET /api/v1/task/<uuid>/status`), after a fresh cursor.
    Status(String),
    /// Why it failed (`GET /api/v1/task/<uuid>`, its `semantic_result_error`).
    Reason(String),
}

/// The round in progress.
#[derive(Debug, Default)]
pub(super) struct Round {
    /// When its poll went out.
    started: u64,
    /// Whether its poll carried a cursor.
    sent_cursor: bool,
    /// The session's running records when it went out.
    running: Vec<String>,
    /// The answer's status and `Retry-After` while its body is read.
    status: Option<(u16, Option<String>)>,
    /// What is read back next, and what is being read now.
    queue: Vec<Back>,
    reading: Option<Back>,
    reasons_queued: bool,
    /// The records it changed, and the tasks among them that failed.
    changed: usize,
    failed: Vec<String>,
    /// It ended a job a waiter awaits.
    progress: bool,
}

impl Round {
    /// Whether it is reading tasks back (its waiters settle once it has: a failed task's
    /// with its reason).
    pub(super) fn reading_back(&self) -> bool {
        self.reading.is_some() || !self.queue.is_empty()
    }

    fn add(&mut self, records: &[JobRecord], waiters: &Waiters) {
        self.changed += records.len();
        self.progress |= records
            .iter()
            .any(|r| r.is_terminal() && waiters.awaits(&r.job_id));
        let failed = records
            .iter()
            .filter(|r| r.status() == Status::Task(TaskStatus::Failure));
        self.failed.extend(failed.map(|r| r.job_id.to_string()));
    }
}

impl<P: Platform> Machine<P> {
    /// Polls now, if there is anything to follow (else the loop idles until a change).
    pub(super) fn poll_now(&mut self, id: GuardId) {
        let now = self.now();
        let Some(guard) = self.guard(id) else {
            return;
        };
        guard.follow.state = Loop::Idle;
        if guard.stream_absent {
            return self.end_follow(id);
        }
        if !guard.may_follow() {
            return self.pause_follow(id);
        }
        let contract = guard.options.contract;
        let running = guard.store.running(contract);
        if running.is_empty() {
            return;
        }
        let (url, sent_cursor) = match contract {
            Contract::AsyncEvent => {
                // Superset's own key, when it holds one: the next leader and Superset's own
                // frontend go on from it.
                if guard.shared() {
                    if let Some(stored) = guard
                        .store
                        .superset_cursor()
                        .as_deref()
                        .and_then(EventId::parse)
                    {
                        guard.follow.event = Some(stored);
                    }
                }
                let last = guard.follow.event.as_ref().map(EventId::as_str);
                (guard.options.events_url(last), last.is_some())
            }
            Contract::Task => {
                let cursor = guard.follow.task.as_ref().map(|c| c.as_str());
                (guard.options.changes_url(cursor), cursor.is_some())
            }
        };
        let timeout = guard.options.timeout_ms;
        guard.follow.round = Some(Round {
            started: now,
            sent_cursor,
            running,
            ..Round::default()
        });
        let req = self.send(
            Purpose::Poll { guard: id },
            Method::Get,
            url,
            None,
            false,
            timeout,
        );
        if let Some(guard) = self.guard(id) {
            guard.follow.state = Loop::Polling(req);
        }
    }

    fn round(&mut self, id: GuardId, req: ReqId) -> Option<&mut Round> {
        let guard = self.guard(id)?;
        if guard.follow.state != Loop::Polling(req) {
            return None;
        }
        guard.follow.round.as_mut()
    }

    pub(super) fn poll_answered(&mut self, id: GuardId, req: ReqId, answer: &Answer) {
        let json = answer.is_json();
        let ok = (200..=299).contains(&answer.status);
        let Some(round) = self.round(id, req) else {
            return self.end(req, true);
        };
        if round.reading.is_some() {
            if ok && json {
                return self.read_body(req, Limit::Body);
            }
            self.end(req, true);
            return self.read_back(id, None);
        }
        if ok && json {
            round.status = Some((answer.status, answer.retry_after.clone()));
            return self.read_body(req, Limit::Page);
        }
        let sent_cursor = round.sent_cursor;
        self.end(req, true);
        let contract = self
            .guard(id)
            .map_or(Contract::AsyncEvent, |g| g.options.contract);
        let answer_is = classify_poll(answer.status, json, contract, sent_cursor);
        self.poll_decided(id, answer_is, answer.retry_after.as_deref(), None);
    }

    pub(super) fn poll_body(&mut self, id: GuardId, req: ReqId, body: Body) {
        self.end(req, false);
        let Some(round) = self.round(id, req) else {
            return;
        };
        if round.reading.is_some() {
            let text = match body {
                Body::Text(text) => Some(text),
                _ => None,
            };
            return self.read_back(id, text);
        }
        let retry_after = round.status.take().and_then(|(_, r)| r);
        let page = match body {
            Body::Text(text) => Some((text, false)),
            Body::Cut(text) => Some((text, true)),
            _ => None,
        };
        self.poll_decided(id, PollAnswer::Read, retry_after.as_deref(), Some(page));
    }

    pub(super) fn poll_failed(&mut self, id: GuardId, req: ReqId) {
        let Some(round) = self.round(id, req) else {
            return;
        };
        if round.reading.is_some() {
            return self.read_back(id, None);
        }
        self.poll_decided(id, PollAnswer::Failed, None, None);
    }

    /// What a poll's answer means, applied; `page`: a 2xx JSON body's text (its start, when
    /// cut), `Some(None)` when it could not be read.
    fn poll_decided(
        &mut self,
        id: GuardId,
        answer: PollAnswer,
        retry_after: Option<&str>,
        page: Option<Option<(String, bool)>>,
    ) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        match answer {
            PollAnswer::SignedOut => {
                // Said once, as every 401 is, where its answer comes in; the next login resumes
                // following.
                guard.follow.round = None;
            }
            PollAnswer::Forbidden => {
                guard.follow.round = None;
                self.shut_out(id, Change::Forbidden);
            }
            PollAnswer::Absent => {
                guard.follow.round = None;
                self.end_follow(id);
            }
            PollAnswer::CursorRefused => {
                guard.follow.task = None;
                self.round_failed(id, None);
            }
            PollAnswer::Failed => self.round_failed(id, retry_after),
            PollAnswer::Read => match (page.flatten(), guard.options.contract) {
                (None, _) => self.round_failed(id, None),
                (Some((text, cut)), Contract::AsyncEvent) => self.apply_events(id, &text, cut),
                (Some((text, cut)), Contract::Task) => self.apply_changes(id, &text, cut),
            },
        }
    }

    fn round_failed(&mut self, id: GuardId, retry_after: Option<&str>) {
        let now = self.now();
        let Some(guard) = self.guards.iter_mut().find(|g| g.id == id) else {
            return;
        };
        let started = guard.follow.round.take().map_or(now, |r| r.started);
        let wait = guard
            .follow
            .cadence()
            .failed(retry_after, now, &mut self.random);
        self.next_round(id, Some(wait), started, true);
    }

    /// A page of the async_event stream, `{ result: [event, …] }` (its start, when `cut`):
    /// applied, and the cursor moved past what was read; read in part, the rest comes with
    /// the next poll, at once.
    fn apply_events(&mut self, id: GuardId, text: &str, cut: bool) {
        let Ok(page) = EventPage::from_text(text, cut) else {
            return self.round_failed(id, None);
        };
        let Some(guard) = self.guard(id) else {
            return;
        };
        guard
            .store
            .count_page(page.skipped, page.unknown, page.partial);
        let mut changed = Vec::new();
        for event in page.events {
            if let Ok(Some(record)) = guard.store.apply_event(event) {
                changed.push(record);
            }
        }
        if let Some(last) = page.last_id {
            if guard.follow.event.as_ref().is_none_or(|sent| last > *sent) {
                if guard.shared() {
                    guard.store.set_superset_cursor(last.as_str());
                }
                guard.follow.event = Some(last);
                if page.partial {
                    guard.follow.cadence().restart();
                }
            }
        }
        if let Some(round) = guard.follow.round.as_mut() {
            round.add(&changed, &guard.waits.rules);
        }
        self.round_done(id);
    }

    /// A `status_changes` answer and its cursor, applied; then the tasks to read back. One
    /// that cannot be read (or is longer than a page) is counted, and the stream starts again
    /// from a fresh cursor, whose first answer reads each running task's status back, so
    /// that nothing is lost.
    fn apply_changes(&mut self, id: GuardId, text: &str, cut: bool) {
        let page = (!cut)
            .then(|| quiet::parse(text).ok())
            .flatten()
            .and_then(|body| ChangesPage::read_with(|| Json(&body)).ok());
        let Some(guard) = self.guard(id) else {
            return;
        };
        let Some(page) = page else {
            guard.follow.task = None;
            guard.store.count_page(0, 0, true);
            return self.round_failed(id, None);
        };
        let records = guard.store.apply_task_statuses(page.changes);
        if page.cursor.is_some() {
            guard.follow.task = page.cursor;
        }
        let Some(round) = guard.follow.round.as_mut() else {
            return;
        };
        round.add(&records, &guard.waits.rules);
        if !round.sent_cursor {
            round.queue = round
                .running
                .iter()
                .rev()
                .cloned()
                .map(Back::Status)
                .collect();
        }
        self.read_back(id, None);
    }

    /// The task being read back answered `text` (a 2xx JSON body, or none); the next one is
    /// read, and the round is done when none is left.
    fn read_back(&mut self, id: GuardId, text: Option<String>) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let Some(round) = guard.follow.round.as_mut() else {
            return;
        };
        match (round.reading.take(), text) {
            (Some(Back::Status(task)), Some(text)) => {
                let change =
                    read_status(&text)
                        .zip(TaskId::parse(&task))
                        .map(|(status, task_id)| StatusChange {
                            task_id,
                            status: Some(status),
                        });
                if let Some(change) = change {
                    let records = guard.store.apply_task_statuses(vec![change]);
                    if let Some(round) = guard.follow.round.as_mut() {
                        round.add(&records, &guard.waits.rules);
                    }
                }
            }
            (Some(Back::Reason(task)), Some(text)) => {
                if let Some(reason) = read_task_error(&text) {
                    guard.store.keep_task_error(&task, &reason);
                }
            }
            _ => {}
        }
        let Some(round) = guard.follow.round.as_mut() else {
            return;
        };
        if round.queue.is_empty() && !round.reasons_queued {
            round.reasons_queued = true;
            round.queue = round
                .failed
                .iter()
                .rev()
                .cloned()
                .map(Back::Reason)
                .collect();
        }
        let Some(next) = round.queue.pop() else {
            return self.round_done(id);
        };
        let url = match &next {
            Back::Status(task) => guard.options.status_url_for(task),
            Back::Reason(task) => guard.options.task_url_for(task),
        };
        round.reading = Some(next);
        let timeout = guard.options.timeout_ms;
        let req = self.send(
            Purpose::Poll { guard: id },
            Method::Get,
            url,
            None,
            false,
            timeout,
        );
        if let Some(guard) = self.guard(id) {
            guard.follow.state = Loop::Polling(req);
        }
    }

    /// The round read its answer: the next poll after the interval when it changed a record
    /// (the listeners told), after a longer one when it was quiet.
    fn round_done(&mut self, id: GuardId) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let Some(round) = guard.follow.round.take() else {
            return;
        };
        // The shortest interval again after progress: a job a waiter awaits ended, or (nobody
        // waits: the app follows its records) any record changed. A job of a superseded query
        // ending (cancelled) is nobody's progress: the cadence backs off as when it is quiet.
        let progress = round.progress || (round.changed > 0 && guard.waits.rules.is_empty());
        let wait = if progress {
            guard.follow.cadence().changed()
        } else {
            guard.follow.cadence().quiet()
        };
        if round.changed > 0 {
            self.changed(id, Change::JobsChanged);
        }
        self.next_round(id, Some(wait), round.started, false);
    }
}
