//! The cancel decision: may this session ask the server to cancel this job?
//!
//! Superset answers a cancel for a job of another user or another channel with
//! `403 Not authorized to cancel this job`. The guard decides the same question locally, from
//! the record the job's creator left, so such a request is never sent.

use serde::{Serialize, Serializer};

use super::ids::quote;
use super::names::names;

use super::model::JobRecord;
use super::session::Session;

names! {
    /// Why `checkCancel` refuses a cancel before any request is sent.
    pub enum CancelRefusal ("not a refusal reason") as "CancelRefusalReason" {
        /// Nobody is signed in.
        NoSession = "no_session",
        /// No record of the job: it was not started in this session here, or it expired.
        UnknownJob = "unknown_job",
        /// A record exists but belongs to another user or another channel.
        NotJobOwner = "not_job_owner",
        /// The job already reached `done`, `error` or `cancelled`.
        AlreadyFinished = "already_finished",
    }
}

names! {
    /// Why a cancel's outcome is `refused`: the guard's own check (`no_session`,
    /// `unknown_job`, `already_finished`), options it cannot take (`invalid_input`: nothing is
    /// sent), or the server's for a task that is running and cannot be aborted (a 422, with
    /// the task's status read back: `not_abortable`). Absent when the server refused for
    /// another reason.
    pub enum RefusalReason ("not a refusal reason") {
        NoSession = "no_session",
        UnknownJob = "unknown_job",
        AlreadyFinished = "already_finished",
        InvalidInput = "invalid_input",
        NotAbortable = "not_abortable",
    }
}

impl CancelRefusal {
    /// The reason a cancel's outcome gives for this refusal: none for `not_job_owner`, whose
    /// outcome says it all.
    pub fn outcome_reason(self) -> Option<RefusalReason> {
        match self {
            CancelRefusal::NoSession => Some(RefusalReason::NoSession),
            CancelRefusal::UnknownJob => Some(RefusalReason::UnknownJob),
            CancelRefusal::NotJobOwner => None,
            CancelRefusal::AlreadyFinished => Some(RefusalReason::AlreadyFinished),
        }
    }
}

/// The answer of `checkCancel`.
#[derive(Clone, Debug, PartialEq)]
pub enum CancelCheck {
    Allowed(JobRecord),
    Refused {
        reason: CancelRefusal,
        message: String,
    },
}

impl CancelCheck {
    pub fn is_allowed(&self) -> bool {
        matches!(self, CancelCheck::Allowed(_))
    }

    pub fn refusal(&self) -> Option<CancelRefusal> {
        match self {
            CancelCheck::Allowed(_) => None,
            CancelCheck::Refused { reason, .. } => Some(*reason),
        }
    }
}

impl Serialize for CancelCheck {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CancelCheck::Allowed(job) => CheckWire::Allowed { allowed: true, job },
            CancelCheck::Refused { reason, message } => CheckWire::Refused {
                allowed: false,
                reason: *reason,
                message,
            },
        }
        .serialize(serializer)
    }
}

/// The answer of `checkCancel`: narrow on `allowed`.
#[derive(Serialize)]
#[serde(untagged)]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "CancelCheck")
)]
pub enum CheckWire<'a> {
    Allowed {
        #[cfg_attr(target_arch = "wasm32", tsify(type = "true"))]
        allowed: bool,
        job: &'a JobRecord,
    },
    Refused {
        #[cfg_attr(target_arch = "wasm32", tsify(type = "false"))]
        allowed: bool,
        #[cfg_attr(target_arch = "wasm32", tsify(type = "CancelRefusalReason"))]
        reason: CancelRefusal,
        message: &'a str,
    },
}

