//! `waitFor()`'s waiters in the machine. The rules of one waiter (what settles it, at once
//! when it can no longer hear anything) are [`waiters`](super::super::waiters)'; here a waiter
//! is admitted (a `202` body recorded first), re-read after every event and call, settled
//! (the app's promise, or the query that waits), and kept fed: one timer per guard for the
//! first deadline, a hold on `follow()` while anything waits, and the guard's wait entry that
//! tells other tabs what it awaits. An abort cancels what nobody else awaits
//! ([`Machine::cancel_unawaited`]).

use super::super::awaited::EntryState;
use super::super::session::Session;
use super::super::store::Awaited;
use super::super::wait_input::{admit, heard_on, refused_by, WaitInput, WaitSettings};
use super::super::wait_outcome::{WaitOutcome, WaitRefusal};
use super::super::waiters::{can_hear, Hearing, Waiters};
use super::io::{Effect, GuardId, PromiseId, Settled, SignalId, TimerId};
use super::requests::Wake;
use super::{Machine, Platform};

/// Who hears a waiter's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resolver {
    /// The app: its promise, and the signal that aborts the waiter.
    App {
        promise: PromiseId,
        signal: Option<SignalId>,
    },
    /// A query of the guard (its id), waiting for what its `202` named.
    Query(u32),
}

/// The entry in storage that tells other tabs what a guard awaits.
#[derive(Debug, Default)]
pub(super) struct Entry {
    /// Its token (`<page>-<guard>`), made at its first write.
    pub(super) token: Option<String>,
    /// What it last wrote, and when it writes again.
    pub(super) state: EntryState,
    /// What it listed when another tab's logout took it (read it, stopped what it listed,
    /// removed it): nothing is written again until the next login.
    pub(super) taken: Option<Awaited>,
}

/// A guard's waiters and what keeps them fed.
#[derive(Debug, Default)]
pub(super) struct Waits {
    pub(super) rules: Waiters,
    pub(super) pending: Vec<(u32, Resolver)>,
    /// The timer for the first deadline, and that deadline.
    pub(super) timer: Option<(TimerId, u64)>,
    pub(super) entry: Entry,
    /// The waiters' hold on `follow()`, while anything waits.
    pub(super) hold: Option<u32>,
}

impl Waits {
    /// The waiter a query of the guard waits with.
    pub(super) fn of_query(&self, query: u32) -> Option<u32> {
        self.pending
            .iter()
            .find(|(_, r)| *r == Resolver::Query(query))
            .map(|(id, _)| *id)
    }

    /// The ids of the waiters the guard's queries wait with.
    pub(super) fn of_queries(&self) -> Vec<u32> {
        self.pending
            .iter()
            .filter(|(_, r)| matches!(r, Resolver::Query(_)))
            .map(|(id, _)| *id)
            .collect()
    }
}

/// A refusal before anything waits: the jobs it concerns, the job it names, why.
type Refusal = (Vec<String>, Option<String>, (WaitRefusal, String));

impl<P: Platform> Machine<P> {
    /// `waitFor(input, options)`: a waiter registered now, or refused; `promise` settles with
    /// its outcome.
    pub fn wait_for(
        &mut self,
        id: GuardId,
        input: WaitInput,
        settings: WaitSettings,
        signal: Option<(SignalId, bool)>,
        promise: PromiseId,
    ) {
        let resolver = Resolver::App {
            promise,
            signal: signal.map(|(s, _)| s),
        };
        match self.register_wait(id, input, settings, resolver) {
            Ok((waiter, _)) if signal.is_some_and(|(_, aborted)| aborted) => {
                // Aborted already: recorded, and what no other waiter awaits is cancelled at
                // once, as by an abort a moment later.
                self.abort_waiter(id, waiter);
            }
            Ok(_) => {}
            Err(outcome) => self.resolve_app(resolver, *outcome),
        }
        self.settle_waits();
    }

    /// Registers a waiter of guard `id` for `input` (a `202` body is recorded first) now: its
    /// id and the jobs it awaits, or the outcome that refused it (nothing registered).
    pub(super) fn register_wait(
        &mut self,
        id: GuardId,
        input: WaitInput,
        settings: WaitSettings,
        resolver: Resolver,
    ) -> Result<(u32, Vec<String>), Box<WaitOutcome>> {
        let recorded = !matches!(input, WaitInput::Ids(_));
        let (jobs, owner) =
            self.admit_all(id, input)
                .map_err(|(jobs, job, (reason, message))| {
                    WaitOutcome::refused(&jobs, job.as_deref(), reason, message)
                })?;
        let now = self.now();
        let Some(guard) = self.live(id) else {
            return Err(Box::new(WaitOutcome::aborted(&jobs, Vec::new())));
        };
        let on_close = guard.cancels_on_close(settings.cancel_on_close);
        let waiter = guard
            .waits
            .rules
            .add(jobs.clone(), settings.stale_ms, now, on_close, owner);
        guard.waits.pending.push((waiter, resolver));
        if recorded {
            self.changed(id, super::super::tabs::Change::JobsChanged);
        }
        self.hold_follow_for_waits(id);
        Ok((waiter, jobs))
    }

