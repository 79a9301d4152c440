//! Which jobs the browser's other tabs await (`waitFor`), readable at once when a page ends:
//! `pagehide` is synchronous, so what it needs must already be in storage.
//!
//! Each guard that waits keeps one entry, `<namespace>:v1:waits:<token>` =
//! `{"jobs": [record ids], "queries": [those only its queries await], "stops": [[stop URL,
//! client_id]], "until": ms}` (the last two left out when empty), written when what it awaits or
//! has in flight changes and refreshed every [`WAIT_REFRESH_MS`] while it waits; it removes the entry when nothing waits, and at its
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

/// One guard's entry as stored.
#[derive(Debug, Serialize, Deserialize)]
struct WaitEntry {
    jobs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    queries: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    stops: Vec<(String, String)>,
    until: u64,
}

/// What a guard's entry says: the jobs its waiters await, those of them only its `query()`s
/// await (a logout cancels them), and its queries' synchronous requests in flight, each as its
/// stop URL and `client_id` (a logout stops them). A logout in another tab reads every entry
/// before it removes them, and stops and cancels all of it while the session still is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Awaited {
    pub jobs: Vec<String>,
    pub queries: Vec<String>,
    pub stops: Vec<(String, String)>,
}

impl Awaited {
    fn is_empty(&self) -> bool {
        self.jobs.is_empty() && self.stops.is_empty()
    }

    /// The jobs a plain waiter awaits (not only queries): `queries` lists none of them.
    pub fn plain(&self) -> Vec<String> {
        self.jobs
            .iter()
            .filter(|j| !self.queries.contains(j))
            .cloned()
            .collect()
    }

    /// Adds `other`'s, each once.
    fn merge(&mut self, other: Awaited) {
        for job in other.jobs {
            if !self.jobs.contains(&job) {
                self.jobs.push(job);
            }
        }
        for job in other.queries {
            if !self.queries.contains(&job) {
                self.queries.push(job);
            }
        }
        for stop in other.stops {
            if !self.stops.contains(&stop) {
                self.stops.push(stop);
            }
        }
    }
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
        let awaited = Awaited {
            jobs: jobs.to_vec(),
            ..Awaited::default()
        };
        self.keep_entry(token, &awaited);
    }

    /// Writes the entry of the guard `token` (nothing awaited and nothing in flight removes it).
    pub fn keep_entry(&mut self, token: &str, awaited: &Awaited) {
        if !self.shares_storage() || !is_wait_token(token) {
            return;
        }
        let key = self.keys.waits(token);
        if awaited.is_empty() {
            self.storage.remove(&key);
            return;
        }
        let entry = WaitEntry {
            jobs: awaited.jobs.iter().take(MAX_ENTRY_JOBS).cloned().collect(),
            queries: awaited
                .queries
                .iter()
                .take(MAX_ENTRY_JOBS)
                .cloned()
                .collect(),
            stops: awaited.stops.iter().take(MAX_ENTRY_JOBS).cloned().collect(),
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
        self.elsewhere(page).jobs
    }

    /// What the entries of other pages than `page` say, merged: the jobs their waiters await,
    /// the jobs only their queries await (a job a plain waiter of any page awaits is not
    /// among them), their queries' requests in flight. Entries no longer believed (or
    /// unreadable) are removed.
    pub fn elsewhere(&mut self, page: &str) -> Awaited {
        let mut all = Awaited::default();
        if !self.shares_storage() {
            return all;
        }
        let now = self.clock.now_ms();
        let mine = self.keys.waits(&[page, "-"].concat());
        let mut plain: Vec<String> = Vec::new();
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
                    plain.extend(
                        entry
                            .jobs
                            .iter()
                            .filter(|j| !entry.queries.contains(j))
                            .cloned(),
                    );
                    all.merge(Awaited {
                        jobs: entry.jobs,
                        queries: entry.queries,
                        stops: entry.stops,
                    });
                }
                _ => self.storage.remove(&key),
            }
        }
        all.queries.retain(|j| !plain.contains(j));
        all
    }

    /// Whether the guard `token`'s entry is still in storage (a logout in another tab removes
    /// it after stopping what it listed).
    pub fn has_entry(&self, token: &str) -> bool {
        self.shares_storage() && self.storage.get_text(&self.keys.waits(token)).is_some()
    }

    /// Whether `key` is one of the tabs' wait entries: a change to one changes no record and
    /// no session.
    pub fn is_wait_key(&self, key: &str) -> bool {
        key.starts_with(&self.keys.waits_prefix)
    }
}
