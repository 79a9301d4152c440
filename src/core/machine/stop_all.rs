//! Stopping every query of a guard at once, and who else awaits a job. A logout in this tab
//! stops them with `keepalive` before the session ends (the other tabs' queries too, from
//! their entries), a user switch sends nothing as the new user, another tab's logout stops
//! what that tab did not, and the page's end stops and cancels everything not yet stopped,
//! with `keepalive`, except what `cancelOnClose: false` keeps. A logout's `stopped` settles
//! when what it sent is answered ([`STOP_DELIVERY_MS`] at the latest), at once when nothing
//! was sent.

use super::super::awaited::{at_page_end, GuardWaits};
use super::super::chart::{is_client_id, is_same_origin_path, stop_body, StopResult};
use super::super::options::GuardOptions;
use super::super::query::{Phase, QueryReason, STOP_DELIVERY_MS};
use super::super::response::Contract;
use super::super::session::Session;
use super::super::tabs::Change;
use super::cancels::contract_of;
use super::io::{Effect, GuardId, Method, PromiseId, Settled, TimerId};
use super::queries::Stopped;
use super::requests::{Purpose, Wake};
use super::{Machine, Platform};

/// Requests sent with `keepalive` whose answers a logout's `stopped` waits for.
#[derive(Debug)]
pub(super) struct Group {
    id: u32,
    promise: PromiseId,
    /// How many are not answered yet.
    left: usize,
    /// Everything of the logout was sent: it settles when `left` is 0.
    closed: bool,
    timer: Option<TimerId>,
}

impl<P: Platform> Machine<P> {
    /// A new group, for a logout whose `stopped` is `promise`.
    pub(super) fn delivery_group(&mut self, promise: PromiseId) -> u32 {
        let id = self.id();
        self.groups.push(Group {
            id,
            promise,
            left: 0,
            closed: false,
            timer: None,
        });
        id
    }

    /// Everything of group `id` was sent: it settles when the answers are in, at once if
    /// there are none, [`STOP_DELIVERY_MS`] after at the latest.
    pub(super) fn close_group(&mut self, id: u32) {
        let Some(group) = self.groups.iter_mut().find(|g| g.id == id) else {
            return;
        };
        group.closed = true;
        if group.left == 0 {
            return self.settle_group(id);
        }
        let timer = self.set_timer(Wake::Delivered(id), u64::from(STOP_DELIVERY_MS));
        if let Some(group) = self.groups.iter_mut().find(|g| g.id == id) {
            group.timer = Some(timer);
        }
    }

    fn count_in(&mut self, group: Option<u32>) {
        if let Some(g) = group.and_then(|id| self.groups.iter_mut().find(|g| g.id == id)) {
            g.left += 1;
        }
    }

    /// One request of group `id` was answered (or failed).
    pub(super) fn delivered(&mut self, id: u32) {
        let Some(group) = self.groups.iter_mut().find(|g| g.id == id) else {
            return;
        };
        group.left = group.left.saturating_sub(1);
        if group.closed && group.left == 0 {
            self.settle_group(id);
        }
    }

    pub(super) fn delivery_timeout(&mut self, id: u32) {
        if let Some(group) = self.groups.iter_mut().find(|g| g.id == id) {
            group.timer = None;
        }
        self.settle_group(id);
    }

    fn settle_group(&mut self, id: u32) {
        let Some(at) = self.groups.iter().position(|g| g.id == id) else {
            return;
        };
        let group = self.groups.remove(at);
        if let Some(timer) = group.timer {
            self.clear_timer(timer);
        }
        self.emit(Effect::Settle {
            promise: group.promise,
            value: Settled::Nothing,
        });
    }

    /// Sends `url` (a stop, or a cancel without a record) with `keepalive`, its answer not
    /// read, counted in `group`.
    pub(super) fn send_delivery(
        &mut self,
        id: GuardId,
        url: String,
        body: Option<String>,
        group: Option<u32>,
    ) {
        let timeout = self.guard(id).map_or(0, |g| g.options.timeout_ms);
        let purpose = Purpose::Delivery {
            guard: id,
            group: group.unwrap_or(0),
        };
        self.send(purpose, Method::Post, url, body, true, timeout);
        self.count_in(group);
    }

    /// Sends the cancel of `job` as `cancel()` would send it from its record (its contract,
    /// the tab id it was recorded with), with `keepalive`, if the session may cancel it.
    fn send_cancel_record(&mut self, id: GuardId, job: &str, group: Option<u32>) -> bool {
        let Some(guard) = self.guard(id) else {
            return false;
        };
        let check = guard.store.check_cancel(job);
        if !check.is_allowed() {
            return false;
        }
        let contract = contract_of(&check);
        let tab = match contract {
            Contract::Task => guard.store.cancel_tab(job).map(|t| t.to_string()),
            Contract::AsyncEvent => None,
        };
        let url = guard.options.cancel_url_for(job, contract);
        let body = GuardOptions::cancel_body(contract, tab.as_deref());
        self.send_delivery(id, url, body, group);
        true
    }

