//! Which jobs the browser's other tabs await (`waitFor`), readable at once when a page ends:
//! `pagehide` is synchronous, so what it needs must already be in storage.
//!
//! Each guard that waits keeps one entry, `<namespace>:v1:waits:<token>` =
//! `{"jobs": [record ids], "until": ms}`, written when what it awaits changes and refreshed
//! every [`WAIT_REFRESH_MS`] while it waits; it removes the entry when nothing waits, and at its
//! page's end. A logout removes every entry with the rest of the namespace: every wait of the
//! session ends with it. An entry is believed until its `until` ([`WAIT_ENTRY_TTL_MS`] after it was
//! written): a tab that crashed leaves an entry that outlives it by at most that long, and
//! whoever reads it after that removes it. The TTL is longer than the one-minute timer
//! alignment a browser applies to a hidden tab, so a tab in the background keeps its entry
//! fresh. A guard whose storage is its own memory keeps no entry (no other tab can read it).

use serde::{Deserialize, Serialize};

use super::super::clock::Clock;
use super::super::fallback::StorageMode;
use super::super::storage::{from_json, KeyValue};
use super::JobStore;

/// How long an entry is believed after it was written.
pub const WAIT_ENTRY_TTL_MS: u64 = 120_000;
/// How often a waiting guard writes its entry again.
pub const WAIT_REFRESH_MS: u64 = 30_000;
/// The most jobs an entry lists.
const MAX_ENTRY_JOBS: usize = 1000;

/// One guard's entry.
#[derive(Debug, Serialize, Deserialize)]
struct WaitEntry {
    jobs: Vec<String>,
    until: u64,
}

/// Whether `token` may name an entry: 1 to 64 of `[A-Za-z0-9_-]`.
pub fn is_wait_token(token: &str) -> bool {
    super::super::ids::is_tab_id(token)
}

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    fn shares_storage(&self) -> bool {
        self.storage.status().kind != StorageMode::Memory
    }

    /// Writes the entry of the guard `token`: `jobs` it awaits (none removes the entry).
    pub fn keep_waits(&mut self, token: &str, jobs: &[String]) {
        if !self.shares_storage() || !is_wait_token(token) {
            return;
        }
        let key = self.keys.waits(token);
        if jobs.is_empty() {
            self.storage.remove(&key);
            return;
        }
        let entry = WaitEntry {
            jobs: jobs.iter().take(MAX_ENTRY_JOBS).cloned().collect(),
            until: self.clock.now_ms().saturating_add(WAIT_ENTRY_TTL_MS),
        };
        // Refused (storage full): other tabs do not learn of these waits; nothing else depends
        // on it.
        let _ = self.storage.try_set(&key, &entry);
    }

    /// The jobs the entries of other pages than `page` list (an entry's token is
    /// `<page>-<guard>`), from entries still believed; entries no longer believed (or
    /// unreadable) are removed.
    pub fn awaited_elsewhere(&mut self, page: &str) -> Vec<String> {
        if !self.shares_storage() {
            return Vec::new();
        }
        let now = self.clock.now_ms();
        let mine = self.keys.waits(&[page, "-"].concat());
        let mut jobs: Vec<String> = Vec::new();
        for key in self.storage.keys() {
            if key.starts_with(&mine) || !key.starts_with(&self.keys.waits_prefix) {
                continue;
            }
            let entry = self
                .storage
                .get_text(&key)
                .and_then(|text| from_json::<WaitEntry>(&text).ok());
            match entry {
                Some(entry) if entry.until > now => {
                    for job in entry.jobs {
                        if !jobs.contains(&job) {
                            jobs.push(job);
                        }
                    }
                }
                _ => self.storage.remove(&key),
            }
        }
        jobs
    }

    /// Whether `key` is one of the tabs' wait entries: a change to one changes no record and
    /// no session.
    pub fn is_wait_key(&self, key: &str) -> bool {
        key.starts_with(&self.keys.waits_prefix)
    }
}
