//! What a stop or the page's end cancels, and how those cancels are sent. Who else awaits a job is
//! [`awaited`](super::super::awaited)'s one rule, over the page's guards and what the other
//! tabs' entries say; which of those entries count is the stop's [`Scope`]. A cancel goes
//! through `cancel()`'s path (its answers read) where the app stopped the job, or with
//! `keepalive` and its answer not read where the session or the page ends.

use super::super::awaited::{at_page_end, unawaited, GuardWaits};
use super::super::response::Contract;
use super::cancels::contract_of;
use super::guard::GuardState;
use super::io::GuardId;
use super::{Machine, Platform};

/// Which of the other tabs' waits still need a job, by what the stop ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    /// The app stopped it (a signal, a waiter's abort, a late `202`, a query given up): every
    /// other tab's waits.
    Abort,
    /// This tab's logout: the other tabs' plain waits (their queries are stopped with it).
    Logout,
    /// Another tab's logout, heard here: none (that tab decided for the other tabs).
    Heard,
}

impl<P: Platform> Machine<P> {
    /// Of `jobs` of guard `id`, those a stop cancels: that no waiter of the page awaits (but
    /// guard `id`'s waiters `except`, stopped with them), that no other tab's wait counted by
    /// `scope` awaits, and whose cancel no other guard has in flight.
    pub(super) fn unawaited(
        &mut self,
        id: GuardId,
        jobs: Vec<String>,
        except: &[u32],
        scope: Scope,
    ) -> Vec<String> {
        if jobs.is_empty() {
            return jobs;
        }
        let page = self.page_token();
        let elsewhere = match (scope, self.guard(id)) {
            (Scope::Heard, _) | (_, None) => Vec::new(),
            (Scope::Abort, Some(g)) => g.store.awaited_elsewhere(&page),
            (Scope::Logout, Some(g)) => g.store.elsewhere(&page).plain(),
        };
        // Its own cancel in flight is joined, not left alone.
        let cancelling = self.cancelling(Some(id));
        let views = views(&self.guards, &cancelling, Some((id, except)));
        unawaited(jobs, &views, &elsewhere)
    }

    /// The jobs each guard of the page has a `cancel()` in flight for (but guard `except`'s).
    fn cancelling(&self, except: Option<GuardId>) -> Vec<Vec<String>> {
        self.guards
            .iter()
            .map(|g| match Some(g.id) == except {
                true => Vec::new(),
                false => g.cancels.iter().map(|c| c.job.clone()).collect(),
            })
            .collect()
    }

    /// The page's end: what the page's waiters await and no other waiter of the browser does
    /// is cancelled with `keepalive` ([`at_page_end`]), each job once, by the first guard whose
    /// waiter would cancel it and whose session may; the other tabs' waits of every guard's
    /// namespace count, and every guard's cancels in flight. A freed guard awaits nothing.
    pub(super) fn cancel_at_page_end(&mut self) {
        let page = self.page_token();
        let mut elsewhere: Vec<String> = Vec::new();
        let mut allowed: Vec<Vec<String>> = Vec::new();
        for guard in &mut self.guards {
            if guard.freed {
                allowed.push(Vec::new());
                continue;
            }
            for job in guard.store.awaited_elsewhere(&page) {
                if !elsewhere.contains(&job) {
                    elsewhere.push(job);
                }
            }
            let jobs = guard.waits.rules.jobs(true);
            let store = &mut guard.store;
            allowed.push(
                jobs.into_iter()
                    .filter(|j| store.check_cancel(j).is_allowed())
                    .collect(),
            );
        }
        // And no cancel may be barred for it (a 401, an endpoint found absent): the next guard
        // whose waiter would cancel it sends it instead.
        let ids: Vec<GuardId> = self.guards.iter().map(|g| g.id).collect();
        for (at, id) in ids.into_iter().enumerate() {
            let jobs = allowed.get(at).cloned().unwrap_or_default();
            let open: Vec<String> = jobs
                .into_iter()
                .filter(|job| {
                    let contract = self
                        .guard(id)
                        .map(|g| contract_of(&g.store.check_cancel(job)));
                    contract.is_some_and(|c| self.cancel_barred(id, c).is_none())
                })
                .collect();
            if let Some(slot) = allowed.get_mut(at) {
                *slot = open;
            }
        }
        let cancelling = self.cancelling(None);
        let decided = {
            let views = views(&self.guards, &cancelling, None);
            at_page_end(&views, &elsewhere, |at, job| {
                allowed.get(at).is_some_and(|a| a.iter().any(|j| j == job))
            })
        };
        for (at, job) in decided {
            if let Some(id) = self.guards.get(at).map(|g| g.id) {
                // Its record allowed it above: sent as its record says.
                self.send_cancel_raw(id, &job, None, None, None);
            }
        }
    }

