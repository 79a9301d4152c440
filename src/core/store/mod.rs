//! The job store: job records and the session marker, kept in a [`KeyValue`] storage.
//!
//! Keys: `<namespace>:v1:session` holds the session marker and `<namespace>:v1:job:<job_id>`
//! one record each, as JSON; besides them, what each waiting guard awaits (`waits`). Nothing
//! else is written (the jobs purged when their session ended are remembered in memory:
//! `purged`). Every operation reads the session marker
//! from storage, so a logout or a user switch made by another tab sharing the storage is
//! honoured at once. Stored values that cannot be trusted (unreadable, oversized, a reserved
//! or mismatched job id, expired, another owner's) are treated as absent and removed, and
//! counted in [`StoreStats`]. Writes the storage refuses are kept in memory
//! ([`FallbackStorage`]): no operation fails because of storage.

use std::borrow::Cow;

use super::clock::Clock;
use super::error::GuardError;
use super::fallback::{FallbackStorage, StorageStatus};
use super::ids::{canonical_uuid, is_valid_id, TabId};
use super::model::{JobMetadata, JobRecord};
use super::options::GuardOptions;
use super::session::Session;
use super::stats::StoreStats;
use super::storage::{from_json, KeyValue};

mod cancels;
mod cleanup;
mod keys;
mod parsed;
mod purged;
mod tasks;
#[cfg(test)]
mod tests;
mod waits;
mod writes;

use keys::Keys;
pub use keys::{session_key, SUPERSET_LAST_EVENT_KEY};
use parsed::Parsed;
pub use purged::MAX_PURGED;
pub use waits::{is_wait_token, Awaited, WAIT_ENTRY_TTL_MS, WAIT_REFRESH_MS};

/// Why a job's record is not there for a waiter: it expired (`ttlSeconds`), or it went
/// (removed, evicted, or no longer the session's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    Expired,
    Removed,
}

/// What a sign-in did.
#[derive(Debug, PartialEq)]
pub struct SignIn {
    /// Records removed.
    pub purged: usize,
    /// The session stored before.
    pub previous: Option<Session>,
    /// Whether the stored session changed (another identity, or the same with a new channel).
    pub changed: bool,
}

