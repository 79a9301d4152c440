//! `follow()`'s loop in the machine: who holds it ([`Holders`]: the app's `follow()` calls,
//! a provider's, the waiters'), one poller per browser and stream (a Web Lock where the
//! guard's storage is the origin's), and when the next poll goes ([`Cadence`]). It polls only
//! while the session has a record of the guard's contract that has not ended, waits for the
//! next login after a 401 or a 403, ends for good on a stream that is not there, and lets its
//! lock go while the page is in the back/forward cache. One poll's answer is
//! [`polls`](super::polls)'.

use super::super::follow::{Cadence, EventId, FollowOptions, Holders, TaskCursor};
use super::super::response::Contract;
use super::io::{Effect, GuardId, LockId, ReqId, TimerId};
use super::requests::Wake;
use super::{Machine, Platform};

/// Where the loop is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Loop {
    /// Not running: nobody holds it, or it was let go (the back/forward cache, the page's
    /// end, a stream that is not there).
    #[default]
    Off,
    /// Waiting for the browser's poller lock.
    Locking(LockId),
    /// Nothing to follow: the next change wakes it.
    Idle,
    /// Waiting until the next poll.
    Waiting(TimerId),
    /// A poll (or a task read back after it) is out.
    Polling(ReqId),
}

/// A guard's `follow()`.
#[derive(Debug, Default)]
pub(super) struct Follow {
    pub(super) holders: Holders,
    pub(super) state: Loop,
    /// The lock held while it runs, if one was asked for.
    lock: Option<LockId>,
    /// The cadence, and the options it was made from.
    cadence: Option<(FollowOptions, Cadence)>,
    /// The async_event stream's cursor (Superset's `last_async_event_id` where storage is the
    /// origin's), the task stream's.
    pub(super) event: Option<EventId>,
    pub(super) task: Option<TaskCursor>,
    /// When the last poll went out, and until when a failure's backoff holds.
    last_poll: Option<u64>,
    backoff_until: Option<u64>,
    /// The round in progress.
    pub(super) round: Option<super::polls::Round>,
    /// Its first poll waits one interval (it started for a job just accepted).
    soon: bool,
}

/// How the loop is asked to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// A holder came (the app's `follow()`): poll at once.
    Now,
    /// A waiter came, for a job just accepted: poll one interval on.
    Soon,
    /// Something new to follow.
    Woken,
}

impl Follow {
    /// The cadence of the holders' options now (made anew when they changed).
    pub(super) fn cadence(&mut self) -> &mut Cadence {
        let options = self.holders.options();
        let fresh = !self.cadence.as_ref().is_some_and(|(o, _)| *o == options);
        if fresh {
            self.cadence = Some((options, Cadence::new(options)));
        }
        let (_, cadence) = self
            .cadence
            .get_or_insert_with(|| (options, Cadence::new(options)));
        cadence
    }
}

impl<P: Platform> Machine<P> {
    /// `follow(options)`: a holder of guard `id`'s loop (started if it is not running); its
    /// id, for [`Machine::unfollow`].
    pub fn follow(&mut self, id: GuardId, options: Option<FollowOptions>) -> Option<u32> {
        let held = self.hold_follow(id, options, false);
        self.settle_waits();
        held
    }

    /// Lets holder `holder` go (a second call is harmless); the loop stops when nobody holds
    /// it.
    pub fn unfollow(&mut self, id: GuardId, holder: u32) {
        self.release_follow(id, holder);
        self.settle_waits();
    }

    /// A holder of guard `id`'s loop; `soon`: it holds it for a job just accepted, whose first
    /// poll waits one interval (a job is not done as it is accepted: Superset's own frontend
    /// waits its polling delay first), else the loop polls at once (it may catch up on what
    /// ran before).
    pub(super) fn hold_follow(
        &mut self,
        id: GuardId,
        options: Option<FollowOptions>,
        soon: bool,
    ) -> Option<u32> {
        let guard = self.live(id)?;
        let holder = guard.follow.holders.hold(options);
        self.run_follow(id, if soon { Start::Soon } else { Start::Now });
        Some(holder)
    }

