//! A property test of the core's waits over a browser of several tabs, each with several
//! guards, all over one storage (the origin's localStorage) and one clock: random interleavings
//! of waits, aborts, the app's `follow()` starts and stops, server answers, 401s, logins,
//! logouts, page ends, crashes, expiries and records removed by page code. Each guard runs the
//! core's rules as the browser shell runs them (`src/web/waiting.rs`, `closing.rs`): admission
//! ([`can_hear`], [`admit`]), settling after every change ([`Waiters::check`]), the wait entry
//! ([`EntryState`], `keep_waits`), the hold on `follow()` ([`Holders`]), and what an abort or a
//! page's end cancels ([`after_abort`], [`at_page_end`]).
//!
//! Two promises are checked after every step:
//! - no wait stays pending while its jobs cannot progress: its session is there and the same,
//!   no 401 stands, each of its records is there, and its guard holds `follow()` (so the
//!   browser's poller brings its news);
//! - no job another waiter awaits is cancelled: an abort or a page's end never cancels a job
//!   that a pending waiter of another guard or another open tab awaits, nor one a waiter of the
//!   closing tab lets run on (`cancelOnClose: false`), nor one twice, nor one whose cancel is
//!   in flight.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::json;

use superset_job_guard::core::awaited::{after_abort, at_page_end, EntryState, GuardWaits};
use superset_job_guard::core::clock::Clock;
use superset_job_guard::core::doubles::{ManualClock, SharedMemory};
use superset_job_guard::core::follow::Holders;
use superset_job_guard::core::model::TaskStatus;
use superset_job_guard::core::options::GuardOptions;
use superset_job_guard::core::quiet::Json;
use superset_job_guard::core::session::Session;
use superset_job_guard::core::store::{Awaited, JobStore};
use superset_job_guard::core::task::{StatusChange, Submission};
use superset_job_guard::core::wait_input::admit;
use superset_job_guard::core::waiters::{can_hear, Hearing, Waiters, MISSING_GRACE_MS};

const TABS: usize = 3;
const GUARDS: usize = 2;
const TASKS: [&str; 3] = [
    "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01",
    "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c02",
    "0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c03",
];
const T0: u64 = 1_700_000_000_000;
const STALE_MS: u64 = 600_000;

type Store = JobStore<SharedMemory, ManualClock>;

/// A waiter as the test knows it: its id, jobs, owner and whether it lets its jobs run on.
#[derive(Clone, Debug)]
struct Pending {
    id: u32,
    jobs: Vec<String>,
    owner: Session,
    keeps: bool,
}

/// One guard, as the shell holds it.
struct Guard {
    store: Store,
    waiters: Waiters,
    holders: Holders,
    /// The app's own `follow()` holders.
    app: Vec<u32>,
    /// The waiters' hold.
    wait_hold: Option<u32>,
    /// A 401 was met (here or announced by another tab) and no login came since.
    signed_out: bool,
    /// The jobs whose `cancel()` is in flight.
    cancelling: Vec<String>,
    entry: EntryState,
    token: String,
    pending: Vec<Pending>,
}

struct Tab {
    open: bool,
    page: String,
    guards: Vec<Guard>,
}

struct Browser {
    storage: SharedMemory,
    clock: ManualClock,
    tabs: Vec<Tab>,
    /// The server's tasks.
    server: HashMap<String, TaskStatus>,
    pages: u32,
}

fn session(user: u8) -> Session {
    Session::from_login(Json(&json!({ "userId": user }))).unwrap()
}

impl Browser {
    fn new() -> Self {
        let mut b = Browser {
            storage: SharedMemory::default(),
            clock: ManualClock::at(T0),
            tabs: Vec::new(),
            server: HashMap::new(),
            pages: 0,
        };
        for _ in 0..TABS {
            let tab = b.new_tab();
            b.tabs.push(tab);
        }
        b
    }

