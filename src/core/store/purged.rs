//! The jobs this browser purged when their session ended (a logout, a sign-in of another user
//! or guest, a new channel), remembered for every tab under `<namespace>:v1:purged` for as long
//! as such a job could still be running: until its record would have expired (`created_at` +
//! the TTL).
//!
//! A task's `202` body names no user, so a body that arrives after its session ended (a request
//! sent before the logout, answered after it) would otherwise be recorded for whoever is signed
//! in now. With this list a purged job is refused to a later session of another user or guest
//! (`not_job_owner`), with nothing sent. The same user or guest signing in again may record it:
//! on the task framework Superset gives one task to every identical query (its `task_key` is the
//! query's cache key), so the same user's dashboard run again names the same task, and it is
//! theirs on the server. The list keeps nothing in the clear: a job is a 64-bit FNV-1a hash of
//! its record's id and its owner a hash of the user or guest, so what a logout leaves in
//! storage names neither.

use serde::{Deserialize, Serialize};

use super::super::clock::Clock;
use super::super::ids::{GuestKey, UserId};
use super::super::model::JobRecord;
use super::super::session::Session;
use super::super::storage::{from_json, KeyValue};
use super::JobStore;

/// The most purged jobs remembered (the soonest to expire go first).
pub const MAX_PURGED: usize = 400;

/// A purged job: the hashes of its record's id and of its owner ([`hash`], [`owner`]), and
/// until when it is remembered (ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Purged {
    job: String,
    owner: String,
    until: u64,
}

/// A user or guest as the list keeps it: the hash of `u:<user id>`, `g:<guest key>` or `-`.
fn owner(user_id: Option<&UserId>, guest_key: Option<&GuestKey>) -> String {
    match (user_id, guest_key) {
        (Some(user), _) => hash(&["u:", user].concat()),
        (None, Some(guest)) => hash(&["g:", guest].concat()),
        (None, None) => hash("-"),
    }
}

/// A text as the list keeps it: its 64-bit FNV-1a hash, in hex.
fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut text = String::with_capacity(16);
    for shift in (0..16).rev() {
        text.extend(char::from_digit(((h >> (shift * 4)) & 0xf) as u32, 16));
    }
    text
}

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    /// The purged jobs remembered and not yet forgotten (read now; the text read last is not
    /// parsed again). An unreadable list reads as empty.
    fn purged(&mut self) -> Vec<Purged> {
        let Some(text) = self.storage.get_text(&self.keys.purged) else {
            return Vec::new();
        };
        if let Some((seen, list)) = &self.purged_read {
            if *seen == text {
                return list.clone();
            }
        }
        let list: Vec<Purged> = from_json(&text).unwrap_or_default();
        self.purged_read = Some((text, list.clone()));
        list
    }

    /// Remembers `records`, which are being purged.
    pub(super) fn remember_purged(&mut self, records: &[JobRecord]) {
        if records.is_empty() {
            return;
        }
        let now = self.clock.now_ms();
        let mut list = self.purged();
        let hashes: Vec<String> = records.iter().map(|r| hash(&r.job_id)).collect();
        list.retain(|p| p.until > now && !hashes.contains(&p.job));
        for (record, job) in records.iter().zip(hashes) {
            let until = self.expires_at(record);
            if until > now {
                let owner = owner(record.user_id.as_ref(), record.guest_key.as_ref());
                list.push(Purged { job, owner, until });
            }
        }
        if list.len() > MAX_PURGED {
            list.sort_by_key(|p| std::cmp::Reverse(p.until));
            list.truncate(MAX_PURGED);
        }
        let key = self.keys.purged.clone();
        self.put(&key, &list, None);
    }

    /// Whether `job_id` (a record's id) was purged from another user or guest than
    /// `session`'s when its session ended, and is remembered still.
    pub(super) fn purged_from_another(&mut self, job_id: &str, session: &Session) -> bool {
        let list = self.purged();
        if list.is_empty() {
            return false;
        }
        let (now, job) = (self.clock.now_ms(), hash(job_id));
        let me = owner(session.user_id.as_ref(), session.guest_key.as_ref());
        list.iter()
            .any(|p| p.job == job && p.until > now && p.owner != me)
    }
}
