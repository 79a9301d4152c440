//! Who else awaits a job, and so what a stop or the page's end may cancel, decided for the
//! whole browser: every waiter of every guard of this page, and the jobs other tabs' waiters
//! await (their wait entries in storage, [`store::waits`](super::store)). A job some other
//! waiter awaits runs on for it. Pure: the machine gathers the guards and the entries
//! (`machine/unawaited`), and sends what these rules name.

use super::store::{Awaited, WAIT_REFRESH_MS};
use super::waiters::Waiters;

/// A guard's wait entry as it last wrote it ([`store::waits`](super::store)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryState {
    /// What it last listed.
    pub listed: Awaited,
    /// When it is written again while anything waits.
    pub refresh_at: u64,
    /// The page ended: the entry was removed, and is not written again.
    pub closed: bool,
}

impl EntryState {
    /// What to write now (`now_listed`: what the guard's waiters await and its queries have
    /// in flight), if the entry is due: it changed, or its refresh came while anything waits;
    /// never once the page ended.
    pub fn due(&mut self, now_listed: Awaited, now: u64) -> Option<Awaited> {
        let due =
            now_listed != self.listed || (!now_listed.jobs.is_empty() && now >= self.refresh_at);
        if !due || self.closed {
            return None;
        }
        self.listed.clone_from(&now_listed);
        self.refresh_at = now.saturating_add(WAIT_REFRESH_MS);
        Some(now_listed)
    }
}

/// One guard of the page, as the decision sees it.
#[derive(Clone, Copy)]
pub struct GuardWaits<'a> {
    pub waiters: &'a Waiters,
    /// Its waiters that are being stopped with the job's stop: they need nothing any more.
    pub except: &'a [u32],
    /// The jobs whose `cancel()` this guard has in flight: someone cancels them already.
    pub cancelling: &'a [String],
}

impl GuardWaits<'_> {
    fn cancelling(&self, job: &str) -> bool {
        self.cancelling.iter().any(|j| j == job)
    }
}

/// Whether `job` is left alone by a stop: someone still needs it (a waiter of the page's
/// `guards` that `needs` it, another tab, in `elsewhere`), or a guard has its cancel in
/// flight already. The one rule of who else awaits a job.
fn left_alone(
    job: &str,
    guards: &[GuardWaits],
    elsewhere: &[String],
    needs: impl Fn(&GuardWaits, &str) -> bool,
) -> bool {
    elsewhere.iter().any(|j| j == job) || guards.iter().any(|g| needs(g, job) || g.cancelling(job))
}

/// What a stop cancels (an abort, a logout, a late `202`, a query given up): of `jobs`, those
/// no waiter of the page's `guards` awaits (but the ones stopped with it), no other tab
/// awaits (`elsewhere`: what counts there is the caller's, by what the stop ends), and whose
/// cancel no guard has in flight.
pub fn unawaited(jobs: Vec<String>, guards: &[GuardWaits], elsewhere: &[String]) -> Vec<String> {
    jobs.into_iter()
        .filter(|job| {
            !left_alone(job, guards, elsewhere, |g, job| {
                g.waiters.awaits_except(job, g.except)
            })
        })
        .collect()
}

