//! The core's error types: one for the storage domain, one for the guard's operations.
//!
//! Both are plain values. The browser shell converts a [`GuardError`] into a JS `Error` once, at
//! the boundary (`web/error.rs`), carrying [`GuardError::code`] as its `code`.

use std::fmt;

/// What kind of storage failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageErrorKind {
    /// There is no storage to use (no `window`, `localStorage` is null, or access is forbidden).
    Unavailable,
    /// A write was refused because the storage is full (`QuotaExceededError`).
    QuotaExceeded,
    /// A value is there, but it is not what was asked for (not JSON, or the wrong shape).
    Unreadable,
    /// Anything else the storage reported.
    Other,
}

/// A failure reported by a [`KeyValue`](super::storage::KeyValue) backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageError {
    pub kind: StorageErrorKind,
    pub message: String,
}

impl StorageError {
    pub fn new(kind: StorageErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl StorageError {
    /// A stored value that is not JSON of the shape asked for. (serde_json's own message, with
    /// its line and column, would reach no one: an unreadable record or marker is removed and
    /// counted in `stats()`.)
    pub fn not_json() -> Self {
        Self::new(
            StorageErrorKind::Unreadable,
            "not JSON of the expected shape",
        )
    }

    /// What happened, for people: `storage full: QuotaExceededError: ...` (`Display` says the
    /// same).
    pub fn describe(&self) -> String {
        let what = match self.kind {
            StorageErrorKind::Unavailable => "storage unavailable",
            StorageErrorKind::QuotaExceeded => "storage full",
            StorageErrorKind::Unreadable => "unreadable value",
            StorageErrorKind::Other => "storage failed",
        };
        format!("{what}: {}", self.message)
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl std::error::Error for StorageError {}

/// Why a guard operation refused to do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardError {
    /// The constructor's options are not valid; the message says which one and why.
    InvalidOptions(String),
    /// The session given to `login` is not valid.
    InvalidSession(String),
    /// Job metadata or an event failed validation.
    InvalidJob(String),
    /// The operation needs a signed-in session and there is none.
    NoSession,
    /// The metadata belongs to another user than the session's.
    NotJobOwner { job_id: String },
    /// A value could not be converted at the JS boundary. Not expected; reported, not hidden.
    Internal(String),
    /// A call on a guard after its `free()`.
    Freed,
}

impl GuardError {
    /// The stable, machine-readable code the JS `Error` carries as `code`.
    pub fn code(&self) -> &'static str {
        match self {
            GuardError::InvalidOptions(_) => "invalid_options",
            GuardError::InvalidSession(_) => "invalid_session",
            GuardError::InvalidJob(_) => "invalid_job",
            GuardError::NoSession => "no_session",
            GuardError::NotJobOwner { .. } => "not_job_owner",
            GuardError::Internal(_) => "internal",
            GuardError::Freed => "freed",
        }
    }
}

impl GuardError {
    /// The message the JS `Error` carries (`Display` says the same).
    pub fn message(&self) -> String {
        match self {
            GuardError::InvalidOptions(m) => format!("Invalid options: {m}"),
            GuardError::InvalidSession(m) => format!("Invalid session: {m}"),
            GuardError::InvalidJob(m) => format!("Invalid job: {m}"),
            GuardError::NoSession => "No session: call login() before recording jobs".to_owned(),
            GuardError::NotJobOwner { job_id } => {
                format!("Not job owner: job {job_id} belongs to another user than this session's")
            }
            GuardError::Internal(m) => format!("Internal error: {m}"),
            GuardError::Freed => {
                "Freed: this guard's free() was called; create a new JobGuard".to_owned()
            }
        }
    }
}

impl fmt::Display for GuardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for GuardError {}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn codes_are_the_documented_strings() {
        let cases = [
            (GuardError::InvalidOptions("x".into()), "invalid_options"),
            (GuardError::InvalidSession("x".into()), "invalid_session"),
            (GuardError::InvalidJob("x".into()), "invalid_job"),
            (GuardError::NoSession, "no_session"),
            (
                GuardError::NotJobOwner { job_id: "j".into() },
                "not_job_owner",
            ),
            (GuardError::Internal("x".into()), "internal"),
            (GuardError::Freed, "freed"),
        ];
        for (err, code) in cases {
            assert_eq!(err.code(), code);
        }
    }

    #[test]
    fn not_job_owner_message_starts_as_documented() {
        let err = GuardError::NotJobOwner {
            job_id: "abc".into(),
        };
        assert!(err.to_string().starts_with("Not job owner"));
        assert!(err.to_string().contains("abc"));
    }
}