    fn new_tab(&mut self) -> Tab {
        self.pages += 1;
        let page = format!("page{}", self.pages);
        let guards = (0..GUARDS)
            .map(|n| Guard {
                store: JobStore::new(
                    self.storage.clone(),
                    self.clock.clone(),
                    &GuardOptions::default(),
                ),
                waiters: Waiters::default(),
                holders: Holders::default(),
                app: Vec::new(),
                wait_hold: None,
                signed_out: false,
                cancelling: Vec::new(),
                entry: EntryState::default(),
                token: format!("{page}-{n}"),
                pending: Vec::new(),
            })
            .collect();
        Tab {
            open: true,
            page,
            guards,
        }
    }

    fn open_guards(&mut self) -> impl Iterator<Item = &mut Guard> {
        self.tabs
            .iter_mut()
            .filter(|t| t.open)
            .flat_map(|t| t.guards.iter_mut())
    }

    /// Every guard re-reads its waiters, as the shell does after every change it hears (and
    /// on its timer): settles what can, keeps its entry and its hold on `follow()`.
    fn settle_all(&mut self) {
        let now = self.clock.now_ms();
        for g in self.open_guards() {
            let current = g.store.session();
            let hearing = Hearing {
                session: current.as_ref(),
                unauthenticated: g.signed_out,
                ..Hearing::default()
            };
            let store = &mut g.store;
            let settled = g.waiters.check(now, hearing, |id| store.awaited(id));
            g.pending
                .retain(|p| !settled.iter().any(|(id, _)| *id == p.id));
            tidy(g, now);
        }
    }

    /// Whether a guard of an open tab polls: it holds `follow()` and no 401 stands there.
    fn poller(&mut self) -> Option<&mut Guard> {
        self.open_guards()
            .find(|g| !g.holders.is_empty() && !g.signed_out)
    }

    /// The poller brings the server's statuses to the session's records.
    fn poll(&mut self) {
        let changes: Vec<StatusChange> = self
            .server
            .iter()
            .map(|(id, status)| {
                StatusChange::read(Json(&json!({ "task_id": id, "status": status.as_str() })))
                    .unwrap()
            })
            .collect();
        if let Some(poller) = self.poller() {
            poller.store.apply_task_statuses(changes);
        }
    }

    /// Cancels in flight reach the server.
    fn cancels_land(&mut self) {
        let mut landed = Vec::new();
        for g in self.open_guards() {
            landed.append(&mut g.cancelling);
        }
        for job in landed {
            self.server.insert(job, TaskStatus::Aborted);
        }
    }

    /// What every pending waiter of the browser awaits, with where it waits.
    fn awaited(&self) -> Vec<(usize, usize, Pending)> {
        let mut all = Vec::new();
        for (t, tab) in self.tabs.iter().enumerate().filter(|(_, t)| t.open) {
            for (n, g) in tab.guards.iter().enumerate() {
                for p in &g.pending {
                    all.push((t, n, p.clone()));
                }
            }
        }
        all
    }
}

