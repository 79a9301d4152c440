//! A guard's wait entry, which tells the other tabs what it awaits: the jobs of its waiters,
//! those only its queries await, and its queries' synchronous requests in flight. It is
//! written when that changes or its refresh is due, noted as taken when another tab's logout
//! took it, and removed at the page's end.

use super::super::store::Awaited;
use super::io::GuardId;
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
    /// What guard `id`'s entry lists now: the jobs its waiters await, those only its queries'
    /// waiters await, and its queries' synchronous requests in flight (their stop URL and
    /// `client_id`, where a stop can reach them).
    pub(super) fn listed(&mut self, id: GuardId) -> Awaited {
        let stops = self.stops_in_flight(id);
        let Some(guard) = self.guard(id) else {
            return Awaited::default();
        };
        let rules = &guard.waits.rules;
        let jobs = rules.jobs(false);
        let of_queries = guard.waits.of_queries();
        let queries = jobs
            .iter()
            .filter(|j| !rules.awaits_except(j, &of_queries))
            .cloned()
            .collect();
        Awaited {
            jobs,
            queries,
            stops,
        }
    }

    /// Writes guard `id`'s entry when what it lists changed or its refresh is due (after
    /// every change its waiters hear, and as its queries' requests leave and end).
    pub(super) fn keep_entry(&mut self, id: GuardId) {
        let session = self.guard(id).and_then(|g| g.store.session());
        // The session ended (another tab's logout, maybe not heard yet): what that tab took is
        // noted, and nothing more is written until the next login.
        if session.is_none() {
            self.note_entry_taken(id);
        }
        if self.guard(id).is_none_or(|g| g.entry_taken()) {
            return;
        }
        let listed = self.listed(id);
        let now = self.now();
        let page = self.page_token();
        let Some(guard) = self.guard(id) else {
            return;
        };
        let entry = &mut guard.waits.entry;
        if let Some(listed) = entry.state.due(listed, now) {
            let token = entry
                .token
                .get_or_insert_with(|| [page.as_str(), "-", &id.0.to_string()].concat());
            guard.store.keep_entry(token, &listed);
        }
    }

    /// Whether another tab's logout took guard `id`'s entry (read it, stopped what it
    /// listed, removed it): noted before anything here writes it again.
    pub(super) fn note_entry_taken(&mut self, id: GuardId) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let shared = guard.shared();
        let entry = &guard.waits.entry;
        let Some(token) = entry.token.as_deref() else {
            return;
        };
        if shared && entry.taken.is_none() && !guard.store.has_entry(token) {
            let listed = entry.state.listed.clone();
            guard.waits.entry.taken = Some(listed);
        }
    }

    /// The page ended: the guard's entry goes, and is not written again.
    pub(super) fn close_entry(&mut self, id: GuardId) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        if let Some(token) = &guard.waits.entry.token {
            guard.store.keep_waits(token, &[]);
        }
        guard.waits.entry.state.closed = true;
    }
}

impl<P: Platform> super::guard::GuardState<P> {
    pub(super) fn entry_taken(&self) -> bool {
        self.waits.entry.taken.is_some()
    }
}