    /// Whether someone other than the waiters `except` of guard `id` awaits `job`: a waiter of
    /// any guard of the page, or a cancel of another guard in flight. (Other tabs' entries are
    /// the caller's to read: what counts there depends on the decision.)
    fn others_await(&self, id: GuardId, job: &str, except: &[u32]) -> bool {
        self.guards.iter().any(|g| {
            if g.id == id {
                g.waits.rules.awaits_except(job, except)
            } else {
                g.waits.rules.awaits(job) || g.cancels.iter().any(|c| c.job == job)
            }
        })
    }

    /// Cancels, through `cancel()`'s path, each of `jobs` of guard `id` that no waiter of the
    /// page (but `except`) awaits, no other tab awaits, whose cancel no other guard has in
    /// flight, and that the session may cancel: the ones it started.
    pub(super) fn cancel_unawaited(
        &mut self,
        id: GuardId,
        jobs: Vec<String>,
        except: &[u32],
    ) -> Vec<String> {
        if jobs.is_empty() {
            return jobs;
        }
        let page = self.page_token();
        let elsewhere = self
            .guard(id)
            .map(|g| g.store.awaited_elsewhere(&page))
            .unwrap_or_default();
        let chosen: Vec<String> = jobs
            .into_iter()
            .filter(|job| !elsewhere.contains(job) && !self.others_await(id, job, except))
            .collect();
        chosen
            .into_iter()
            .filter(|job| self.start_cancel(id, job))
            .collect()
    }

    /// Stops every query of guard `id` for `reason` (a logout in this tab, before the session
    /// ends, in `group`; another user signing in; the page's end; the guard freed). The jobs a
    /// logout cancelled.
    pub(super) fn stop_all(
        &mut self,
        id: GuardId,
        reason: QueryReason,
        group: Option<u32>,
    ) -> Vec<String> {
        let queries: Vec<u32> = self
            .guard(id)
            .map_or_else(Vec::new, |g| g.queries.iter().map(|q| q.id).collect());
        let own = self
            .guard(id)
            .map_or_else(Vec::new, |g| g.waits.of_queries());
        let mut cancelled = Vec::new();
        for qid in queries {
            let live = self.query_mut(id, qid).is_some_and(|q| q.stopped.is_none());
            match (live, reason) {
                (true, QueryReason::Signal) => self.stop_query(id, qid, reason),
                (true, QueryReason::UserChanged) => self.drop_query(id, qid),
                (true, _) => cancelled.extend(self.stop_sending(id, qid, reason, group, &own)),
                (false, _) => self.stop_lingering(id, qid, reason, group),
            }
        }
        self.keep_entry(id);
        cancelled
    }