    /// What guard `id` can hear now: its session, and whether the server answered 401 or 403
    /// since the last login, or 404 (no stream at all).
    pub(super) fn hearing(&mut self, id: GuardId) -> (Option<Session>, [bool; 3]) {
        match self.guard(id) {
            Some(g) => (
                g.store.session(),
                [g.unauthenticated, g.forbidden, g.stream_absent],
            ),
            None => (None, [false; 3]),
        }
    }

    /// Records a `202` body (if given) and checks that every job is the session's and that the
    /// guard can hear of them: the jobs to await (each by its record's id, each once) and the
    /// session they are awaited under, or the refusal.
    pub(super) fn admit_all(
        &mut self,
        id: GuardId,
        input: WaitInput,
    ) -> Result<(Vec<String>, Session), Refusal> {
        let (session, [unauthenticated, forbidden, absent]) = self.hearing(id);
        let hearing = Hearing {
            session: session.as_ref(),
            unauthenticated,
            forbidden,
            absent,
        };
        let session = can_hear(hearing, None)
            .map_err(|refused| (Vec::new(), None, refused))?
            .clone();
        let closed = (
            Vec::new(),
            None,
            (WaitRefusal::NoSession, "The guard was freed".to_owned()),
        );
        let guard = self.live(id).ok_or(closed)?;
        let store = &mut guard.store;
        let ids = match input {
            WaitInput::Ids(ids) => ids,
            WaitInput::Tasks(submission) => match store.record_tasks(submission) {
                Ok(records) => records.iter().map(|r| r.job_id.to_string()).collect(),
                Err(e) => return Err((Vec::new(), None, refused_by(&e))),
            },
            WaitInput::Job(meta) => {
                let job = meta.job_id.to_string();
                if let Err(e) = store.record_job(meta) {
                    return Err((vec![job.clone()], Some(job), refused_by(&e)));
                }
                vec![job]
            }
        };
        let mut jobs: Vec<String> = Vec::with_capacity(ids.len());
        for job in &ids {
            let job = store.record_id(job).into_owned();
            if !jobs.contains(&job) {
                jobs.push(job);
            }
        }
        let contract = guard.options.contract;
        for job in &jobs {
            let check = guard.store.check_cancel(job);
            if let Err(refused) = admit(&check, job).and_then(|()| heard_on(&check, contract, job))
            {
                return Err((jobs.clone(), Some(job.clone()), refused));
            }
        }
        Ok((jobs, session))
    }

    /// Re-reads every guard's waiters and settles those that can; then keeps each guard's
    /// timer, entry and hold on `follow()` to what is left. After every event and call.
    pub(super) fn settle_waits(&mut self) {
        // A guard whose poll reads tasks back settles its waiters once it has (a failed task's
        // with its reason).
        let ids: Vec<GuardId> = self
            .guards
            .iter()
            .filter(|g| {
                !g.waits.rules.is_empty() || g.waits.hold.is_some() || g.waits.timer.is_some()
            })
            .filter(|g| !g.follow.round.as_ref().is_some_and(|r| r.reading_back()))
            .map(|g| g.id)
            .collect();
        for id in ids {
            self.check_waits(id);
        }
        self.reap();
    }

    pub(super) fn check_waits(&mut self, id: GuardId) {
        let now = self.now();
        let (session, [unauthenticated, forbidden, absent]) = self.hearing(id);
        let Some(guard) = self.guard(id) else {
            return;
        };
        let hearing = Hearing {
            session: session.as_ref(),
            unauthenticated,
            forbidden,
            absent,
        };
        let store = &mut guard.store;
        let settled = guard
            .waits
            .rules
            .check(now, hearing, |job| store.awaited(job));
        for (waiter, outcome) in settled {
            self.resolve(id, waiter, outcome);
        }
        self.tidy_waits(id);
    }