/// The shell's `tidy`: the entry written when due, the waiters' hold on `follow()` let go when
/// nothing waits.
fn tidy(g: &mut Guard, now: u64) {
    let listed = Awaited {
        jobs: g.waiters.jobs(false),
        ..Awaited::default()
    };
    if let Some(listed) = g.entry.due(listed, now) {
        g.store.keep_entry(&g.token, &listed);
    }
    if g.waiters.is_empty() {
        if let Some(hold) = g.wait_hold.take() {
            g.holders.release(hold);
        }
    }
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
        guard: usize,
        nth: usize,
    },
    Follow {
        tab: usize,
        guard: usize,
    },
    StopFollow {
        tab: usize,
        guard: usize,
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
        3 => (at.clone(), 0usize..3).prop_map(|((tab, guard), nth)| Op::Abort { tab, guard, nth }),
        2 => at.clone().prop_map(|(tab, guard)| Op::Follow { tab, guard }),
        2 => (at, 0usize..3).prop_map(|((tab, guard), nth)| Op::StopFollow { tab, guard, nth }),
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

/// Asserts that no job in `cancelled` is awaited by a pending waiter other than those of
/// `except` (the guard that aborted, or the tab that closed), nor twice in the list.
fn assert_no_other_waiter_awaits(
    awaited: &[(usize, usize, Pending)],
    cancelled: &[String],
    except: impl Fn(usize, usize) -> bool,
) -> Result<(), TestCaseError> {
    for (i, job) in cancelled.iter().enumerate() {
        prop_assert!(!cancelled[..i].contains(job), "{job} cancelled twice");
        for (t, n, p) in awaited {
            prop_assert!(
                except(*t, *n) || !p.jobs.contains(job),
                "{job} cancelled while tab {t} guard {n} awaits it"
            );
        }
    }
    Ok(())
}

fn step(b: &mut Browser, op: &Op) -> Result<(), TestCaseError> {
    let now = b.clock.now_ms();
    match *op {
        Op::Login { tab, guard, user } if b.tabs[tab].open => {
            let g = &mut b.tabs[tab].guards[guard];
            g.store.sign_in(session(user)).unwrap();
            // A login anywhere resumes a follow a 401 stopped (here, and by the channel).
            for g in b.open_guards() {
                g.signed_out = false;
            }
        }
        Op::Logout { tab, guard } if b.tabs[tab].open => {
            b.tabs[tab].guards[guard].store.sign_out();
            for g in b.open_guards() {
                g.signed_out = false;
            }
        }
        Op::Wait {
            tab,
            guard,
            job,
            keeps,
        } if b.tabs[tab].open => {
            let g = &mut b.tabs[tab].guards[guard];
            // As `admit_all` does: the session can hear, the 202 recorded, the job admitted.
            let current = g.store.session();
            let hearing = Hearing {
                session: current.as_ref(),
                unauthenticated: g.signed_out,
                ..Hearing::default()
            };
            let Ok(owner) = can_hear(hearing, None).cloned() else {
                return Ok(());
            };
            let body = json!({ "task_ids": [TASKS[job]], "cursor": "c", "tab_id": g.token });
            if g.store
                .record_tasks(Submission::read(Json(&body)).unwrap())
                .is_err()
            {
                return Ok(());
            }
            let id = TASKS[job].to_owned();
            if admit(&g.store.check_cancel(&id), &id).is_err() {
                return Ok(());
            }
            b.server.entry(id.clone()).or_insert(TaskStatus::Pending);
            let jobs = vec![id];
            let waiter = g
                .waiters
                .add(jobs.clone(), STALE_MS, now, !keeps, owner.clone());
            g.pending.push(Pending {
                id: waiter,
                jobs,
                owner,
                keeps,
            });
            if g.wait_hold.is_none() {
                g.wait_hold = Some(g.holders.hold(None));
            }
        }
        Op::Abort { tab, guard, nth } if b.tabs[tab].open => {
            let awaited = b.awaited();
            let page = b.tabs[tab].page.clone();
            let Some(pending) = b.tabs[tab].guards[guard].pending.get(nth).cloned() else {
                return Ok(());
            };
            let (alone, elsewhere) = {
                let g = &mut b.tabs[tab].guards[guard];
                g.pending.retain(|p| p.id != pending.id);
                let (_, alone) = g.waiters.remove(pending.id).unwrap();
                (alone, g.store.awaited_elsewhere(&page))
            };
            let (mine, others): (Vec<_>, Vec<_>) = b.tabs[tab]
                .guards
                .iter()
                .enumerate()
                .partition(|(n, _)| *n == guard);
            drop(mine);
            let views: Vec<GuardWaits> = others
                .iter()
                .map(|(_, g)| GuardWaits {
                    waiters: &g.waiters,
                    cancelling: &g.cancelling,
                })
                .collect();
            let chosen = after_abort(alone, &views, &elsewhere);
            let g = &mut b.tabs[tab].guards[guard];
            let cancelled: Vec<String> = chosen
                .into_iter()
                .filter(|job| g.store.check_cancel(job).is_allowed())
                .filter(|job| !g.cancelling.contains(job))
                .collect();
            // The aborted waiter itself is gone from `awaited`'s point of view.
            let awaited: Vec<_> = awaited
                .into_iter()
                .filter(|(t, n, p)| !(*t == tab && *n == guard && p.id == pending.id))
                .collect();
            assert_no_other_waiter_awaits(&awaited, &cancelled, |_, _| false)?;
            g.cancelling.extend(cancelled);
            tidy(g, now);
        }
        Op::Follow { tab, guard } if b.tabs[tab].open => {
            let g = &mut b.tabs[tab].guards[guard];
            let id = g.holders.hold(None);
            g.app.push(id);
        }
        Op::StopFollow { tab, guard, nth } if b.tabs[tab].open => {
            let g = &mut b.tabs[tab].guards[guard];
            if nth < g.app.len() {
                let id = g.app.remove(nth);
                prop_assert!(g.holders.release(id));
            }
        }
        Op::Finish { job, ok } => {
            let id = TASKS[job].to_owned();
            if let Some(status) = b.server.get_mut(&id) {
                if !status.is_terminal() {
                    *status = if ok {
                        TaskStatus::Success
                    } else {
                        TaskStatus::Failure
                    };
                }
            }
            b.cancels_land();
        }
        // The poller meets a 401; every tab of the session hears it.
        Op::Unauthorized if b.poller().is_some() => {
            for g in b.open_guards() {
                g.signed_out = true;
            }
        }
        Op::PageEnd { tab } if b.tabs[tab].open => {
            let awaited = b.awaited();
            let page = b.tabs[tab].page.clone();
            let closing = &mut b.tabs[tab];
            let elsewhere = closing.guards[0].store.awaited_elsewhere(&page);
            let views: Vec<(Waiters, Vec<String>)> = closing
                .guards
                .iter()
                .map(|g| (g.waiters.clone(), g.cancelling.clone()))
                .collect();
            let gw: Vec<GuardWaits> = views
                .iter()
                .map(|(waiters, cancelling)| GuardWaits {
                    waiters,
                    cancelling,
                })
                .collect();
            let decided = at_page_end(&gw, &elsewhere, |at, job| {
                closing.guards[at].store.check_cancel(job).is_allowed()
            });
            let cancelled: Vec<String> = decided.iter().map(|(_, j)| j.clone()).collect();
            assert_no_other_waiter_awaits(&awaited, &cancelled, |t, _| t == tab)?;
            for (_, _, p) in awaited.iter().filter(|(t, _, _)| *t == tab) {
                for job in &cancelled {
                    prop_assert!(!(p.keeps && p.jobs.contains(job)), "{job} is kept");
                }
            }
            for g in &closing.guards {
                for job in &cancelled {
                    prop_assert!(
                        !g.cancelling.contains(job),
                        "{job}: its cancel is in flight"
                    );
                }
            }
            for g in &mut closing.guards {
                g.store.keep_waits(&g.token, &[]);
            }
            closing.open = false;
            for job in cancelled {
                b.server.insert(job, TaskStatus::Aborted);
            }
        }
        Op::Crash { tab } => b.tabs[tab].open = false,
        Op::Reopen { tab } if !b.tabs[tab].open => {
            let fresh = b.new_tab();
            b.tabs[tab] = fresh;
        }
        Op::Advance { ms } => {
            // The guards' timers run as time passes (at most every 10 s here, within the
            // entries' refresh).
            let end = now + ms;
            while b.clock.now_ms() < end {
                let next = (b.clock.now_ms() + 10_000).min(end);
                b.clock.set(next);
                b.poll();
                b.settle_all();
            }
        }
        Op::Remove { job } => {
            let key = format!("superset-job-guard:v1:job:{}", TASKS[job]);
            let _ = superset_job_guard::core::storage::KeyValue::remove(&mut b.storage, &key);
        }
        _ => {}
    }
    // Every change is heard, a poll brings the server's news, and a missing record's grace
    // runs out.
    b.settle_all();
    b.poll();
    b.settle_all();
    b.clock.advance(MISSING_GRACE_MS);
    b.settle_all();
    check_liveness(b)
}

/// No pending wait whose jobs cannot progress.
fn check_liveness(b: &mut Browser) -> Result<(), TestCaseError> {
    for (t, tab) in b.tabs.iter_mut().enumerate().filter(|(_, t)| t.open) {
        for (n, g) in tab.guards.iter_mut().enumerate() {
            let pending = g.pending.clone();
            for p in pending {
                let current = g.store.session();
                prop_assert!(
                    current.as_ref().is_some_and(|s| s.same_identity(&p.owner)),
                    "tab {t} guard {n}: {p:?} waits without its session ({current:?})"
                );
                prop_assert!(!g.signed_out, "tab {t} guard {n}: {p:?} waits after a 401");
                for job in &p.jobs {
                    prop_assert!(
                        g.store.awaited(job).is_ok(),
                        "tab {t} guard {n}: {p:?} waits for a record that is not there"
                    );
                }
                prop_assert!(
                    !g.holders.is_empty(),
                    "tab {t} guard {n}: {p:?} waits while nothing polls for it"
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn no_wait_hangs_and_no_awaited_job_is_cancelled(ops in prop::collection::vec(op(), 1..60)) {
        let mut browser = Browser::new();
        for op in &ops {
            step(&mut browser, op)?;
        }
    }
}

/// The interleavings the issue names, as fixed sequences (each also among the generated ones).
#[test]
fn the_issues_interleavings() {
    let run = |ops: &[Op]| {
        let mut browser = Browser::new();
        for op in ops {
            step(&mut browser, op).map_err(|e| format!("{op:?}: {e}"))?;
        }
        Ok::<_, String>(browser)
    };
    use Op::*;
    // Two tabs await one job; the first tab's end leaves it to the second, whose end cancels.
    let b = run(&[
        Login {
            tab: 0,
            guard: 0,
            user: 1,
        },
        Wait {
            tab: 0,
            guard: 0,
            job: 0,
            keeps: false,
        },
        Wait {
            tab: 1,
            guard: 0,
            job: 0,
            keeps: false,
        },
        PageEnd { tab: 0 },
    ])
    .unwrap();
    assert_eq!(
        b.server[TASKS[0]],
        TaskStatus::Pending,
        "tab 1 still awaits it"
    );
    let mut b = b;
    step(&mut b, &PageEnd { tab: 1 }).unwrap();
    assert_eq!(
        b.server[TASKS[0]],
        TaskStatus::Aborted,
        "the last waiter's end cancels it"
    );
    // Two guards of one page: one lets the job run on, the other would cancel it.
    let b = run(&[
        Login {
            tab: 0,
            guard: 0,
            user: 1,
        },
        Wait {
            tab: 0,
            guard: 1,
            job: 1,
            keeps: true,
        },
        Wait {
            tab: 0,
            guard: 0,
            job: 1,
            keeps: false,
        },
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
        StopFollow {
            tab: 2,
            guard: 1,
            nth: 0,
        },
        Finish { job: 2, ok: true },
        Advance { ms: 1_000 },
    ])
    .unwrap();
    assert!(b.tabs[2].guards[1].pending.is_empty(), "done");
    assert!(
        b.tabs[2].guards[1].holders.is_empty(),
        "and nothing polls any more"
    );
    // A 401, a logout in another tab, a user switch, an expiry: each wait ends at once.
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
        let b = run(&[
            Login {
                tab: 0,
                guard: 0,
                user: 1,
            },
            Wait {
                tab: 0,
                guard: 0,
                job: 0,
                keeps: false,
            },
            last.clone(),
        ])
        .unwrap();
        assert!(b.tabs[0].guards[0].pending.is_empty(), "{last:?}");
    }
}