    /// Another identity signed in: query `qid` ends with nothing sent for it as them.
    fn drop_query(&mut self, id: GuardId, qid: u32) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        q.stopped = Some(Stopped::new(Some(QueryReason::UserChanged)));
        q.probing = false;
        if let Some(req) = q.req.take() {
            self.end(req, false);
        }
        if let Some(waiter) = self.guard(id).and_then(|g| g.waits.of_query(qid)) {
            self.drop_waiter(id, waiter);
        }
        self.settle_stopped(id, qid, Some(StopResult::NotSent));
    }

    /// Stops query `qid` with `keepalive` requests whose answers are not read: a logout (this
    /// tab's, in `group`; another tab's, from what the query knows), or the page's end. The
    /// jobs it cancelled.
    fn stop_sending(
        &mut self,
        id: GuardId,
        qid: u32,
        reason: QueryReason,
        group: Option<u32>,
        own: &[u32],
    ) -> Vec<String> {
        let elsewhere_logout = reason == QueryReason::Logout && group.is_none();
        let taken = elsewhere_logout && self.taken_by_logout(id, qid);
        let plan = self.plan_for(id, qid);
        let waiting = self.waiting_for_connection(id, qid);
        let Some(q) = self.query_mut(id, qid) else {
            return Vec::new();
        };
        let closing = reason == QueryReason::PageEnd;
        let sends = !closing || q.wait.cancel_on_close;
        q.stopped = Some(Stopped::new(Some(reason)));
        if std::mem::take(&mut q.probing) {
            self.settle_stopped(id, qid, Some(StopResult::NotSent));
            return Vec::new();
        }
        let mut cancelled = Vec::new();
        let stop = match q.life.phase() {
            Phase::Sending | Phase::Refetching if waiting => {
                // Still waiting for a connection: it never leaves.
                if let Some(req) = q.req.take() {
                    self.end(req, false);
                }
                StopResult::NotSent
            }
            Phase::Sending | Phase::Refetching => {
                let req = q.req.take();
                let (stop_url, client_id) = (q.stop_url.clone(), q.life.client_id.clone());
                let keep = plan.keep && !closing && !taken;
                match (req, keep) {
                    (Some(req), true) => {
                        if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
                            s.late = Some(req);
                            s.group = group;
                        }
                        self.count_in(group);
                        let timeout = self.guard(id).map_or(0, |g| g.options.timeout_ms);
                        self.set_deadline(req, timeout);
                    }
                    (Some(req), false) => self.end(req, false),
                    (None, _) => {}
                }
                match client_id {
                    _ if taken => StopResult::Sent,
                    Some(client_id) if plan.stop && sends => {
                        self.send_delivery(id, stop_url, Some(stop_body(&client_id)), group);
                        StopResult::Sent
                    }
                    _ if !sends => StopResult::NotSent,
                    _ => StopResult::Unsupported,
                }
            }
            Phase::Waiting if closing => {
                // The page's end decides over every waiter (its jobs included), before this.
                StopResult::Cancelling
            }
            Phase::Waiting => {
                let jobs = q.jobs.clone();
                let waiter = self.guard(id).and_then(|g| g.waits.of_query(qid));
                let sent = if elsewhere_logout {
                    if taken {
                        jobs
                    } else {
                        self.cancel_by_snapshot(id, qid, None)
                    }
                } else {
                    let page = self.page_token();
                    let listed = self
                        .guard(id)
                        .map(|g| g.store.elsewhere(&page))
                        .unwrap_or_default();
                    // Other tabs' plain waits' jobs run on; their queries are stopped here too.
                    let plain: Vec<&String> = listed
                        .jobs
                        .iter()
                        .filter(|j| !listed.queries.contains(j))
                        .collect();
                    let mut sent = Vec::new();
                    for job in jobs {
                        if plain.contains(&&job) || self.others_await(id, &job, own) {
                            continue;
                        }
                        if self.send_cancel_record(id, &job, group) {
                            sent.push(job);
                        }
                    }
                    sent
                };
                if let Some(waiter) = waiter {
                    self.drop_waiter(id, waiter);
                }
                cancelled.clone_from(&sent);
                let stop = if sent.is_empty() {
                    StopResult::NotSent
                } else if elsewhere_logout {
                    StopResult::Sent
                } else {
                    StopResult::Cancelling
                };
                if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) {
                    s.cancelling = sent;
                }
                stop
            }
            Phase::Fetching | Phase::Ended => {
                if let Some(req) = q.req.take() {
                    self.end(req, false);
                }
                StopResult::NotSent
            }
        };
        self.settle_stopped(id, qid, Some(stop));
        cancelled
    }

    /// What is left of a stopped query at a logout, a user switch or the page's end: a late
    /// answer a logout's `stopped` waits for; a stop waiting to be sent again, sent now at the
    /// page's end; nothing more for another user.
    fn stop_lingering(&mut self, id: GuardId, qid: u32, reason: QueryReason, group: Option<u32>) {
        let pending = self.confirm_pending(id, qid);
        let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_mut()) else {
            return;
        };
        match reason {
            QueryReason::Logout if s.late.is_some() && s.group.is_none() && group.is_some() => {
                s.group = group;
                self.count_in(group);
            }
            QueryReason::UserChanged => {
                if let Some(late) = s.late.take() {
                    self.end(late, false);
                }
                if let Some(timer) = pending {
                    self.clear_timer(timer);
                }
                self.settle_stopped(id, qid, None);
            }
            QueryReason::PageEnd => {
                if let Some(timer) = pending {
                    self.clear_timer(timer);
                    let stop = self.query_mut(id, qid).and_then(|q| {
                        Some((q.stop_url.clone(), stop_body(q.life.client_id.as_deref()?)))
                    });
                    if let Some((url, body)) = stop {
                        self.send_delivery(id, url, Some(body), None);
                    }
                    self.settle_stopped(id, qid, Some(StopResult::Sent));
                }
            }
            _ => {}
        }
    }

    /// The session of guard `id` ended or changed elsewhere (`now`: the session there now):
    /// its queries of another session are stopped: for a logout with `keepalive`, except what
    /// the tab that signed out stopped already (it took their entry); for another user with
    /// nothing sent.
    pub(super) fn session_left_queries(&mut self, id: GuardId, now: Option<Session>) {
        let queries: Vec<(u32, Session)> = self.guard(id).map_or_else(Vec::new, |g| {
            g.queries
                .iter()
                .filter(|q| q.stopped.is_none())
                .map(|q| (q.id, q.owner.clone()))
                .collect()
        });
        for (qid, owner) in queries {
            match &now {
                None => {
                    self.stop_sending(id, qid, QueryReason::Logout, None, &[]);
                }
                Some(s) if !s.same_identity(&owner) => self.drop_query(id, qid),
                Some(_) => {}
            }
        }
        self.keep_entry(id);
    }

    /// At a logout, the stops and cancels of the other tabs' queries (what their entries
    /// list), in `group`: each synchronous request in flight by its `client_id` (a stop URL of
    /// this site, a `client_id` by the rule), each job only their queries await and no waiter
    /// here does, as `cancel()` would send it (the records are still there); none twice
    /// (`cancelled` went already). Those tabs hear the logout later, find their entries gone,
    /// and send nothing again.
    pub(super) fn stop_other_tabs(&mut self, id: GuardId, group: u32, cancelled: &[String]) {
        let page = self.page_token();
        let Some(guard) = self.guard(id) else {
            return;
        };
        let listed = guard.store.elsewhere(&page);
        for (url, client_id) in &listed.stops {
            if !is_same_origin_path(url)
                || !is_client_id(client_id)
                || self.servers.has_no_stop(url)
            {
                continue;
            }
            self.send_delivery(id, url.clone(), Some(stop_body(client_id)), Some(group));
        }
        for job in &listed.queries {
            if cancelled.contains(job) || self.others_await(id, job, &[]) {
                continue;
            }
            self.send_cancel_record(id, job, Some(group));
        }
    }

    /// The server answered 401 to guard `id`: nothing more is sent for the session until the
    /// next login, in any tab.
    pub(super) fn unauthorized(&mut self, id: GuardId) {
        self.shut_out(id, Change::Unauthorized);
    }

    /// The server answered guard `id` 401 ([`Change::Unauthorized`]: nothing is sent until the
    /// next login) or 403 to a poll ([`Change::Forbidden`]: `follow()` waits for the next
    /// login). Said once, here and to the other tabs. `follow()` lets the browser's poller
    /// lock go until the next login: a tab that has not heard of it (one opened since) polls,
    /// and meets it itself.
    pub(super) fn shut_out(&mut self, id: GuardId, change: Change) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let flag = match change {
            Change::Forbidden => &mut guard.forbidden,
            _ => &mut guard.unauthenticated,
        };
        let new = !std::mem::replace(flag, true);
        self.pause_follow(id);
        if new {
            self.announce(id, change.as_str());
            self.changed(id, change);
        }
    }

    /// The page's `pagehide`. Into the back/forward cache the page may come back: `follow()`
    /// lets its loop and lock go. Otherwise the page ends: what the page's waiters await and
    /// no other waiter of the browser does is cancelled, each job once, by the guard whose
    /// waiter would cancel it; every query not known to be stopped is stopped; all with
    /// `keepalive`; the page's wait entries go.
    pub(super) fn page_hide(&mut self, persisted: bool) {
        if persisted {
            let ids: Vec<GuardId> = self.guards.iter().map(|g| g.id).collect();
            for id in ids {
                if let Some(guard) = self.guard(id) {
                    guard.frozen = true;
                }
                self.pause_follow(id);
            }
            return;
        }
        let page = self.page_token();
        let mut elsewhere: Vec<String> = Vec::new();
        let mut allowed: Vec<Vec<String>> = Vec::new();
        // A freed guard awaits nothing (its cancels still running are in flight).
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
        let cancelling: Vec<Vec<String>> = self
            .guards
            .iter()
            .map(|g| g.cancels.iter().map(|c| c.job.clone()).collect())
            .collect();

        let decided = {
            let views: Vec<GuardWaits> = self
                .guards
                .iter()
                .zip(&cancelling)
                .map(|(g, c)| GuardWaits {
                    waiters: &g.waits.rules,
                    cancelling: c,
                })
                .collect();
            at_page_end(&views, &elsewhere, |at, job| {
                allowed.get(at).is_some_and(|a| a.iter().any(|j| j == job))
            })
        };
        for (at, job) in decided {
            if let Some(id) = self.guards.get(at).map(|g| g.id) {
                self.send_cancel_record(id, &job, None);
            }
        }
        let ids: Vec<GuardId> = self.guards.iter().map(|g| g.id).collect();
        for id in ids {
            if let Some(guard) = self.guard(id) {
                guard.ended = true;
            }
            self.stop_all(id, QueryReason::PageEnd, None);
            self.close_entry(id);
            self.pause_follow(id);
        }
    }

    /// The page's `pageshow`: out of the back/forward cache, `follow()` runs again for whoever
    /// holds it.
    pub(super) fn page_show(&mut self, persisted: bool) {
        if !persisted {
            return;
        }
        let ids: Vec<GuardId> = self
            .guards
            .iter()
            .filter(|g| g.frozen)
            .map(|g| g.id)
            .collect();
        for id in ids {
            if let Some(guard) = self.guard(id) {
                guard.frozen = false;
            }
            self.kick_follow(id);
        }
    }
}
