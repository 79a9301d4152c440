//! A property test of waits over a browser of several tabs, each a machine
//! ([`superset_job_guard::core::machine`]) with several guards, all over one storage (the
//! origin's localStorage) and one clock, driven as the browser drives its executors: every
//! effect done (requests answered by a stand-in of Superset's task framework, timers fired as
//! time passes, Web Locks granted one tab at a time, messages and `storage` events carried to
//! the other tabs). Random interleavings of waits, aborts, the app's `follow()` starts and
//! stops, tasks ending on the server, 401s, logins, logouts, page ends, crashes, expiries and
//! records removed by page code.
//!
//! Two promises are checked after every step:
//! - no wait stays pending while it cannot hear its job end, nor after its job ended: its
//!   session is there and the same, no 401 stands, its record is there, and its job has not
//!   ended on the server (a poller of the browser would have brought the news, within the
//!   longest poll interval);
//! - no job another waiter awaits is cancelled: when a cancel leaves a tab, no pending wait of
//!   an open tab awaits its job but the one being aborted (or the tab being closed), a wait
//!   that lets its job run on at the page's end (`cancelOnClose: false`) keeps it, and no job
//!   is cancelled while a cancel of it is in flight.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{json, Value};

use superset_job_guard::core::clock::Clock;
use superset_job_guard::core::doubles::{ManualClock, SequenceRandom, SharedMemory};
use superset_job_guard::core::machine::{
    Answer, Body, Effect, Event, GuardId, LockId, Machine, Method, Platform, PromiseId, ReqId,
    Request, SignalId, StorageEvent, TimerId,
};
use superset_job_guard::core::model::TaskStatus;
use superset_job_guard::core::options::GuardOptions;
use superset_job_guard::core::quiet::Json;
use superset_job_guard::core::session::Session;
use superset_job_guard::core::store::JobStore;
use superset_job_guard::core::wait_input::{read_input, WaitSettings};

struct Native;

impl Platform for Native {
    type Storage = SharedMemory;
    type Clock = ManualClock;
    type Random = SequenceRandom;
}

const TABS: usize = 3;
const GUARDS: usize = 2;
const TASKS: [&str; 3] = [
    "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01",
    "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c02",
    "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c03",
];
const T0: u64 = 1_700_000_000_000;
/// Longer than the longest poll interval (30 s): a poller has brought any news by then.
const HEARD_WITHIN_MS: u64 = 31_000;

fn session(user: u8) -> Session {
    Session::from_login(Json(&json!({ "userId": user }))).unwrap()
}

/// One wait of the app's.
#[derive(Clone, Debug)]
struct Wait {
    promise: PromiseId,
    signal: SignalId,
    guard: usize,
    job: String,
    keeps: bool,
    owner: Session,
}

/// One tab: its machine, its guards and what its executor holds.
struct Tab {
    open: bool,
    m: Machine<Native>,
    guards: Vec<GuardId>,
    /// Requests sent and not ended, and the bodies asked for.
    requests: Vec<Request>,
    reads: Vec<ReqId>,
    timers: Vec<(TimerId, u64)>,
    settled: Vec<PromiseId>,
    waits: Vec<Wait>,
    follows: Vec<(usize, u32)>,
    next: u32,
}

struct Browser {
    storage: SharedMemory,
    clock: ManualClock,
    tabs: Vec<Tab>,
    /// The server's tasks.
    server: HashMap<String, TaskStatus>,
    /// The server answers 401 to every request until the next login.
    unauthorized: bool,
    /// Web Locks: each name's holder and those in line, as (tab, lock).
    locks: Vec<(String, Vec<(usize, LockId)>)>,
    /// The cancels sent and not answered yet, by tab.
    cancelling: Vec<(usize, String)>,
    /// What the step under way may cancel: the wait being aborted, the tab being closed.
    excused: Excused,
    /// Tabs opened so far: each draws its own page token.
    born: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Excused {
    Nothing,
    Wait(usize, PromiseId),
    Tab(usize),
}

impl Browser {
    fn new() -> Self {
        let mut b = Browser {
            storage: SharedMemory::default(),
            clock: ManualClock::at(T0),
            tabs: Vec::new(),
            server: HashMap::new(),
            unauthorized: false,
            locks: Vec::new(),
            cancelling: Vec::new(),
            excused: Excused::Nothing,
            born: 0,
        };
        for _ in 0..TABS {
            let tab = b.new_tab();
            b.tabs.push(tab);
        }
        b
    }