    /// Hands waiter `waiter`'s outcome to who hears it.
    pub(super) fn resolve(&mut self, id: GuardId, waiter: u32, outcome: WaitOutcome) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let Some(at) = guard.waits.pending.iter().position(|(w, _)| *w == waiter) else {
            return;
        };
        let (_, resolver) = guard.waits.pending.remove(at);
        self.resolve_with(id, resolver, outcome);
    }

    pub(super) fn resolve_with(&mut self, id: GuardId, resolver: Resolver, outcome: WaitOutcome) {
        match resolver {
            Resolver::Query(query) => self.query_waited(id, query, outcome),
            app => self.resolve_app(app, outcome),
        }
    }

    pub(super) fn resolve_app(&mut self, resolver: Resolver, outcome: WaitOutcome) {
        if let Resolver::App { promise, signal } = resolver {
            if let Some(signal) = signal {
                self.emit(Effect::Forget(signal));
            }
            self.emit(Effect::Settle {
                promise,
                value: Settled::Wait(outcome),
            });
        }
    }

    /// Writes the guard's entry when what it lists changed or its refresh is due, re-arms
    /// its timer for the first deadline, and lets `follow()` go when nothing waits.
    pub(super) fn tidy_waits(&mut self, id: GuardId) {
        self.keep_entry(id);
        let Some(guard) = self.guard(id) else {
            return;
        };
        let writable = !guard.entry_taken();
        let waits = &mut guard.waits;
        // The entry's refresh counts only while it can be written.
        let deadline = (!waits.rules.is_empty())
            .then(|| {
                let refresh = writable.then_some(waits.entry.state.refresh_at);
                match (waits.rules.next_deadline(), refresh) {
                    (Some(d), Some(r)) => Some(d.min(r)),
                    (d, r) => d.or(r),
                }
            })
            .flatten();
        let current = waits.timer.map(|(_, at)| at);
        if deadline != current {
            let old = waits.timer.take();
            if let Some((timer, _)) = old {
                self.clear_timer(timer);
            }
            if let Some(at) = deadline {
                let ms = at.saturating_sub(self.now()).min(86_400_000);
                let timer = self.set_timer(Wake::Waits(id), ms);
                if let Some(guard) = self.guard(id) {
                    guard.waits.timer = Some((timer, at));
                }
            }
        }
        let Some(guard) = self.guard(id) else {
            return;
        };
        if guard.waits.rules.is_empty() {
            if let Some(hold) = guard.waits.hold.take() {
                self.release_follow(id, hold);
            }
        }
    }

    /// The waiters' timer came: they are read again (settle_waits runs after every event).
    pub(super) fn waits_timer(&mut self, id: GuardId) {
        if let Some(guard) = self.guard(id) {
            guard.waits.timer = None;
        }
    }

    /// Holds `follow()` for the guard's waiters (once: the hold lasts while anything waits).
    pub(super) fn hold_follow_for_waits(&mut self, id: GuardId) {
        let held = self.guard(id).is_none_or(|g| g.waits.hold.is_some());
        if held {
            // Held already: the new waiter's job starts the cadence again.
            return self.run_follow(id, super::following::Start::Soon);
        }
        if let Some(hold) = self.hold_follow(id, None, true) {
            if let Some(guard) = self.guard(id) {
                guard.waits.hold = Some(hold);
            }
        }
    }

    /// The app's signal `signal` aborted: each waiter of guard `id` it aborts settles
    /// `aborted`, and cancels what nobody else awaits.
    pub(super) fn abort_waiters_of(&mut self, id: GuardId, signal: SignalId) {
        let waiters: Vec<u32> = self.guard(id).map_or_else(Vec::new, |g| {
            g.waits
                .pending
                .iter()
                .filter(|(_, r)| matches!(r, Resolver::App { signal: Some(s), .. } if *s == signal))
                .map(|(w, _)| *w)
                .collect()
        });
        for waiter in waiters {
            self.abort_waiter(id, waiter);
        }
    }

    /// Waiter `waiter` is aborted: it settles `aborted`, and each of its jobs that no other
    /// waiter of the browser awaits and no cancel in flight covers is cancelled, as `cancel()`
    /// would. The jobs it cancels.
    pub(super) fn abort_waiter(&mut self, id: GuardId, waiter: u32) -> Vec<String> {
        let Some(guard) = self.guard(id) else {
            return Vec::new();
        };
        let Some(jobs) = guard.waits.rules.remove(waiter) else {
            return Vec::new();
        };
        let at = guard.waits.pending.iter().position(|(w, _)| *w == waiter);
        let resolver = at.map(|at| guard.waits.pending.remove(at).1);
        self.tidy_waits(id);
        let cancelling = self.cancel_unawaited(id, jobs.clone(), &[]);
        if let Some(resolver) = resolver {
            self.resolve_with(
                id,
                resolver,
                WaitOutcome::aborted(&jobs, cancelling.clone()),
            );
        }
        cancelling
    }

    /// Drops waiter `waiter` (its query settles otherwise): nothing is cancelled for it.
    pub(super) fn drop_waiter(&mut self, id: GuardId, waiter: u32) {
        if let Some(guard) = self.guard(id) {
            guard.waits.rules.remove(waiter);
            guard.waits.pending.retain(|(w, _)| *w != waiter);
        }
        self.tidy_waits(id);
    }

    /// The guard's end (`free()`): every app's waiter settles `aborted`, nothing is cancelled
    /// (the guard that would send it is going), the timer goes and the wait entry is removed.
    pub(super) fn end_waits(&mut self, id: GuardId) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let waits = std::mem::take(&mut guard.waits);
        if let Some(token) = &waits.entry.token {
            guard.store.keep_waits(token, &[]);
        }
        if let Some((timer, _)) = waits.timer {
            self.clear_timer(timer);
        }
        if let Some(hold) = waits.hold {
            self.release_follow(id, hold);
        }
        for (_, resolver) in waits.pending {
            self.resolve_app(resolver, WaitOutcome::aborted(&[], Vec::new()));
        }
    }
}
