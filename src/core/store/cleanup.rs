//! Reading records the store can trust, and removing what it must: untrustworthy records
//! (counted by reason), other owners' records, purges, and eviction for space or over
//! `maxJobs`.

use super::super::clock::Clock;
use super::super::error::StorageError;
use super::super::ids::{is_reserved_id, is_valid_id};
use super::super::model::JobRecord;
use super::super::session::Session;
use super::super::storage::KeyValue;
use super::JobStore;

/// How far in the future a record's `created_at` may be (clocks are adjusted now and then).
pub const FUTURE_SKEW_MS: u64 = 5 * 60 * 1000;

/// Why a stored record was not returned.
pub(super) enum Rejected {
    Absent,
    Unreadable,
    Oversized,
    ReservedId,
    KeyMismatch,
    Expired,
}

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    /// Evicts the session's terminal records, oldest first, until about `needed` bytes are
    /// free; returns how many it evicted.
    pub(super) fn make_room(&mut self, needed: usize, keep: &str, session: &Session) -> usize {
        let mut candidates = Vec::new();
        for id in self.job_ids() {
            let key = self.keys.job(&id);
            if key == keep {
                continue;
            }
            if let Some(Ok((r, _))) = self.read_record(&key) {
                if r.is_terminal() && session.owns_record(&r) {
                    candidates.push(r);
                }
            }
        }
        JobRecord::sort(&mut candidates, false);
        let mut freed = 0;
        let mut evicted = 0;
        for record in candidates {
            if freed >= needed {
                break;
            }
            let key = self.keys.job(&record.job_id);
            freed += key.len() + record.stored_len();
            self.storage.remove(&key);
            self.stats.removed.evicted_for_space += 1;
            evicted += 1;
        }
        evicted
    }

    /// The record stored under `key`, read now (a text read before is not parsed again:
    /// [`Parsed`](super::parsed::Parsed)), with its text's UTF-8 length; `None` when there is
    /// none, an error when it is not a record.
    pub(super) fn read_record(
        &mut self,
        key: &str,
    ) -> Option<Result<(JobRecord, usize), StorageError>> {
        let text = self.storage.get_text(key)?;
        let len = text.len();
        Some(self.records.read(key, text).map(|record| (record, len)))
    }

    /// The job ids of every stored record of this schema version.
    pub(super) fn job_ids(&self) -> Vec<String> {
        let prefix = self.keys.job_prefix.as_str();
        let mut ids = Vec::new();
        for key in self.storage.keys() {
            ids.extend(key.strip_prefix(prefix).map(ToOwned::to_owned));
        }
        ids
    }

    /// Reads one record. Untrustworthy ones are removed, counted, and read as absent.
    pub(super) fn load(&mut self, job_id: &str) -> Result<JobRecord, Rejected> {
        let key = self.keys.job(job_id);
        let read = self.read_record(&key);
        let verdict = match read {
            None => return Err(Rejected::Absent),
            _ if !is_valid_id(job_id) => Err(Rejected::Unreadable),
            _ if is_reserved_id(job_id) => Err(Rejected::ReservedId),
            Some(Err(_)) => Err(Rejected::Unreadable),
            Some(Ok((r, text_len))) if !r.fits_stored(text_len) => Err(Rejected::Oversized),
            Some(Ok((r, _))) if r.job_id != job_id => Err(Rejected::KeyMismatch),
            Some(Ok((r, _))) if self.expired(&r) => Err(Rejected::Expired),
            Some(Ok((r, _))) => Ok(r),
        };
        if let Err(why) = &verdict {
            let removed = &mut self.stats.removed;
            match why {
                Rejected::Absent => {}
                Rejected::Unreadable => removed.unreadable += 1,
                Rejected::Oversized => removed.oversized += 1,
                Rejected::ReservedId => removed.reserved_id += 1,
                Rejected::KeyMismatch => removed.key_mismatch += 1,
                Rejected::Expired => removed.expired += 1,
            }
            self.storage.remove(&key);
        }
        verdict
    }

    /// The session's record of `job_id`; another owner's record is removed. A task this tab
    /// left reads as absent here (other tabs may still watch it).
    pub(super) fn load_owned(&mut self, job_id: &str, session: &Session) -> Option<JobRecord> {
        if self.tabs.has_left(job_id) {
            return None;
        }
        let record = self.load(job_id).ok()?;
        if session.owns_record(&record) {
            return Some(record);
        }
        self.remove_foreign(job_id, session);
        None
    }

    /// Removes a record that is not `session`'s, unless the session changed meanwhile (another
    /// tab may have just signed in as the record's owner).
    pub(super) fn remove_foreign(&mut self, job_id: &str, session: &Session) {
        if self.session().as_ref() == Some(session) {
            // Another identity's record (left by a session that ended, here or in another tab,
            // before that tab's purge reached it): remembered as purged, as that purge would be.
            if let Ok(record) = self.load(job_id) {
                self.remember_purged(&[record]);
            }
            self.stats.removed.foreign_owner += 1;
            self.storage.remove(&self.keys.job(job_id));
        }
    }

    /// Older than the TTL, or dated in the future beyond [`FUTURE_SKEW_MS`]: a record written
    /// while a clock ran ahead, or forged, would otherwise outlive the TTL. (A clock that never
    /// gave a reading says 0: it dates nothing in the future.)
    fn expired(&self, record: &JobRecord) -> bool {
        let now = self.clock.now_ms();
        now >= self.expires_at(record)
            || (now > 0 && record.created_at > now.saturating_add(FUTURE_SKEW_MS))
    }

    /// The first time (ms) at which `record` is older than the TTL.
    pub fn expires_at(&self, record: &JobRecord) -> u64 {
        record
            .created_at
            .saturating_add(self.ttl_ms)
            .saturating_add(1)
    }

    /// Removes every record that is not `owner`'s (every record without one; untrustworthy
    /// ones go too), and remembers them ([`purged`](super::purged)); returns how many records
    /// it removed.
    pub(super) fn purge_except(&mut self, owner: Option<&Session>) -> usize {
        let mut purged = Vec::new();
        for id in self.job_ids() {
            if let Ok(record) = self.load(&id) {
                if !owner.is_some_and(|s| s.owns_record(&record)) {
                    self.storage.remove(&self.keys.job(&id));
                    purged.push(record);
                }
            }
        }
        self.remember_purged(&purged);
        purged.len()
    }

    /// Keeps at most `max_jobs` records: terminal ones go first, then the oldest. The record
    /// just written (`keep`) is never the one evicted.
    pub(super) fn evict_over_limit(&mut self, keep: &str) {
        // Counting every key is one call; listing them is one per key. If all the keys there
        // are fit within the limit, so do the job records.
        if self
            .storage
            .key_count_bound()
            .is_some_and(|n| n <= self.max_jobs)
        {
            return;
        }
        let ids = self.job_ids();
        if ids.len() <= self.max_jobs {
            return;
        }
        let mut records = Vec::new();
        for id in &ids {
            records.extend(self.load(id).ok());
        }
        if records.len() <= self.max_jobs {
            return;
        }
        let excess = records.len() - self.max_jobs;
        // Finished jobs go first, then the oldest.
        JobRecord::sort(&mut records, true);
        for record in records.iter().filter(|r| r.job_id != keep).take(excess) {
            self.stats.removed.evicted_over_limit += 1;
            self.storage.remove(&self.keys.job(&record.job_id));
        }
    }
}