    fn new_tab(&mut self) -> Tab {
        self.born += 1;
        let random = SequenceRandom::new(vec![1.0 / (self.born as f64 + 1.0), 0.5]);
        let mut m = Machine::new(self.clock.clone(), random);
        let options = GuardOptions::read(Json(&json!({ "contract": "task" }))).unwrap();
        let guards = (0..GUARDS)
            .map(|_| {
                let store = JobStore::new(self.storage.clone(), self.clock.clone(), &options);
                m.add_guard(options.clone(), store, 0)
            })
            .collect();
        Tab {
            open: true,
            m,
            guards,
            requests: Vec::new(),
            reads: Vec::new(),
            timers: Vec::new(),
            settled: Vec::new(),
            waits: Vec::new(),
            follows: Vec::new(),
            next: 0,
        }
    }

    /// Runs `f` on tab `t`'s machine and does what it asks; the storage changes it made reach
    /// the other open tabs as their `storage` events.
    fn act<T>(
        &mut self,
        t: usize,
        f: impl FnOnce(&mut Machine<Native>, &[GuardId]) -> T,
    ) -> Result<T, TestCaseError> {
        let guards = self.tabs[t].guards.clone();
        let value = f(&mut self.tabs[t].m, &guards);
        self.pump(t)?;
        Ok(value)
    }

    fn pump(&mut self, t: usize) -> Result<(), TestCaseError> {
        let now = self.clock.now_ms();
        let effects = self.tabs[t].m.effects();
        let changes = self.storage.take_changes();
        let mut events: Vec<(usize, Event)> = Vec::new();
        for effect in effects {
            match effect {
                Effect::Send(request) => {
                    if let Some(job) = cancelled_job(&request) {
                        self.check_cancel(t, &job)?;
                        self.cancelling.push((t, job));
                    }
                    self.tabs[t].requests.push(request);
                }
                Effect::Read { req, .. } => self.tabs[t].reads.push(req),
                Effect::End { req, .. } => self.tabs[t].requests.retain(|r| r.req != req),
                Effect::SetTimer { timer, ms } => self.tabs[t].timers.push((timer, now + ms)),
                Effect::ClearTimer(timer) => self.tabs[t].timers.retain(|(x, _)| *x != timer),
                Effect::Settle { promise, .. } => self.tabs[t].settled.push(promise),
                Effect::Post {
                    namespace, message, ..
                } => {
                    for other in (0..TABS).filter(|o| *o != t) {
                        events.push((
                            other,
                            Event::Message {
                                namespace: namespace.clone(),
                                message: message.clone(),
                            },
                        ));
                    }
                }
                Effect::Lock { lock, name } => {
                    if let Some(granted) = self.ask_lock(t, lock, name) {
                        events.push(granted);
                    }
                }
                Effect::Unlock(lock) => events.extend(self.release_lock(t, Some(lock))),
                Effect::Forget(_) | Effect::Notify { .. } | Effect::Gone(_) => {}
            }
        }
        for (key, old, new) in changes {
            for other in (0..TABS).filter(|o| *o != t) {
                let event = StorageEvent {
                    key: Some(key.clone()),
                    old: old.clone(),
                    new: new.clone(),
                };
                events.push((other, Event::Storage(event)));
            }
        }
        for (other, event) in events {
            self.deliver(other, event)?;
        }
        Ok(())
    }

    fn deliver(&mut self, t: usize, event: Event) -> Result<(), TestCaseError> {
        if !self.tabs[t].open {
            return Ok(());
        }
        self.act(t, |m, _| m.handle(event))
    }

    /// A lock asked for: held at once if nobody holds its name.
    fn ask_lock(&mut self, t: usize, lock: LockId, name: String) -> Option<(usize, Event)> {
        match self.locks.iter_mut().find(|(n, _)| *n == name) {
            Some((_, line)) => {
                line.push((t, lock));
                (line.len() == 1).then_some((t, Event::Locked(lock)))
            }
            None => {
                self.locks.push((name, vec![(t, lock)]));
                Some((t, Event::Locked(lock)))
            }
        }
    }