/// Job records owned by sessions, over any [`KeyValue`] storage and [`Clock`].
pub struct JobStore<S, C> {
    storage: FallbackStorage<S>,
    clock: C,
    keys: Keys,
    ttl_ms: u64,
    max_jobs: usize,
    stats: StoreStats,
    /// This tab's own part of shared task records (kept in memory: it is this page's).
    tabs: tasks::TabMemory,
    /// This tab's id, when the app gave it (`tabId`): it survives a reload, the memory does not.
    tab_id: Option<TabId>,
    /// The session marker as last read or written, beside its text: the same text is not
    /// parsed again (what [`Parsed`] does for the records; for one key, a pair is less code in
    /// the module).
    session_read: Option<(String, Session)>,
    /// The records as last read or written, beside their texts.
    records: Parsed<JobRecord>,
    /// The jobs purged when their session ended, this tab's memory of them.
    purged: purged::PurgedJobs,
}

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    /// A store over storage shared by the origin's tabs (`localStorage`).
    pub fn new(storage: S, clock: C, options: &GuardOptions) -> Self {
        Self::with_storage(FallbackStorage::shared(storage), clock, options)
    }

    /// A store over storage private to this guard; `reason` says why when it was not chosen.
    pub fn private(storage: S, reason: Option<String>, clock: C, options: &GuardOptions) -> Self {
        Self::with_storage(FallbackStorage::private(storage, reason), clock, options)
    }

    fn with_storage(storage: FallbackStorage<S>, clock: C, options: &GuardOptions) -> Self {
        Self {
            storage,
            clock,
            keys: Keys::new(&options.namespace),
            ttl_ms: options.ttl_ms,
            max_jobs: options.max_jobs,
            stats: StoreStats::default(),
            tabs: tasks::TabMemory::default(),
            tab_id: options.tab_id.clone(),
            session_read: None,
            // Every record a full store holds, and the tasks of other tabs' sessions beside.
            records: Parsed::new(options.max_jobs.saturating_add(16)),
            purged: Default::default(),
        }
    }

    pub fn storage(&self) -> &S {
        self.storage.primary()
    }

    /// Where the data lives now: `local`, `memory` or `degraded`, and why.
    pub fn storage_status(&self) -> StorageStatus {
        self.storage.status()
    }

    pub fn stats(&self) -> StoreStats {
        self.stats
    }

    /// Whether `key` is one of this store's (any schema version).
    pub fn owns_key(&self, key: &str) -> bool {
        key.starts_with(&self.keys.namespace)
    }

    /// The session marker's key.
    pub fn session_key(&self) -> &str {
        &self.keys.session
    }

    /// The prefix of every job record's key.
    pub fn job_prefix(&self) -> &str {
        &self.keys.job_prefix
    }

    pub fn is_session_key(&self, key: &str) -> bool {
        key == self.keys.session
    }

    /// Another tab signed out or switched user: what this tab kept in memory is stale.
    pub fn forget_memory(&mut self) {
        self.storage.forget_memory(&self.keys.namespace);
        self.tabs = Default::default();
    }

    /// The stored session, read from storage now. A malformed marker is removed and reads as
    /// no session.
    pub fn session(&mut self) -> Option<Session> {
        let text = self.storage.get_text(&self.keys.session)?;
        if let Some((seen, session)) = &self.session_read {
            if *seen == text {
                return Some(session.clone());
            }
        }
        match from_json::<Session>(&text) {
            Ok(session) => {
                self.session_read = Some((text, session.clone()));
                Some(session)
            }
            Err(_) => {
                self.stats.removed.invalid_session += 1;
                self.storage.remove(&self.keys.session);
                None
            }
        }
    }

    /// Signs `session` in. A different user than the stored session's (or no stored session)
    /// purges every record first; the same user keeps the records it still owns, and a new
    /// channel drops the records of the old one. Returns how many records were removed. (For
    /// the tests; the guard signs in through [`sign_in`](Self::sign_in).)
    #[cfg(any(test, feature = "test-doubles"))]
    pub fn login(&mut self, session: Session) -> Result<usize, GuardError> {
        self.sign_in(session).map(|s| s.purged)
    }

    /// What `login` (for the tests) does, also giving the session that was stored before (read
    /// once) and whether the stored session changed.
    pub fn sign_in(&mut self, session: Session) -> Result<SignIn, GuardError> {
        let previous = self.session();
        let purged = match previous.clone() {
            Some(current) if current.same_identity(&session) => {
                let merged = Session {
                    user_id: session.user_id,
                    channel_id: session.channel_id.or(current.channel_id.clone()),
                    guest_key: session.guest_key,
                };
                if merged == current {
                    // A page load signing the same session in again: nothing to purge or
                    // write (records of anyone else are never returned and go when read).
                    return Ok(SignIn {
                        purged: 0,
                        previous,
                        changed: false,
                    });
                }
                // The session first: another tab hears it before the records go.
                self.write_session(&merged)?;
                self.purge_except(Some(&merged))
            }
            _ => {
                self.tabs = Default::default();
                self.write_session(&session)?;
                self.purge_except(None)
            }
        };
        Ok(SignIn {
            purged,
            previous,
            changed: true,
        })
    }

    /// Removes every key of the namespace (all schema versions) and Superset's
    /// `last_async_event_id`, the session marker first (so that another tab hears the logout
    /// before any record goes), and remembers the records it removed (`purged`). Returns how
    /// many job records were removed, and whether it removed anything at all (a logout with
    /// nothing to remove changes nothing: a second logout). Never fails: what the storage
    /// refuses to remove reads as absent here.
    pub fn sign_out(&mut self) -> (usize, bool) {
        // Removals refused before (already counted then): try them again.
        for key in self.storage.tombstones() {
            self.storage.remove(&key);
        }
        self.tabs = Default::default();
        // The tabs' wait entries first: a tab that hears the logout (even while this one is
        // still removing) finds its entry gone, so it knows this tab took what it listed.
        for key in self.storage.keys() {
            if key.starts_with(&self.keys.waits_prefix) {
                self.storage.remove(&key);
            }
        }
        let mut removed = self.storage.get_text(&self.keys.session).is_some();
        if removed {
            self.storage.remove(&self.keys.session);
        }
        let mut records = Vec::new();
        let mut purged = 0;
        for key in self.storage.keys() {
            if !self.owns_key(&key) && key != SUPERSET_LAST_EVENT_KEY {
                continue;
            }
            if let Some(id) = key.strip_prefix(self.keys.job_prefix.as_str()) {
                purged += 1;
                records.extend(self.load(id).ok());
            }
            self.storage.remove(&key);
            removed = true;
        }
        self.remember_purged(&records);
        (purged, removed)
    }

    /// [`sign_out`](Self::sign_out): how many job records it removed.
    pub fn logout(&mut self) -> usize {
        self.sign_out().0
    }

    /// Records the metadata of a job the session created. Refuses metadata of another user. A
    /// channel the session has not seen means the server minted a new one: the session adopts
    /// it and drops the records of the old channel, which this session can no longer cancel.
    pub fn record_job(&mut self, meta: JobMetadata) -> Result<JobRecord, GuardError> {
        let mut session = self.session().ok_or(GuardError::NoSession)?;
        if meta.user_id != session.user_id {
            return Err(GuardError::NotJobOwner {
                job_id: meta.job_id.into(),
            });
        }
        if self.purged_from_another(&meta.job_id, &session) {
            return Err(GuardError::NotJobOwner {
                job_id: meta.job_id.into(),
            });
        }
        let now = self.clock.now_ms();
        let mut record = JobRecord::new(meta, now, now);
        record.guest_key = session.guest_key.clone();
        let adopts_channel = session.channel_id.as_ref() != record.channel_id();
        if adopts_channel {
            session.channel_id = record.channel_id().cloned();
        }
        if let Ok(existing) = self.load(&record.job_id) {
            // A task's record of the same id (another contract) is replaced, never returned.
            if session.owns_record(&existing) && !existing.is_task() {
                if existing.is_terminal() {
                    // Superset never reuses a job id: a finished job stays finished (as it does
                    // for events), so a stale 202 body cannot make it cancellable again.
                    return Ok(existing);
                }
                record.created_at = existing.created_at;
            }
        }
        // An oversized record is refused before anything is written.
        record.check_fits()?;
        if adopts_channel {
            self.write_session(&session)?;
            self.purge_except(Some(&session));
        }
        let key = self.keys.job(&record.job_id);
        self.put_record(&key, &record, &session);
        self.evict_over_limit(&record.job_id);
        Ok(record)
    }

    /// Applies an event from the async stream to the session's record of its job. Events for
    /// jobs that are not the session's return `None` and change nothing; a terminal record
    /// keeps its final status.
    pub fn apply_event(&mut self, event: JobMetadata) -> Result<Option<JobRecord>, GuardError> {
        let Some(session) = self.session() else {
            return Ok(None);
        };
        if !session.owns(&event.user_id, &event.channel_id) {
            return Ok(None);
        }
        let Some(mut record) = self.load_owned(&event.job_id, &session) else {
            return Ok(None);
        };
        if record.is_task() {
            return Ok(None); // a task's status comes from the task framework, not events
        }
        if !record.apply_event(event) {
            return Ok(Some(record)); // a terminal record keeps its final status
        }
        record.updated_at = self.clock.now_ms();
        record.trim_to_fit()?;
        let key = self.keys.job(&record.job_id);
        self.put_record(&key, &record, &session);
        Ok(Some(record))
    }

    /// Counts what `follow()` passed over in a page of an event stream: events it could not
    /// read, of a status this guard does not know, and whether the page was read only in part.
    pub fn count_page(&mut self, skipped: usize, unknown: usize, partial: bool) {
        let s = &mut self.stats;
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        s.skipped_events = s
            .skipped_events
            .saturating_add(n(skipped.saturating_sub(unknown)));
        s.unknown_statuses = s.unknown_statuses.saturating_add(n(unknown));
        s.partial_pages = s.partial_pages.saturating_add(u32::from(partial));
    }

    /// Counts an update skipped for a status this guard does not know.
    pub fn skipped_unknown_status(&mut self) {
        self.stats.unknown_statuses = self.stats.unknown_statuses.saturating_add(1);
    }

    /// The id a record of `id` is stored under: `id` itself, or for a task uuid spelt in upper
    /// case (as a `202` body may spell it) its canonical lowercase form, as `recordTasks`
    /// stores it. An exact record wins (an async_event job id is stored as given).
    pub fn record_id<'a>(&self, id: &'a str) -> Cow<'a, str> {
        if !id.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Borrowed(id);
        }
        match canonical_uuid(id) {
            Some(canonical)
                if self
                    .storage
                    .get_text(&self.keys.job(id))
                    .is_none_or(|text| from_json::<JobRecord>(&text).is_err()) =>
            {
                Cow::Owned(canonical)
            }
            _ => Cow::Borrowed(id),
        }
    }

    /// The session's record of `job_id` (a task's uuid in any case), if it has one.
    pub fn job(&mut self, job_id: &str) -> Option<JobRecord> {
        if !is_valid_id(job_id) {
            return None; // never stored: nothing to read
        }
        let session = self.session()?;
        let id = self.record_id(job_id);
        self.load_owned(&id, &session)
    }

    /// The session's record of `job_id` (a record's id) for a waiter, with the first time at
    /// which it expires; or why there is none: it expired, or it went.
    pub fn awaited(&mut self, job_id: &str) -> Result<(JobRecord, u64), Gone> {
        let session = self.session().ok_or(Gone::Removed)?;
        if self.tabs.has_left(job_id) {
            return Err(Gone::Removed);
        }
        match self.load(job_id) {
            Ok(record) if session.owns_record(&record) => {
                let expires_at = self.expires_at(&record);
                Ok((record, expires_at))
            }
            Ok(_) => Err(Gone::Removed),
            Err(cleanup::Rejected::Expired) => Err(Gone::Expired),
            Err(_) => Err(Gone::Removed),
        }
    }

    /// The session's records, oldest first (ties by job id).
    pub fn jobs(&mut self) -> Vec<JobRecord> {
        let Some(session) = self.session() else {
            return Vec::new();
        };
        let mut records = Vec::new();
        for id in self.job_ids() {
            records.extend(self.load_owned(&id, &session));
        }
        JobRecord::sort(&mut records, false);
        records
    }

    /// Superset's own `last_async_event_id` (its frontend's cursor of the async_event stream),
    /// as that frontend reads it: the text itself, not JSON.
    pub fn superset_cursor(&self) -> Option<String> {
        self.storage.get_text(SUPERSET_LAST_EVENT_KEY)
    }

    /// Writes Superset's `last_async_event_id` as its frontend does; a refusal changes nothing
    /// (the cursor stays in the follower's memory).
    pub fn set_superset_cursor(&mut self, id: &str) {
        self.storage.put_text(SUPERSET_LAST_EVENT_KEY, id);
    }

    /// The ids of the session's records of `contract` that have not ended: what a poll of that
    /// contract's stream may still change (`follow` polls only while there is one). Without a
    /// session, none.
    pub fn running(&mut self, contract: super::response::Contract) -> Vec<String> {
        let Some(session) = self.session() else {
            return Vec::new();
        };
        let task = contract == super::response::Contract::Task;
        let mut ids = self.job_ids();
        ids.retain(|id| {
            self.load_owned(id, &session)
                .is_some_and(|r| r.is_task() == task && !r.is_terminal())
        });
        ids
    }
}
