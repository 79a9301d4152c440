//! The storage keys: `<namespace>:v1:session` for the session marker,
//! `<namespace>:v1:job:<job_id>` for each record, and `<namespace>:v1:waits:<token>` (what a
//! waiting guard awaits). Everything under `<namespace>:` is the
//! guard's, whatever its schema version. (Joined with `concat`, not `format!`: the keys are
//! made on a guard's first calls, and `core::fmt` is code the page would compile for them.)

/// The one localStorage key Superset's own frontend keeps: the last event id it read. It is
/// the previous session's position in its channel's stream, so logout removes it too.
pub const SUPERSET_LAST_EVENT_KEY: &str = "last_async_event_id";

/// The session marker's key in `namespace`.
pub fn session_key(namespace: &str) -> String {
    [namespace, ":v1:session"].concat()
}

/// The storage keys of one namespace.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    /// `<namespace>:`: every key the guard owns, whatever its schema version.
    pub namespace: String,
    pub session: String,
    pub job_prefix: String,
    pub waits_prefix: String,
}

impl Keys {
    pub fn new(namespace: &str) -> Self {
        Self {
            namespace: [namespace, ":"].concat(),
            session: session_key(namespace),
            job_prefix: [namespace, ":v1:job:"].concat(),
            waits_prefix: [namespace, ":v1:waits:"].concat(),
        }
    }

    pub fn waits(&self, token: &str) -> String {
        [self.waits_prefix.as_str(), token].concat()
    }

    pub fn job(&self, job_id: &str) -> String {
        [self.job_prefix.as_str(), job_id].concat()
    }
}
