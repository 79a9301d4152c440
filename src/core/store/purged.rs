//! The jobs this browser purged when their session ended (a logout, a sign-in of another user
//! or guest, a new channel), remembered for every tab under `<namespace>:v1:purged` for as long
//! as such a job could still be running: until its record would have expired (`created_at` +
//! the TTL).
//!
//! A task's `202` body names no user, so a body that arrives after its session ended (a request
//! sent before the logout, answered after it) would otherwise be recorded for whoever is signed
//! in now. With this list a purged job is refused to every later session (`not_job_owner`),
//! with nothing sent: nothing of a previous session is handed to the next one, the same user
//! signing in again included. The list keeps no id in the clear: each job is a 64-bit FNV-1a
//! hash of its record's id, and nothing names its owner, so what a logout leaves in storage
//! says nothing about who was signed in.

use serde::{Deserialize, Serialize};

use super::super::clock::Clock;
use super::super::model::JobRecord;
use super::super::storage::{from_json, KeyValue};
use super::JobStore;

/// The most purged jobs remembered (the soonest to expire go first).
pub const MAX_PURGED: usize = 400;

/// A purged job: the hash of its record's id ([`hash`]), and until when it is remembered (ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Purged {
    job: String,
    until: u64,
}

/// A record's id as the list keeps it: its 64-bit FNV-1a hash, in hex.
fn hash(job_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in job_id.bytes() {
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
                list.push(Purged { job, until });
            }
        }
        if list.len() > MAX_PURGED {
            list.sort_by_key(|p| std::cmp::Reverse(p.until));
            list.truncate(MAX_PURGED);
        }
        let key = self.keys.purged.clone();
        self.put(&key, &list, None);
    }

    /// Whether `job_id` (a record's id) was purged when its session ended, and is remembered
    /// still.
    pub(super) fn was_purged(&mut self, job_id: &str) -> bool {
        let list = self.purged();
        if list.is_empty() {
            return false;
        }
        let (now, job) = (self.clock.now_ms(), hash(job_id));
        list.iter().any(|p| p.job == job && p.until > now)
    }
}
