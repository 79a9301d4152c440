//! The jobs whose records were purged when their session ended (a logout, a sign-in of another
//! user or guest, a new channel), remembered in this tab's memory for as long as such a job could
//! still be running: until its record would have expired (`created_at` + the TTL).
//!
//! A task's `202` body names no user, so a body that arrives after its session ended (a request
//! sent before the logout, answered after it) would otherwise be recorded for whoever is signed
//! in now. A late answer reaches only a tab that was open when the session ended, and every such
//! tab learns of the purge: the tab that purged remembers what it removed, and each other tab
//! hears each record's removal as a `storage` event carrying the record
//! ([`heard_removal`](JobStore::heard_removal)), after the session's own change (the session is
//! written or removed first). A purged job is then refused to a session of another user or
//! guest (`not_job_owner`), with nothing sent. The same user or guest signing in again may
//! record it: on the task framework Superset gives one task to every identical query (its
//! `task_key` is the query's cache key), so the same user's dashboard run again names the same
//! task, and it is theirs on the server. Nothing of this is written to storage: a logout leaves
//! no key behind.

use super::super::clock::Clock;
use super::super::ids::{GuestKey, UserId};
use super::super::model::JobRecord;
use super::super::session::Session;
use super::super::storage::{from_json, KeyValue};
use super::JobStore;

/// The most purged jobs a tab remembers (the soonest to expire go first).
pub const MAX_PURGED: usize = 1000;

/// A purged job: its record's id, its owner, and until when it is remembered (ms).
#[derive(Clone, Debug, PartialEq)]
struct Purged {
    job_id: String,
    user_id: Option<UserId>,
    guest_key: Option<GuestKey>,
    until: u64,
}

/// The purged jobs this tab remembers.
#[derive(Debug, Default)]
pub(super) struct PurgedJobs(Vec<Purged>);

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    /// Remembers `records`, which are being purged.
    pub(super) fn remember_purged(&mut self, records: &[JobRecord]) {
        let now = self.clock.now_ms();
        for record in records {
            let until = self.expires_at(record);
            let list = &mut self.purged.0;
            list.retain(|p| p.until > now && *p.job_id != *record.job_id);
            if until > now {
                list.push(Purged {
                    job_id: record.job_id.to_string(),
                    user_id: record.user_id.clone(),
                    guest_key: record.guest_key.clone(),
                    until,
                });
            }
        }
        let list = &mut self.purged.0;
        if list.len() > MAX_PURGED {
            list.sort_by_key(|p| std::cmp::Reverse(p.until));
            list.truncate(MAX_PURGED);
        }
    }

    /// Another tab removed a record whose text was `old` (a `storage` event on one of the
    /// store's record keys). When the session signed in now is not the record's owner's (that
    /// tab signed out, or signed someone else in, and the session changed first), the record
    /// was purged: it is remembered. A removal within the session (a cancel settled, an
    /// eviction) is not.
    pub fn heard_removal(&mut self, old: &str) {
        let Ok(record) = from_json::<JobRecord>(old) else {
            return;
        };
        let owned = self
            .session()
            .is_some_and(|s| s.user_id == record.user_id && s.guest_key == record.guest_key);
        if !owned {
            self.remember_purged(&[record]);
        }
    }

    /// Whether `job_id` (a record's id) was purged from another user or guest than
    /// `session`'s, and is remembered still.
    pub(super) fn purged_from_another(&mut self, job_id: &str, session: &Session) -> bool {
        let now = self.clock.now_ms();
        self.purged.0.iter().any(|p| {
            p.job_id == job_id
                && p.until > now
                && (p.user_id != session.user_id || p.guest_key != session.guest_key)
        })
    }
}