    /// Lets `lock` of tab `t` go (every lock of the tab, for `None`: it closed); the next in
    /// line holds it.
    fn release_lock(&mut self, t: usize, lock: Option<LockId>) -> Vec<(usize, Event)> {
        let mut granted = Vec::new();
        for (_, line) in &mut self.locks {
            let held = line.first().copied();
            line.retain(|(tab, l)| !(*tab == t && lock.is_none_or(|x| x == *l)));
            if line.first().copied() != held {
                if let Some((tab, l)) = line.first() {
                    granted.push((*tab, Event::Locked(*l)));
                }
            }
        }
        granted
    }

    /// A cancel of `job` leaves tab `t`: nobody else awaits it, and none of it is in flight.
    fn check_cancel(&self, t: usize, job: &str) -> Result<(), TestCaseError> {
        prop_assert!(
            !self.cancelling.iter().any(|(_, j)| j == job),
            "{job} cancelled while a cancel of it is in flight"
        );
        for (o, tab) in self.tabs.iter().enumerate().filter(|(_, tab)| tab.open) {
            for w in tab
                .waits
                .iter()
                .filter(|w| w.job == job && !tab.settled.contains(&w.promise))
            {
                let excused = match self.excused {
                    Excused::Wait(at, promise) => at == o && promise == w.promise,
                    Excused::Tab(at) => at == o && !w.keeps,
                    Excused::Nothing => false,
                };
                prop_assert!(
                    excused,
                    "{job} cancelled from tab {t} while tab {o} awaits it ({w:?})"
                );
            }
        }
        Ok(())
    }

    /// The server answers every request out, and each body asked for; again until nothing
    /// new leaves.
    fn serve(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..20 {
            let mut any = false;
            for t in 0..TABS {
                if !self.tabs[t].open {
                    continue;
                }
                let requests = std::mem::take(&mut self.tabs[t].requests);
                for request in requests {
                    any = true;
                    let (status, body) = self.answer(t, &request);
                    let answer = Answer {
                        status,
                        content_type: Some("application/json".to_owned()),
                        ..Answer::default()
                    };
                    self.deliver(t, Event::Answered(request.req, answer))?;
                    if self.tabs[t].reads.contains(&request.req) {
                        self.tabs[t].reads.retain(|r| *r != request.req);
                        self.deliver(t, Event::Body(request.req, Body::Text(body.to_string())))?;
                    }
                }
            }
            if !any {
                break;
            }
        }
        Ok(())
    }

    fn answer(&mut self, t: usize, request: &Request) -> (u16, Value) {
        let path = request.url.split('?').next().unwrap_or_default().to_owned();
        if let Some(job) = cancelled_job(request) {
            self.cancelling.retain(|(tab, j)| !(*tab == t && *j == job));
        }
        if self.unauthorized {
            return (401, json!({ "msg": "Token has expired" }));
        }
        if path == "/api/v1/task/status_changes" {
            let statuses: serde_json::Map<String, Value> = self
                .server
                .iter()
                .map(|(id, s)| (id.clone(), json!({ "status": s.as_str() })))
                .collect();
            return (
                200,
                json!({ "statuses": statuses, "cursor": "2026-12-07T10:00:00" }),
            );
        }
        let task = path.trim_start_matches("/api/v1/task/");
        if let Some(id) = task.strip_suffix("/status") {
            return match self.server.get(id) {
                Some(s) => (200, json!({ "status": s.as_str() })),
                None => (404, json!({ "message": "Not found" })),
            };
        }
        if let Some(id) = task.strip_suffix("/cancel") {
            if let Some(s) = self.server.get_mut(id) {
                if !s.is_terminal() {
                    *s = TaskStatus::Aborted;
                }
                return (
                    200,
                    json!({ "message": "Task cancelled", "action": "aborted" }),
                );
            }
        }
        (404, json!({ "message": "Not found" }))
    }

    /// Time passes, `ms` of it, the timers firing and the server answering as it goes.
    fn advance(&mut self, ms: u64) -> Result<(), TestCaseError> {
        let end = self.clock.now_ms() + ms;
        let start = self.clock.now_ms();
        let mut fired = 0u64;
        loop {
            self.serve()?;
            fired += 1;
            // No loop of timers: a tab's timers fire at most about once a second each.
            prop_assert!(
                fired <= 200 + (ms / 1_000) * 20,
                "{fired} timers in {} ms of {ms} ms",
                self.clock.now_ms() - start
            );
            let due = (0..TABS)
                .filter(|t| self.tabs[*t].open)
                .flat_map(|t| {
                    self.tabs[t]
                        .timers
                        .iter()
                        .map(move |(timer, at)| (t, *timer, *at))
                })
                .filter(|(_, _, at)| *at <= end)
                .min_by_key(|(_, _, at)| *at);
            let Some((t, timer, at)) = due else {
                break;
            };
            self.tabs[t].timers.retain(|(x, _)| *x != timer);
            self.clock.set(at.max(self.clock.now_ms()));
            self.deliver(t, Event::Timer(timer))?;
        }
        self.clock.set(end);
        self.serve()
    }

