//! Signing in and out, a guard freed, and what other tabs say of the session: their
//! messages on the namespace's channel and their `storage` events. What a message or an
//! event means is [`tabs`](super::super::tabs)'s rule; here is what each guard then does.

use super::super::error::GuardError;
use super::super::query::QueryReason;
use super::super::session::Session;
use super::super::tabs::{hear, storage_change, Change, Message, Source, StorageChange};
use super::{Effect, GuardId, Machine, Platform, PromiseId, StorageEvent};

/// The message type of a sign-in of the same session again.
const SIGNED_IN: &str = super::super::tabs::SIGNED_IN;

impl<P: Platform> Machine<P> {
    /// `login(session)`: a different identity than the stored one purges every record first,
    /// and ends what the previous one started (its cancels as `aborted`, its queries with
    /// nothing sent as the new user). How many records were removed.
    pub fn login(&mut self, id: GuardId, session: Session) -> Result<usize, GuardError> {
        let guard = self.guard(id).ok_or(GuardError::Freed)?;
        let who = session.clone();
        let signed = guard.store.sign_in(session)?;
        guard.new_session();
        let switched = !signed
            .previous
            .as_ref()
            .is_some_and(|s| s.same_identity(&who));
        if switched {
            self.stop_all(id, QueryReason::UserChanged, None);
            self.announce(id, Change::UserChanged.as_str());
            self.end_cancels(id);
        } else {
            // A follow a 401 stopped in another tab resumes there.
            self.announce(id, SIGNED_IN);
        }
        self.kick_follow(id);
        if switched {
            self.changed(id, Change::UserChanged);
        } else if signed.changed {
            // The same user with a new channel (and maybe fewer records).
            self.changed(id, Change::JobsChanged);
        }
        self.settle_waits();
        Ok(signed.purged)
    }

    /// `logout()`: stops the session's queries on the server, in every tab and every guard of
    /// the page in the namespace (with `keepalive`, before the session ends; `stopped`
    /// settles when what was sent is answered), removes every key of the namespace, and ends
    /// every cancel in flight as `aborted`. How many records were removed.
    pub fn logout(&mut self, id: GuardId, stopped: PromiseId) -> Result<usize, GuardError> {
        let namespace = self
            .guard(id)
            .ok_or(GuardError::Freed)?
            .options
            .namespace
            .clone();
        let group = self.delivery_group(stopped);
        let mut cancelled = Vec::new();
        for other in self.in_namespace(&namespace) {
            if other != id {
                cancelled.extend(self.stop_all(other, QueryReason::Logout, Some(group)));
            }
        }
        cancelled.extend(self.stop_all(id, QueryReason::Logout, Some(group)));
        self.stop_other_tabs(id, group, &cancelled);
        self.end_cancels(id);
        self.end_poll(id);
        let guard = self.guard(id).ok_or(GuardError::Freed)?;
        let (purged, removed) = guard.store.sign_out();
        guard.hears_server_again();
        if removed {
            self.announce(id, Change::Logout.as_str());
        }
        self.kick_follow(id);
        if removed {
            self.changed(id, Change::Logout);
        }
        self.close_group(group);
        self.settle_waits();
        Ok(purged)
    }

    /// `free()`: its queries are stopped as an unmount stops them, its waiters settle
    /// `aborted` (nothing is cancelled for them), it lets `follow()` go, and its wait entry
    /// goes. Its cancels still running end as they would; then the guard is gone.
    pub fn free(&mut self, id: GuardId) {
        self.stop_all(id, QueryReason::Signal, None);
        self.end_waits(id);
        self.release_all_follow(id);
        if let Some(guard) = self.guard(id) {
            guard.freed = true;
        }
        self.reap();
    }

    /// Drops the freed guards that have nothing left running.
    pub(super) fn reap(&mut self) {
        let open = &self.open;
        let mut gone = Vec::new();
        self.guards.retain(|g| {
            let keep = !g.freed
                || !g.cancels.is_empty()
                || !g.queries.is_empty()
                || open.iter().any(|o| o.purpose.guard() == Some(g.id));
            if !keep {
                gone.push(g.id);
            }
            keep
        });
        for id in gone {
            self.emit(Effect::Gone(id));
        }
    }