/// What the page's end cancels, as `(index of the guard that sends it, job)`, each job once:
/// every job that a waiter with `cancelOnClose` awaits, unless a waiter of the page without it
/// awaits it too, another tab awaits it (`elsewhere`), or a guard of the page has its cancel in
/// flight. It is sent by the first guard whose waiters would cancel it and that `may_cancel`
/// it (the session's ownership check).
pub fn at_page_end(
    guards: &[GuardWaits],
    elsewhere: &[String],
    mut may_cancel: impl FnMut(usize, &str) -> bool,
) -> Vec<(usize, String)> {
    let mut sent: Vec<(usize, String)> = Vec::new();
    for (at, guard) in guards.iter().enumerate() {
        for job in guard.waiters.jobs(true) {
            let decided = sent.iter().any(|(_, j)| *j == job);
            if decided
                || left_alone(&job, guards, elsewhere, |g, job| g.waiters.keeps(job))
                || !may_cancel(at, &job)
            {
                continue;
            }
            sent.push((at, job));
        }
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::quiet::Json;
    use crate::core::session::Session;
    use serde_json::json;

    fn waiters(list: &[(&[&str], bool)]) -> Waiters {
        let owner = Session::from_login(Json(&json!({"userId": 1}))).unwrap();
        let mut w = Waiters::default();
        for (jobs, on_close) in list {
            let jobs = jobs.iter().map(|j| j.to_string()).collect();
            w.add(jobs, 600_000, 0, *on_close, owner.clone());
        }
        w
    }

    fn view<'a>(waiters: &'a Waiters, cancelling: &'a [String]) -> GuardWaits<'a> {
        GuardWaits {
            waiters,
            except: &[],
            cancelling,
        }
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn jobs(list: &[&str]) -> Awaited {
        Awaited {
            jobs: strings(list),
            ..Awaited::default()
        }
    }

    #[test]
    fn an_entry_is_written_when_what_is_awaited_changes_or_its_refresh_comes() {
        let mut entry = EntryState::default();
        assert_eq!(entry.due(jobs(&["j1"]), 10), Some(jobs(&["j1"])));
        assert_eq!(entry.due(jobs(&["j1"]), 11), None);
        assert_eq!(
            entry.due(jobs(&["j1"]), 10 + WAIT_REFRESH_MS),
            Some(jobs(&["j1"]))
        );
        // A query's request in flight is listed too, and its end changes the entry.
        let mut with_stop = jobs(&["j1"]);
        with_stop
            .stops
            .push(("/api/v1/chart/data/stop".to_owned(), "sjg-1".to_owned()));
        assert_eq!(
            entry.due(with_stop.clone(), 12 + WAIT_REFRESH_MS),
            Some(with_stop)
        );
        assert_eq!(
            entry.due(jobs(&["j1"]), 13 + WAIT_REFRESH_MS),
            Some(jobs(&["j1"]))
        );
        assert_eq!(
            entry.due(Awaited::default(), 20 + WAIT_REFRESH_MS),
            Some(Awaited::default()),
            "removed"
        );
        assert_eq!(
            entry.due(Awaited::default(), 30 + 3 * WAIT_REFRESH_MS),
            None,
            "nothing to refresh"
        );
        entry.closed = true;
        assert_eq!(
            entry.due(jobs(&["j2"]), 40 + 3 * WAIT_REFRESH_MS),
            None,
            "the page ended"
        );
    }

    #[test]
    fn a_stop_leaves_what_another_waiter_or_tab_awaits_or_is_cancelling() {
        // Guard a's waiter 1 is the one being stopped; its waiter 2 still awaits j5.
        let a = waiters(&[(&["j1", "j5"], true), (&["j5"], true)]);
        let b = waiters(&[(&["j2"], false)]);
        let c = waiters(&[]);
        let in_flight = strings(&["j3"]);
        let own = [1];
        let guards = [
            GuardWaits {
                except: &own,
                ..view(&a, &[])
            },
            view(&b, &[]),
            view(&c, &in_flight),
        ];
        let cancelled = unawaited(
            strings(&["j1", "j2", "j3", "j4", "j5"]),
            &guards,
            &strings(&["j4"]),
        );
        assert_eq!(cancelled, ["j1"]);
    }

    #[test]
    fn the_pages_end_cancels_each_job_once_and_none_another_waiter_keeps() {
        let a = waiters(&[(&["j1", "j2", "j5"], true)]);
        let b = waiters(&[(&["j1", "j3"], true), (&["j2"], false)]);
        let c = waiters(&[(&["j4", "j6"], true)]);
        let in_flight = strings(&["j6"]);
        let guards = [view(&a, &[]), view(&b, &[]), view(&c, &in_flight)];
        let sent = at_page_end(&guards, &strings(&["j5"]), |_, _| true);
        assert_eq!(
            sent,
            [
                (0, "j1".to_owned()),
                (1, "j3".to_owned()),
                (2, "j4".to_owned())
            ],
            "j1 once; j2 kept by a cancelOnClose: false waiter; j5 awaited in another tab; \
             j6's cancel in flight"
        );
        // A guard that may not cancel a job (not its session's) leaves it to the next.
        let sent = at_page_end(&guards, &[], |at, job| !(at == 0 && job == "j1"));
        assert!(sent.contains(&(1, "j1".to_owned())));
    }
}