    /// Tab `t` goes: its keepalive requests still reach the server (nobody reads their
    /// answers), unless it crashed; the rest are dropped.
    fn close(&mut self, t: usize, crashed: bool) -> Result<(), TestCaseError> {
        self.tabs[t].open = false;
        let requests = std::mem::take(&mut self.tabs[t].requests);
        for request in requests.iter().filter(|r| r.keepalive && !crashed) {
            let _ = self.answer(t, request);
        }
        self.cancelling.retain(|(tab, _)| *tab != t);
        for (tab, event) in self.release_lock(t, None) {
            self.deliver(tab, event)?;
        }
        Ok(())
    }
}

/// The task a request cancels, if it is a cancel.
fn cancelled_job(request: &Request) -> Option<String> {
    (request.method == Method::Post)
        .then(|| {
            request
                .url
                .strip_prefix("/api/v1/task/")?
                .strip_suffix("/cancel")
        })
        .flatten()
        .map(str::to_owned)
}

#[derive(Clone, Debug)]
enum Op {
    Login {
        tab: usize,
        guard: usize,
        user: u8,
    },
    Logout {
        tab: usize,
        guard: usize,
    },
    Wait {
        tab: usize,
        guard: usize,
        job: usize,
        keeps: bool,
    },
    Abort {
        tab: usize,
        nth: usize,
    },
    Follow {
        tab: usize,
        guard: usize,
    },
    StopFollow {
        tab: usize,
        nth: usize,
    },
    Finish {
        job: usize,
        ok: bool,
    },
    Unauthorized,
    PageEnd {
        tab: usize,
    },
    Crash {
        tab: usize,
    },
    Reopen {
        tab: usize,
    },
    Advance {
        ms: u64,
    },
    Remove {
        job: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let at = (0..TABS, 0..GUARDS);
    prop_oneof![
        2 => (at.clone(), 1u8..3).prop_map(|((tab, guard), user)| Op::Login { tab, guard, user }),
        1 => at.clone().prop_map(|(tab, guard)| Op::Logout { tab, guard }),
        5 => (at.clone(), 0..TASKS.len(), any::<bool>())
            .prop_map(|((tab, guard), job, keeps)| Op::Wait { tab, guard, job, keeps }),
        3 => (0..TABS, 0usize..3).prop_map(|(tab, nth)| Op::Abort { tab, nth }),
        2 => at.prop_map(|(tab, guard)| Op::Follow { tab, guard }),
        2 => (0..TABS, 0usize..3).prop_map(|(tab, nth)| Op::StopFollow { tab, nth }),
        2 => (0..TASKS.len(), any::<bool>()).prop_map(|(job, ok)| Op::Finish { job, ok }),
        1 => Just(Op::Unauthorized),
        2 => (0..TABS).prop_map(|tab| Op::PageEnd { tab }),
        1 => (0..TABS).prop_map(|tab| Op::Crash { tab }),
        2 => (0..TABS).prop_map(|tab| Op::Reopen { tab }),
        2 => prop_oneof![Just(1_000u64), Just(40_000), Just(700_000), Just(4_000_000)]
            .prop_map(|ms| Op::Advance { ms }),
        1 => (0..TASKS.len()).prop_map(|job| Op::Remove { job }),
    ]
}

fn step(b: &mut Browser, op: &Op) -> Result<(), TestCaseError> {
    b.excused = Excused::Nothing;
    match *op {
        Op::Login { tab, guard, user } if b.tabs[tab].open => {
            b.unauthorized = false;
            b.act(tab, |m, g| {
                let _ = m.login(g[guard], session(user));
            })?;
        }
        Op::Logout { tab, guard } if b.tabs[tab].open => {
            b.tabs[tab].next += 1;
            let stopped = PromiseId(1_000_000 + b.tabs[tab].next);
            b.act(tab, |m, g| {
                let _ = m.logout(g[guard], stopped);
            })?;
        }
        Op::Wait {
            tab,
            guard,
            job,
            keeps,
        } if b.tabs[tab].open => {
            let id = TASKS[job].to_owned();
            let g = b.tabs[tab].guards[guard];
            let Some(owner) = b.tabs[tab].m.session(g).unwrap() else {
                return Ok(());
            };
            b.server.entry(id.clone()).or_insert(TaskStatus::Pending);
            let input = read_input(
                &json!({ "task_ids": [id], "cursor": "c", "tab_id": format!("tab-{tab}") }),
            )
            .unwrap();
            let settings = WaitSettings::read(Json(&json!({ "cancelOnClose": !keeps }))).unwrap();
            let t = &mut b.tabs[tab];
            t.next += 2;
            let (promise, signal) = (PromiseId(t.next), SignalId(t.next + 1));
            t.waits.push(Wait {
                promise,
                signal,
                guard,
                job: id,
                keeps,
                owner,
            });
            b.act(tab, |m, g| {
                m.wait_for(g[guard], input, settings, Some((signal, false)), promise)
            })?;
        }
        Op::Abort { tab, nth } if b.tabs[tab].open => {
            let pending: Vec<Wait> = {
                let t = &b.tabs[tab];
                t.waits
                    .iter()
                    .filter(|w| !t.settled.contains(&w.promise))
                    .cloned()
                    .collect()
            };
            if let Some(w) = pending.get(nth) {
                b.excused = Excused::Wait(tab, w.promise);
                let signal = w.signal;
                b.act(tab, |m, _| m.handle(Event::Aborted(signal)))?;
                prop_assert!(
                    b.tabs[tab].settled.contains(&w.promise),
                    "an abort settles at once"
                );
            }
        }
        Op::Follow { tab, guard } if b.tabs[tab].open => {
            if let Some(holder) = b.act(tab, |m, g| m.follow(g[guard], None))? {
                b.tabs[tab].follows.push((guard, holder));
            }
        }
        Op::StopFollow { tab, nth } if b.tabs[tab].open && nth < b.tabs[tab].follows.len() => {
            let (guard, holder) = b.tabs[tab].follows.remove(nth);
            b.act(tab, |m, g| m.unfollow(g[guard], holder))?;
        }
        Op::Finish { job, ok } => {
            if let Some(status) = b.server.get_mut(TASKS[job]) {
                if !status.is_terminal() {
                    *status = if ok {
                        TaskStatus::Success
                    } else {
                        TaskStatus::Failure
                    };
                }
            }
        }
        Op::Unauthorized => b.unauthorized = true,
        Op::PageEnd { tab } if b.tabs[tab].open => {
            b.excused = Excused::Tab(tab);
            b.act(tab, |m, _| m.handle(Event::PageHide { persisted: false }))?;
            b.close(tab, false)?;
        }
        Op::Crash { tab } if b.tabs[tab].open => b.close(tab, true)?,
        Op::Reopen { tab } if !b.tabs[tab].open => {
            let fresh = b.new_tab();
            b.tabs[tab] = fresh;
        }
        Op::Advance { ms } => b.advance(ms)?,
        Op::Remove { job } => {
            let key = format!("superset-job-guard:v1:job:{}", TASKS[job]);
            let _ = superset_job_guard::core::storage::KeyValue::remove(&mut b.storage, &key);
            let changes = b.storage.take_changes();
            for (key, old, new) in changes {
                for t in 0..TABS {
                    let event = StorageEvent {
                        key: Some(key.clone()),
                        old: old.clone(),
                        new: new.clone(),
                    };
                    b.deliver(t, Event::Storage(event))?;
                }
            }
        }
        _ => {}
    }
    b.excused = Excused::Nothing;
    // Every answer comes, and time enough passes for a poller to bring any news.
    b.advance(HEARD_WITHIN_MS)?;
    check_liveness(b)
}

/// No pending wait that cannot hear its job end, nor one whose job ended.
fn check_liveness(b: &mut Browser) -> Result<(), TestCaseError> {
    let unauthorized = b.unauthorized;
    for (t, tab) in b.tabs.iter_mut().enumerate().filter(|(_, t)| t.open) {
        let pending: Vec<Wait> = tab
            .waits
            .iter()
            .filter(|w| !tab.settled.contains(&w.promise))
            .cloned()
            .collect();
        for w in pending {
            let g = tab.guards[w.guard];
            let current = tab.m.session(g).unwrap();
            prop_assert!(
                current.as_ref().is_some_and(|s| s.same_identity(&w.owner)),
                "tab {t}: {w:?} waits without its session ({current:?})"
            );
            prop_assert!(!unauthorized, "tab {t}: {w:?} waits after a 401");
            prop_assert!(
                tab.m.job(g, &w.job).unwrap().is_some(),
                "tab {t}: {w:?} waits for a record that is not there"
            );
            let status = b.server.get(&w.job).copied();
            prop_assert!(
                !status.is_some_and(|s| s.is_terminal()),
                "tab {t}: {w:?} still waits {HEARD_WITHIN_MS} ms after its job ended ({status:?})"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn no_wait_hangs_and_no_awaited_job_is_cancelled(ops in prop::collection::vec(op(), 1..40)) {
        let mut browser = Browser::new();
        for op in &ops {
            step(&mut browser, op)?;
        }
    }
}

/// The interleavings the issue names, as fixed sequences (each also among the generated ones).
#[test]
fn the_issues_interleavings() {
    use Op::*;
    let run = |ops: &[Op]| {
        let mut browser = Browser::new();
        for op in ops {
            step(&mut browser, op).map_err(|e| format!("{op:?}: {e}"))?;
        }
        Ok::<_, String>(browser)
    };
    let login = |tab| Login {
        tab,
        guard: 0,
        user: 1,
    };
    let wait = |tab, job, keeps| Wait {
        tab,
        guard: 0,
        job,
        keeps,
    };
    // Two tabs await one job; the first tab's end leaves it to the second, whose end cancels.
    let mut b = run(&[
        login(0),
        wait(0, 0, false),
        wait(1, 0, false),
        PageEnd { tab: 0 },
    ])
    .unwrap();
    assert_eq!(
        b.server[TASKS[0]],
        TaskStatus::Pending,
        "tab 1 still awaits it"
    );
    step(&mut b, &PageEnd { tab: 1 }).unwrap();
    assert_eq!(
        b.server[TASKS[0]],
        TaskStatus::Aborted,
        "the last waiter's end cancels it"
    );
    // Two guards of one page: one lets the job run on, the other would cancel it.
    let b = run(&[
        login(0),
        Wait {
            tab: 0,
            guard: 1,
            job: 1,
            keeps: true,
        },
        wait(0, 1, false),
        PageEnd { tab: 0 },
    ])
    .unwrap();
    assert_eq!(
        b.server[TASKS[1]],
        TaskStatus::Pending,
        "kept by cancelOnClose: false"
    );
    // The app's follow() stopped while a wait runs: the wait still hears its job end.
    let b = run(&[
        Login {
            tab: 2,
            guard: 1,
            user: 2,
        },
        Follow { tab: 2, guard: 1 },
        Wait {
            tab: 2,
            guard: 1,
            job: 2,
            keeps: false,
        },
        StopFollow { tab: 2, nth: 0 },
        Finish { job: 2, ok: true },
    ])
    .unwrap();
    let tab = &b.tabs[2];
    assert!(
        tab.waits.iter().all(|w| tab.settled.contains(&w.promise)),
        "done"
    );
    // A tab opened after another tab's 401 waits: the poller that met the 401 let its lock
    // go, so the new tab polls, meets the 401 itself and its wait ends.
    run(&[
        login(0),
        wait(0, 0, false),
        Follow { tab: 2, guard: 0 },
        Unauthorized,
        Crash { tab: 1 },
        Reopen { tab: 1 },
        wait(1, 0, false),
    ])
    .unwrap();
    // Another tab signs a new user in while a wait runs: the new user's wait lists its entry
    // again (no timer loop over an entry that could not be written).
    run(&[
        login(0),
        Wait {
            tab: 2,
            guard: 1,
            job: 0,
            keeps: false,
        },
        Login {
            tab: 0,
            guard: 0,
            user: 2,
        },
        Wait {
            tab: 2,
            guard: 1,
            job: 1,
            keeps: false,
        },
    ])
    .unwrap();
    // A 401, a logout in another tab, a user switch, an expiry, a removal: each wait ends.
    for last in [
        Unauthorized,
        Logout { tab: 1, guard: 0 },
        Login {
            tab: 1,
            guard: 1,
            user: 2,
        },
        Advance { ms: 4_000_000 },
        Remove { job: 0 },
    ] {
        let b = run(&[login(0), wait(0, 0, false), last.clone()]).unwrap();
        let tab = &b.tabs[0];
        assert!(
            tab.waits.iter().all(|w| tab.settled.contains(&w.promise)),
            "{last:?}"
        );
    }
}