    /// Cancels, through `cancel()`'s path, each of `jobs` of guard `id` that the app's stop
    /// leaves to nobody else ([`Scope::Abort`], but its waiters `except`) and that the session
    /// may cancel: the ones it started.
    pub(super) fn cancel_unawaited(
        &mut self,
        id: GuardId,
        jobs: Vec<String>,
        except: &[u32],
    ) -> Vec<String> {
        self.unawaited(id, jobs, except, Scope::Abort)
            .into_iter()
            .filter(|job| self.start_cancel(id, job))
            .collect()
    }

    /// Sends the cancel of `job` as `cancel()` would send it from its record (its contract,
    /// the tab id it was recorded with), with `keepalive`, if the session may cancel it.
    pub(super) fn send_cancel_record(
        &mut self,
        id: GuardId,
        job: &str,
        group: Option<u32>,
    ) -> bool {
        let allowed = self
            .guard(id)
            .is_some_and(|g| g.store.check_cancel(job).is_allowed());
        allowed && self.send_cancel_raw(id, job, None, None, group)
    }

    /// Sends the cancel of `job` (under `contract`, else its record's; `tab_id`, else its
    /// record's) as `cancel()` sends it, with `keepalive`, its answer not read (in a logout's
    /// `group`, whose `stopped` waits for it), unless no cancel may go
    /// ([`cancel_barred`](Self::cancel_barred)). Whether it went.
    pub(super) fn send_cancel_raw(
        &mut self,
        id: GuardId,
        job: &str,
        contract: Option<Contract>,
        tab_id: Option<&str>,
        group: Option<u32>,
    ) -> bool {
        let Some((contract, url, body)) = self.cancel_request(id, job, contract, tab_id) else {
            return false;
        };
        if self.cancel_barred(id, contract).is_some() {
            return false;
        }
        let template = self
            .guard(id)
            .map(|g| g.options.cancel_template(contract).to_owned());
        let template = template.map(|t| self.server_key(id, &t));
        let cancel = template.map(|t| (t, contract));
        self.send_keepalive(id, url, body, group, cancel);
        true
    }

    /// Sends, with `keepalive`, the cancel of each job of query `qid` that nobody else awaits
    /// (by `scope`; its own waiter is stopped with it), from what the query kept of its `202`
    /// (its records may be gone); the jobs it sent for.
    pub(super) fn cancel_by_snapshot(
        &mut self,
        id: GuardId,
        qid: u32,
        scope: Scope,
        group: Option<u32>,
    ) -> Vec<String> {
        let Some(guard) = self.guard(id) else {
            return Vec::new();
        };
        let own: Vec<u32> = guard.waits.of_query(qid).into_iter().collect();
        let Some(q) = guard.queries.iter().find(|q| q.id == qid) else {
            return Vec::new();
        };
        let (contract, tab, jobs) = (q.contract, q.tab_id.clone(), q.jobs.clone());
        self.unawaited(id, jobs, &own, scope)
            .into_iter()
            .filter(|job| self.send_cancel_raw(id, job, Some(contract), tab.as_deref(), group))
            .collect()
    }
}

/// The page's guards as the rule sees them: their waiters (guard `except.0`'s but its waiters
/// `except.1`, stopped with the job) and the cancels each has in flight (`cancelling`).
fn views<'a, P: Platform>(
    guards: &'a [GuardState<P>],
    cancelling: &'a [Vec<String>],
    except: Option<(GuardId, &'a [u32])>,
) -> Vec<GuardWaits<'a>> {
    guards
        .iter()
        .zip(cancelling)
        .map(|(g, cancelling)| GuardWaits {
            waiters: &g.waits.rules,
            except: match except {
                Some((id, except)) if g.id == id => except,
                _ => &[],
            },
            cancelling,
        })
        .collect()
}
