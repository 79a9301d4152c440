//! The store's writes: the session marker and records, each kept beside its text for the next
//! read; a full storage makes room or keeps the value in memory.

use serde::Serialize;

use super::super::clock::Clock;
use super::super::error::GuardError;
use super::super::fallback::is_quota;
use super::super::model::{json_len, JobRecord};
use super::super::session::Session;
use super::super::storage::{from_json, to_json, KeyValue};
use super::JobStore;

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    pub(super) fn write_session(&mut self, session: &Session) -> Result<(), GuardError> {
        let key = self.keys.session.clone();
        self.put(&key, session, Some(session));
        // The next read finds this text unless another tab wrote meanwhile (as `Parsed`).
        self.session_read = to_json(session).ok().map(|text| (text, session.clone()));
        debug_assert!(self
            .session_read
            .as_ref()
            .is_none_or(|(text, s)| from_json::<Session>(text).ok().as_ref() == Some(s)));
        Ok(())
    }

    /// Writes a record ([`put`](Self::put)) and keeps it beside its text, so that the next
    /// read of `key` that finds that text parses nothing ([`Parsed::remember`](super::parsed::Parsed::remember)). (Not a record
    /// whose errors hold a float: [`JobRecord::reads_back_exactly`].)
    pub(super) fn put_record(&mut self, key: &str, record: &JobRecord, session: &Session) {
        self.put(key, record, Some(session));
        if !record.reads_back_exactly() {
            return;
        }
        if let Ok(text) = to_json(record) {
            // `Parsed::remember`'s promise, checked wherever the store is tested.
            debug_assert_eq!(from_json::<JobRecord>(&text).ok().as_ref(), Some(record));
            self.records.remember(key, text, record.clone());
        }
    }

    /// Writes `value`. If the storage is full, evicts this session's terminal records, oldest
    /// first, until the value would fit, and tries once more; if it still refuses, the value is
    /// kept in this tab's memory.
    pub(super) fn put<T: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
        session: Option<&Session>,
    ) {
        let Err(e) = self.storage.try_set(key, value) else {
            return;
        };
        if is_quota(&e) {
            if let Some(session) = session {
                if self.make_room(key.len() + json_len(value), key, session) > 0
                    && self.storage.try_set(key, value).is_ok()
                {
                    return;
                }
            }
        }
        self.storage.keep_in_memory(key, value);
        self.stats.kept_in_memory += 1;
    }
}
