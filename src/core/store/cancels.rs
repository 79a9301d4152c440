//! The store's side of a cancel: whether the session may cancel a job (from storage alone),
//! and what the server's answer does to the record.

use super::super::cancel::{decide, CancelCheck, CancelRefusal};
use super::super::clock::Clock;
use super::super::ids::is_valid_id;
use super::super::model::RecordKind;
use super::super::response::Outcome;
use super::super::statuses::TaskStatus;
use super::super::storage::KeyValue;
use super::JobStore;

impl<S: KeyValue, C: Clock> JobStore<S, C> {
    /// May the session cancel `job_id` (a task's uuid in any case)? Decided from storage
    /// alone; nothing is sent. A record of another owner answers `not_job_owner`, then is
    /// removed.
    pub fn check_cancel(&mut self, job_id: &str) -> CancelCheck {
        let id = self.record_id(job_id);
        let job_id = id.as_ref();
        let session = self.session();
        let record = match &session {
            Some(_) if is_valid_id(job_id) && !self.tabs.has_left(job_id) => self.load(job_id).ok(),
            _ => None,
        };
        let check = decide(session.as_ref(), record, job_id);
        if let (Some(session), Some(CancelRefusal::NotJobOwner)) = (&session, check.refusal()) {
            self.remove_foreign(job_id, session);
        }
        check
    }

    /// Applies the server's answer to a cancel to the session's record of the job: `cancelled`
    /// marks it cancelled (a task `aborted`); `not_job_owner` (the server says it is not ours)
    /// and `not_found` remove it; `left` takes this tab off the task (the record goes when no
    /// tab of this browser watches it any more). A task's `status`, read back after a 422, is
    /// the record's new status (`already_finished`, or `refused` for a task that runs on and
    /// cannot be aborted); `already_finished` without one removes the record. Other outcomes,
    /// such as `unsupported`, change nothing: the job runs on and its events still apply.
    pub fn settle_cancel(
        &mut self,
        job_id: &str,
        outcome: Outcome,
        action: Option<&str>,
        status: Option<TaskStatus>,
    ) {
        let Some(session) = self.session() else {
            return;
        };
        let Some(mut record) = self.load_owned(job_id, &session) else {
            return;
        };
        let key = self.keys.job(job_id);
        if let Some(status) = status {
            if record.set_task_status(status) {
                record.updated_at = self.clock.now_ms();
                self.put_record(&key, &record, &session);
            }
            return;
        }
        match outcome {
            Outcome::Cancelled if !record.is_terminal() => {
                record.cancel();
                record.updated_at = self.clock.now_ms();
                if record.trim_to_fit().is_ok() {
                    self.put_record(&key, &record, &session);
                }
            }
            Outcome::Left => {
                let own = self.tabs.leave(job_id).or_else(|| self.tab_id.clone());
                if let (Some("detached"), RecordKind::Task { tab_ids, .. }) =
                    (action, &mut record.kind)
                {
                    tab_ids.retain(|t| Some(t) != own.as_ref());
                }
                if action == Some("detached") && !record.tab_ids().is_empty() {
                    record.updated_at = self.clock.now_ms();
                    self.put_record(&key, &record, &session);
                } else {
                    self.storage.remove(&key);
                }
            }
            Outcome::NotJobOwner | Outcome::NotFound | Outcome::AlreadyFinished => {
                self.storage.remove(&key)
            }
            _ => {}
        }
    }
}
