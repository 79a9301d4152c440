//! Stopping every query of a guard at once. A logout in this tab stops them with `keepalive`
//! before the session ends (the other tabs' queries too, from their entries), a user switch
//! sends nothing as the new user, another tab's logout stops what that tab did not, and the
//! page's end stops and cancels everything not yet stopped, with `keepalive`, except what
//! `cancelOnClose: false` keeps. Each query is stopped as [`stops`](super::stops) stops one;
//! who else awaits a job is [`unawaited`](super::unawaited)'s.

use super::super::chart::{is_client_id, is_same_origin_path, stop_body};
use super::super::query::QueryReason;
use super::super::session::Session;
use super::super::tabs::Change;
use super::io::GuardId;
use super::unawaited::Scope;
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
    /// Stops every query of guard `id` for `reason` (a logout in this tab, before the session
    /// ends, in `group`; another user signing in; the page's end; the guard freed), each as
    /// [`stop_query`](Self::stop_query) stops one. The jobs their stops cancel.
    pub(super) fn stop_all(
        &mut self,
        id: GuardId,
        reason: QueryReason,
        group: Option<u32>,
    ) -> Vec<String> {
        let queries: Vec<u32> = self
            .guard(id)
            .map_or_else(Vec::new, |g| g.queries.iter().map(|q| q.id).collect());
        let mut cancelled = Vec::new();
        for qid in queries {
            self.stop_query(id, qid, reason, group);
            if let Some(s) = self.query_mut(id, qid).and_then(|q| q.stopped.as_ref()) {
                cancelled.extend(s.cancelling.iter().cloned());
            }
        }
        self.keep_entry(id);
        cancelled
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
                None => self.stop_query(id, qid, QueryReason::Logout, None),
                Some(s) if !s.same_identity(&owner) => {
                    self.stop_query(id, qid, QueryReason::UserChanged, None)
                }
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
                || !self.servers.can_stop(None, &self.server_key(id, url))
            {
                continue;
            }
            self.send_delivery(id, url.clone(), Some(stop_body(client_id)), Some(group));
        }
        let jobs: Vec<String> = listed
            .queries
            .into_iter()
            .filter(|job| !cancelled.contains(job))
            .collect();
        for job in self.unawaited(id, jobs, &[], Scope::Logout) {
            self.send_cancel_record(id, &job, Some(group));
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
        if self.mark_shut_out(id, change) {
            self.announce(id, change.as_str());
            self.changed(id, change);
        }
    }

    /// Guard `id` met a 401 ([`Change::Unauthorized`]) or a poll's 403 (here, or another tab
    /// said so): its flag is set and `follow()` pauses until the next login. Whether it is
    /// new.
    pub(super) fn mark_shut_out(&mut self, id: GuardId, change: Change) -> bool {
        let Some(guard) = self.guard(id) else {
            return false;
        };
        let flag = match change {
            Change::Forbidden => &mut guard.forbidden,
            _ => &mut guard.unauthenticated,
        };
        let new = !std::mem::replace(flag, true);
        self.pause_follow(id);
        new
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
        self.cancel_at_page_end();
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
            self.hand_on = true;
        }
    }
}