    pub(super) fn release_follow(&mut self, id: GuardId, holder: u32) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let follow = &mut guard.follow;
        if follow.holders.release(holder) && follow.holders.is_empty() {
            self.pause_follow(id);
        }
    }

    /// Lets every holder of guard `id` go (its `free()`).
    pub(super) fn release_all_follow(&mut self, id: GuardId) {
        if let Some(guard) = self.guard(id) {
            guard.follow.holders = Default::default();
        }
        self.pause_follow(id);
    }

    /// Stops the loop: its poll ends, its timer goes, its lock is let go. Whoever holds it
    /// still holds it: [`Machine::kick_follow`] runs it again.
    pub(super) fn pause_follow(&mut self, id: GuardId) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let state = std::mem::take(&mut guard.follow.state);
        let lock = guard.follow.lock.take();
        match state {
            Loop::Polling(req) => self.end(req, false),
            Loop::Waiting(timer) => self.clear_timer(timer),
            Loop::Locking(_) | Loop::Idle | Loop::Off => {}
        }
        if let Some(lock) = lock {
            self.emit(Effect::Unlock(lock));
        }
    }

    /// Something new to follow (a record written by any tab, a login, a change heard from
    /// another tab): the loop starts if it is not running, and one that idled (nothing ran)
    /// polls one interval on, never into a failure's backoff. While anything runs the
    /// cadence stands, as Superset's own frontend's does: a new job waits for the next poll.
    pub(super) fn kick_follow(&mut self, id: GuardId) {
        self.run_follow(id, Start::Woken);
    }

    /// Starts the loop if anybody holds it and it is not running, as `start` says.
    pub(super) fn run_follow(&mut self, id: GuardId, start: Start) {
        let now = self.now();
        let Some(guard) = self.guard(id) else {
            return;
        };
        let shared = guard.shared();
        let may = guard.may_follow();
        let name = lock_name(&guard.options.namespace, guard.options.contract);
        let follow = &mut guard.follow;
        if follow.holders.is_empty() || !may {
            return;
        }
        match follow.state.clone() {
            Loop::Off => {
                follow.soon = start != Start::Now;
                if !shared {
                    return self.lead(id);
                }
                let lock = LockId(self.id());
                if let Some(guard) = self.guard(id) {
                    guard.follow.state = Loop::Locking(lock);
                    guard.follow.lock = Some(lock);
                }
                self.emit(Effect::Lock { lock, name });
            }
            // A new waiter, or something new once nothing ran: the cadence starts again (no
            // sooner than an interval after the last poll; a backoff stands).
            Loop::Idle | Loop::Waiting(_)
                if start == Start::Soon
                    || (start == Start::Woken && follow.state == Loop::Idle) =>
            {
                let (last, until) = (follow.last_poll, follow.backoff_until);
                let interval = follow.holders.options().interval_ms;
                let failing = follow.cadence().failing();
                let wait = follow.cadence().woken(now, last, until);
                // Something new just began: not before one interval (a backoff stands).
                let wait = if failing { wait } else { wait.max(interval) };
                self.wait_for_poll(id, wait);
            }
            Loop::Idle | Loop::Waiting(_) | Loop::Locking(_) | Loop::Polling(_) => {}
        }
    }

    /// The loop leads (its lock held, or none needed): it polls at once, or one interval on.
    fn lead(&mut self, id: GuardId) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        if std::mem::take(&mut guard.follow.soon) {
            guard.follow.state = Loop::Idle;
            let interval = guard.follow.holders.options().interval_ms;
            self.wait_for_poll(id, interval);
        } else {
            self.poll_now(id);
        }
    }

    /// The lock `lock` is held: the loop leads, if it still waits for it.
    pub(super) fn locked(&mut self, lock: LockId) {
        let id = self
            .guards
            .iter()
            .find(|g| g.follow.state == Loop::Locking(lock))
            .map(|g| g.id);
        match id {
            Some(id) => self.lead(id),
            // Let go meanwhile: the executor lets the lock go again.
            None => self.emit(Effect::Unlock(lock)),
        }
    }

    /// Waits `ms` for the next poll (at once for 0).
    fn wait_for_poll(&mut self, id: GuardId, ms: u64) {
        if let Some(Loop::Waiting(timer)) = self.guard(id).map(|g| g.follow.state.clone()) {
            self.clear_timer(timer);
        }
        if ms == 0 {
            return self.poll_now(id);
        }
        let timer = self.set_timer(Wake::Follow(id), ms);
        if let Some(guard) = self.guard(id) {
            guard.follow.state = Loop::Waiting(timer);
        }
    }

    pub(super) fn follow_timer(&mut self, id: GuardId) {
        if let Some(guard) = self.guard(id) {
            if matches!(guard.follow.state, Loop::Waiting(_)) {
                guard.follow.state = Loop::Idle;
                self.poll_now(id);
            }
        }
    }

    /// A round is over: wait `ms` (after an answer; `failed`: a failure's backoff), or for a
    /// change (`None`).
    pub(super) fn next_round(
        &mut self,
        id: GuardId,
        wait: Option<u64>,
        started: u64,
        failed: bool,
    ) {
        let now = self.now();
        let Some(guard) = self.guard(id) else {
            return;
        };
        guard.follow.state = Loop::Idle;
        if let Some(ms) = wait {
            guard.follow.last_poll = Some(started);
            guard.follow.backoff_until = failed.then(|| now.saturating_add(ms));
            self.wait_for_poll(id, ms);
        }
    }

    /// The session ended: a poll out is ended (nothing it answers is this session's), and the
    /// loop waits for the next change (a login).
    pub(super) fn end_poll(&mut self, id: GuardId) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        if let Loop::Polling(req) = guard.follow.state {
            guard.follow.state = Loop::Idle;
            guard.follow.round = None;
            self.end(req, false);
        }
    }

    /// The stream is not there: the loop ends for good (its lock goes, so each tab finds it
    /// out and settles its own waits).
    pub(super) fn end_follow(&mut self, id: GuardId) {
        if let Some(guard) = self.guard(id) {
            guard.stream_absent = true;
        }
        self.pause_follow(id);
    }
}

/// The browser's poller lock of a namespace's stream: one per stream, so a guard of the other
/// contract polls its own.
fn lock_name(namespace: &str, contract: Contract) -> String {
    let contract = match contract {
        Contract::AsyncEvent => "async_event",
        Contract::Task => "task",
    };
    ["superset-job-guard:", namespace, ":follow:", contract].concat()
}