    /// Tells the other tabs (and the page's other guards of the namespace, as their own
    /// channels would) that guard `id` signed out, signed in as someone else, signed the same
    /// session in again, or met a 401 or a 403.
    pub(super) fn announce(&mut self, id: GuardId, kind: &str) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let session = guard.store.session();
        let shared = guard.shared();
        let namespace = guard.options.namespace.clone();
        let message = Message::about(kind, session.as_ref());
        self.emit(Effect::Post {
            namespace: namespace.clone(),
            message: message.clone(),
            shared,
        });
        for other in self.in_namespace(&namespace) {
            if other != id {
                self.hear_message(other, &message);
            }
        }
    }

    /// A message on `namespace`'s channel from another tab.
    pub(super) fn message(&mut self, namespace: &str, message: &Message) {
        for id in self.in_namespace(namespace) {
            self.hear_message(id, message);
        }
    }

    fn hear_message(&mut self, id: GuardId, message: &Message) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let shared = guard.shared();
        let session = guard.store.session();
        let heard = hear(message, session.as_ref(), shared);
        if heard.resume_follow {
            guard.hears_server_again();
        }
        match heard.change {
            // A 401 or 403 another tab met ends nothing here (the app decides), and nothing is
            // sent for the session until the next login.
            Some(change @ (Change::Unauthorized | Change::Forbidden)) => {
                self.mark_shut_out(id, change);
            }
            Some(_) => self.session_ended_here(id),
            None => {}
        }
        if heard.resume_follow {
            self.kick_follow(id);
        }
        if let Some(change) = heard.change {
            self.notify(id, change, Source::OtherTab);
        }
    }

    /// A `storage` event from another tab, for each guard whose storage is the origin's and
    /// whose key it is.
    pub(super) fn storage_event(&mut self, event: &StorageEvent) {
        let ids: Vec<GuardId> = self.guards.iter().map(|g| g.id).collect();
        for id in ids {
            let Some(guard) = self.guard(id) else {
                continue;
            };
            if !guard.shared() {
                continue;
            }
            let store = &mut guard.store;
            let change = match &event.key {
                None => storage_change(StorageChange::Cleared, store.session().as_ref()),
                Some(key) if !store.owns_key(key) || store.is_wait_key(key) => continue,
                Some(key) if store.is_session_key(key) => storage_change(
                    StorageChange::Session {
                        old: event.old.as_deref(),
                        new: event.new.as_deref(),
                    },
                    None,
                ),
                Some(_) => {
                    // A record removed: if another tab's logout or switch purged it, this tab
                    // remembers it (a late 202 naming it is refused to the next user).
                    if let (Some(old), None) = (&event.old, &event.new) {
                        store.heard_removal(old);
                    }
                    storage_change(StorageChange::Record, store.session().as_ref())
                }
            };
            if change != Change::JobsChanged {
                self.session_ended_here(id);
            }
            self.notify(id, change, Source::OtherTab);
        }
    }

    /// The session ended or changed elsewhere (another tab, another guard of the page): a
    /// memory-only guard signs out, one over the origin's storage (already changed) drops
    /// what it kept in memory; its cancels end as `aborted`, its queries are stopped, and a
    /// 401's stop ends with the session.
    pub(super) fn session_ended_here(&mut self, id: GuardId) {
        self.note_entry_taken(id);
        let Some(guard) = self.guard(id) else {
            return;
        };
        if guard.shared() {
            guard.store.forget_memory();
        } else {
            guard.store.logout();
        }
        guard.hears_server_again();
        let now = guard.store.session();
        let signed_in = now.is_some();
        self.end_cancels(id);
        self.end_poll(id);
        self.session_left_queries(id, now);
        // Someone is signed in now (another tab's login): the new session lists what it
        // waits for again.
        if signed_in {
            if let Some(guard) = self.guard(id) {
                guard.new_session();
            }
        }
        self.kick_follow(id);
    }
}
