//! Tasks of the task framework in the store: recording the tasks a `202` body started, applying
//! status changes, and this tab's own part of a task that several tabs watch.
//!
//! One browser's tabs share the records (localStorage), but each tab subscribes to a task with
//! its own `tab_id`: a record keeps every tab id that recorded it, and each tab remembers, in
//! its own memory, the tab id it recorded a task with. A tab's cancel carries that tab id (so
//! Superset detaches only that tab). A reloaded tab has lost that memory: it uses the app's
//! `tabId` option if the record lists it. A tab with neither carries none, and Superset
//! cancels the task for the user. A task this tab left
//! (`left`) reads as absent in this tab until it records it again.

use super::super::clock::Clock;
use super::super::error::GuardError;
use super::super::ids::TabId;
use super::super::model::{JobRecord, RecordKind, MAX_TAB_IDS};
use super::super::storage::KeyValue;
use super::super::task::{StatusChange, Submission};
use super::JobStore;

/// Most tasks a tab remembers having left (the oldest are forgotten first).
const MAX_LEFT: usize = 1024;

/// What this tab alone knows about shared task records.
#[derive(Debug, Default)]
pub(super) struct TabMemory {
    /// The tab id this tab recorded each task with.
    own: Vec<(String, TabId)>,
    /// Tasks this tab left, hidden from it.
    left: Vec<String>,
}

impl TabMemory {
    pub(super) fn has_left(&self, task_id: &str) -> bool {
        self.left.iter().any(|t| t == task_id)
    }

    fn own_tab(&self, task_id: &str) -> Option<&TabId> {
        self.own
            .iter()
            .find(|(t, _)| t == task_id)
            .map(|(_, tab)| tab)
    }

    fn recorded(&mut self, task_id: &str, tab_id: Option<&TabId>) {
        self.left.retain(|t| t != task_id);
        self.own.retain(|(t, _)| t != task_id);
        if let Some(tab) = tab_id {
            self.own.push((task_id.to_owned(), tab.clone()));
        }
    }

    /// This tab left the task: forgets its tab id (returned) and hides the task.
    pub(super) fn leave(&mut self, task_id: &str) -> Option<TabId> {
        let own = self.own_tab(task_id).cloned();
        self.own.retain(|(t, _)| t != task_id);
        if !self.has_left(task_id) {
            if self.left.len() >= MAX_LEFT {
                self.left.remove(0);
            }
            self.left.push(task_id.to_owned());
        }
        own
    }
}

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    /// Records the tasks a `202` body started, owned by the signed-in session (the body names
    /// no user), with the body's `tab_id`. A task already recorded keeps its status and
    /// creation time and gains the tab id; a finished one stays finished.
    pub fn record_tasks(&mut self, submission: Submission) -> Result<Vec<JobRecord>, GuardError> {
        let session = self.session().ok_or(GuardError::NoSession)?;
        let now = self.clock.now_ms();
        let tab = submission.tab_id;
        let mut records = Vec::with_capacity(submission.task_ids.len());
        for task_id in submission.task_ids {
            if self.purged_from_another(&task_id, &session) {
                return Err(GuardError::NotJobOwner {
                    job_id: task_id.into(),
                });
            }
            let mut record = match self.load(&task_id) {
                Ok(r) if r.is_task() && session.owns_record(&r) => r,
                // Another user's or guest's record of it, still here: its session ended in
                // another tab whose purge has not reached this one yet. Purged, as it will be.
                Ok(r) if r.user_id != session.user_id || r.guest_key != session.guest_key => {
                    self.remember_purged(std::slice::from_ref(&r));
                    return Err(GuardError::NotJobOwner {
                        job_id: task_id.into(),
                    });
                }
                _ => JobRecord::task(task_id, session.user_id.clone(), None, now),
            };
            record.guest_key = session.guest_key.clone();
            if let (Some(tab), RecordKind::Task { tab_ids, .. }) = (&tab, &mut record.kind) {
                if !tab_ids.contains(tab) {
                    if tab_ids.len() >= MAX_TAB_IDS {
                        tab_ids.remove(0);
                    }
                    tab_ids.push(tab.clone());
                }
            }
            record.check_fits()?;
            records.push(record);
        }
        for record in &records {
            self.tabs.recorded(&record.job_id, tab.as_ref());
            let key = self.keys.job(&record.job_id);
            self.put_record(&key, record, &session);
            self.evict_over_limit(&record.job_id);
        }
        Ok(records)
    }

    /// Applies status changes (from the websocket or `status_changes`) to the session's task
    /// records; returns the records that changed. Other tasks are ignored; a finished task
    /// keeps its final status; a status this guard does not know is skipped and counted.
    pub fn apply_task_statuses(&mut self, changes: Vec<StatusChange>) -> Vec<JobRecord> {
        let Some(session) = self.session() else {
            return Vec::new();
        };
        let mut changed = Vec::new();
        for change in changes {
            let Some(status) = change.status else {
                self.skipped_unknown_status();
                continue;
            };
            let Some(mut record) = self.load_owned(&change.task_id, &session) else {
                continue;
            };
            if !record.set_task_status(status) {
                continue;
            }
            record.updated_at = self.clock.now_ms();
            let key = self.keys.job(&record.job_id);
            self.put_record(&key, &record, &session);
            changed.push(record);
        }
        changed
    }

    /// Keeps why the session's failed task `task_id` failed (Superset's
    /// `semantic_result_error`, read back): the record if it changed.
    pub fn keep_task_error(&mut self, task_id: &str, reason: &str) -> Option<JobRecord> {
        let session = self.session()?;
        let mut record = self.load_owned(task_id, &session)?;
        if !record.set_task_error(reason) {
            return None;
        }
        record.updated_at = self.clock.now_ms();
        if record.trim_to_fit().is_err() {
            return None;
        }
        let key = self.keys.job(&record.job_id);
        self.put_record(&key, &record, &session);
        Some(record)
    }

    /// The tab id this tab's cancel of `task_id` carries: the one it recorded the task with, or
    /// else the app's `tabId` option when the record lists it (a reloaded tab).
    pub fn cancel_tab(&mut self, task_id: &str) -> Option<TabId> {
        let id = self.record_id(task_id);
        let task_id: &str = &id;
        if let Some(own) = self.tabs.own_tab(task_id) {
            return Some(own.clone());
        }
        let mine = self.tab_id.clone()?;
        let session = self.session()?;
        let record = self.load_owned(task_id, &session)?;
        record.tab_ids().contains(&mine).then_some(mine)
    }
}
