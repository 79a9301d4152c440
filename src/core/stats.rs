//! What the store had to clean up or work around, by reason: `guard.stats()`.

use serde::Serialize;

/// Stored values removed, by why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Removed {
    /// Not JSON, wrong types, missing fields.
    pub unreadable: u32,
    /// Over the size limit of one record.
    pub oversized: u32,
    /// A job id that is a JS prototype name (`__proto__`, `constructor`, `prototype`).
    pub reserved_id: u32,
    /// The record inside names another job than its key.
    pub key_mismatch: u32,
    /// Older than `ttlSeconds`.
    pub expired: u32,
    /// Owned by another user or channel than the session marker's.
    pub foreign_owner: u32,
    /// A session marker that could not be read.
    pub invalid_session: u32,
    /// Terminal records evicted to make room when storage was full.
    pub evicted_for_space: u32,
    /// Records evicted to stay within `maxJobs`.
    pub evicted_over_limit: u32,
}

/// What the guard removed from storage, by reason, and what it kept in memory (`guard.stats()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "GuardStats")
)]
pub struct StoreStats {
    pub removed: Removed,
    /// Writes the storage refused that were kept in this tab's memory instead.
    pub kept_in_memory: u32,
    /// Updates skipped because their status is one this guard does not know (a status a later
    /// Superset adds): events, task status messages, `status_changes` entries.
    pub unknown_statuses: u32,
    /// Events of the event stream `follow()` passed over: not job metadata, or nested too
    /// deeply (the stream goes on after them).
    pub skipped_events: u32,
    /// Pages of an event stream `follow()` could read only in part: longer than the page limit
    /// (2 Mi characters), broken after some events, or not readable at all (the task stream
    /// then starts again from a fresh cursor).
    pub partial_pages: u32,
}