/// Decides a cancel for `job_id` given the current session and the job's stored record, if any.
pub fn decide(session: Option<&Session>, record: Option<JobRecord>, job_id: &str) -> CancelCheck {
    let refuse = |reason, message: String| CancelCheck::Refused { reason, message };
    let Some(session) = session else {
        return refuse(
            CancelRefusal::NoSession,
            "No session: sign in before cancelling jobs".to_owned(),
        );
    };
    let Some(record) = record else {
        return refuse(
            CancelRefusal::UnknownJob,
            format!(
                "Unknown job {}: it was not started in this session, or its record expired",
                quote(job_id)
            ),
        );
    };
    if !session.owns_record(&record) {
        return refuse(
            CancelRefusal::NotJobOwner,
            format!(
                "Not job owner: job {} was started by another user or in another session, so it cannot be cancelled here",
                quote(job_id)
            ),
        );
    }
    if record.is_terminal() {
        return refuse(
            CancelRefusal::AlreadyFinished,
            format!(
                "Job {} has already finished ({})",
                quote(job_id),
                record.status().as_str()
            ),
        );
    }
    CancelCheck::Allowed(record)
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::core::names::assert_names;

    #[test]
    fn named_as_their_typescript_declarations() {
        assert_names!(CancelRefusal);
        assert_names!(RefusalReason);
    }
    use crate::core::model::{JobStatus, RecordKind};

    fn record(user: Option<&str>, channel: &str, status: JobStatus) -> JobRecord {
        JobRecord {
            job_id: "job-1".into(),
            user_id: user.map(Into::into),
            created_at: 1,
            updated_at: 1,
            guest_key: None,
            kind: RecordKind::Job {
                channel_id: channel.into(),
                status,
                details: Default::default(),
            },
        }
    }

    fn session(user: Option<&str>, channel: &str) -> Session {
        Session {
            user_id: user.map(Into::into),
            channel_id: Some(channel.into()),
            guest_key: None,
        }
    }

    #[test]
    fn refuses_without_session() {
        let check = decide(
            None,
            Some(record(Some("1"), "c", JobStatus::Pending)),
            "job-1",
        );
        assert_eq!(check.refusal(), Some(CancelRefusal::NoSession));
    }

    #[test]
    fn refuses_unknown_jobs() {
        let s = session(Some("1"), "c");
        let check = decide(Some(&s), None, "job-9");
        assert_eq!(check.refusal(), Some(CancelRefusal::UnknownJob));
        // A megabyte of id is quoted, not echoed.
        let CancelCheck::Refused { message, .. } = decide(Some(&s), None, &"x".repeat(1 << 20))
        else {
            panic!("refused")
        };
        assert!(message.len() < 200, "{} bytes", message.len());
    }

    #[test]
    fn refuses_other_users_and_other_channels_as_not_job_owner() {
        let s = session(Some("1"), "c");
        for rec in [
            record(Some("2"), "c", JobStatus::Pending),
            record(Some("1"), "old-channel", JobStatus::Running),
            record(None, "c", JobStatus::Pending),
        ] {
            let check = decide(Some(&s), Some(rec), "job-1");
            assert!(!check.is_allowed());
            assert_eq!(check.refusal(), Some(CancelRefusal::NotJobOwner));
            let CancelCheck::Refused { message, .. } = check else {
                panic!("refused")
            };
            assert!(message.starts_with("Not job owner"), "{message}");
        }
    }

    #[test]
    fn refuses_finished_jobs_but_ownership_comes_first() {
        let s = session(Some("1"), "c");
        for status in [JobStatus::Done, JobStatus::Error, JobStatus::Cancelled] {
            let check = decide(Some(&s), Some(record(Some("1"), "c", status)), "job-1");
            assert_eq!(check.refusal(), Some(CancelRefusal::AlreadyFinished));
            let check = decide(Some(&s), Some(record(Some("2"), "c", status)), "job-1");
            assert_eq!(check.refusal(), Some(CancelRefusal::NotJobOwner));
        }
    }

    #[test]
    fn allows_own_running_jobs() {
        let s = session(Some("1"), "c");
        for status in [JobStatus::Pending, JobStatus::Running] {
            let rec = record(Some("1"), "c", status);
            let check = decide(Some(&s), Some(rec.clone()), "job-1");
            assert!(check.is_allowed());
            assert_eq!(check, CancelCheck::Allowed(rec));
        }
    }

    #[test]
    fn serialises_as_a_discriminated_union() {
        let s = session(Some("1"), "c");
        let allowed = decide(
            Some(&s),
            Some(record(Some("1"), "c", JobStatus::Pending)),
            "job-1",
        );
        let v: serde_json::Value = serde_json::to_value(&allowed).unwrap();
        assert_eq!(v["allowed"], true);
        assert_eq!(v["job"]["job_id"], "job-1");
        let refused = decide(Some(&s), None, "job-1");
        let v: serde_json::Value = serde_json::to_value(&refused).unwrap();
        assert_eq!(v["allowed"], false);
        assert_eq!(v["reason"], "unknown_job");
        assert!(v["message"].as_str().unwrap().contains("job-1"));
    }
}
