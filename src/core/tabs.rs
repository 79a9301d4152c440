//! The tabs' protocol: what a change is, what another tab's message and a `storage` event
//! mean to a guard, as pure rules (the shell only reads the message or event and does what
//! these say).
//!
//! Records and the session live in `localStorage`, whose `storage` event reaches every other
//! tab of the origin; the guards also post a message on a `BroadcastChannel`
//! (`superset-job-guard:<namespace>`) when they sign out, sign in as someone else, sign the
//! same session in again, or meet a 401, which reaches tabs whose storage is their own memory.
//! Page code can post any message on that channel: a guard whose storage is the origin's
//! believes storage, not a message, for a logout or a sign-in.

use super::names::names;
use super::session::Session;

names! {
    /// What changed: a sign-out, another user (or guest), the session's records, or
    /// (`follow()`) the server answering 401 to the session's poll (its login there has ended)
    /// or 403 (a role without the Task permission).
    pub enum Change ("not a change") as "GuardChangeType" {
        Logout = "logout",
        UserChanged = "user_changed",
        JobsChanged = "jobs_changed",
        Unauthorized = "unauthorized",
        Forbidden = "forbidden",
    }
}

names! {
    /// Where a change was made: `"local"`, by this guard; `"other_tab"`, by another tab (or
    /// another guard of this page).
    pub enum Source ("not a change source") as "GuardChangeSource" {
        /// By this guard (this tab).
        Local = "local",
        /// By another tab, or another guard of this page.
        OtherTab = "other_tab",
    }
}

/// The message type of a sign-in of the same session again (a `follow()` a 401 stopped in
/// another tab resumes).
pub const SIGNED_IN: &str = "signed_in";

/// A message on the tabs' channel: its `type`, and the user or guest it names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub kind: String,
    pub user: Option<String>,
    pub guest: Option<String>,
}

impl Message {
    /// The message a guard posts: `kind` (a [`Change`]'s name or [`SIGNED_IN`]) about
    /// `session`'s user or guest.
    pub fn about(kind: &str, session: Option<&Session>) -> Self {
        Self {
            kind: kind.to_owned(),
            user: session.and_then(|s| s.user_id.as_deref().map(str::to_owned)),
            guest: session.and_then(|s| s.guest_key.as_deref().map(str::to_owned)),
        }
    }

    /// Whether it names `session`'s user or guest.
    fn names(&self, session: &Session) -> bool {
        session.user_id.as_deref() == self.user.as_deref()
            && session.guest_key.as_deref() == self.guest.as_deref()
    }
}

/// What a guard makes of a message from another tab.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heard {
    /// A `follow()` that a 401 stopped here resumes: the same session signed in again
    /// elsewhere.
    pub resume_follow: bool,
    /// The change to hand to this guard's listeners (`other_tab`): a logout or another user
    /// (the session here ends), or a 401 met elsewhere (this guard's `follow()` stays stopped
    /// until the next login).
    pub change: Option<Change>,
}

/// What `message` means to a guard whose session is `session` and whose storage is the
/// origin's (`shared`) or its own memory. A guard with shared storage hears a logout or a
/// sign-in from storage (its `storage` event), never from a message; one without hears them
/// here, for its own session. A 401 counts for the session it names.
pub fn hear(message: &Message, session: Option<&Session>, shared: bool) -> Heard {
    let ours = session.is_some_and(|s| message.names(s));
    if message.kind == SIGNED_IN {
        return Heard {
            resume_follow: ours,
            change: None,
        };
    }
    let Some(change) = Change::from_name(&message.kind) else {
        return Heard::default();
    };
    // Another tab's first login as the same user resumes a stopped follow too.
    let resume_follow = change == Change::UserChanged && ours;
    let change = match change {
        Change::Unauthorized | Change::Forbidden if ours => Some(change),
        _ if shared || session.is_none() => None,
        Change::Logout => Some(Change::Logout),
        Change::UserChanged if !ours => Some(Change::UserChanged),
        _ => None,
    };
    Heard {
        resume_follow,
        change,
    }
}

/// A `storage` event on one of the guard's keys, or a `clear()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageChange<'a> {
    /// `localStorage.clear()` in another tab.
    Cleared,
    /// A record was written or removed.
    Record,
    /// The session marker, as its old and new texts.
    Session {
        old: Option<&'a str>,
        new: Option<&'a str>,
    },
}

/// What a `storage` event means to a guard whose session (read after the event) is
/// `session`.
pub fn storage_change(event: StorageChange, session: Option<&Session>) -> Change {
    match event {
        StorageChange::Cleared if session.is_none() => Change::Logout,
        StorageChange::Cleared => Change::UserChanged,
        StorageChange::Record => Change::JobsChanged,
        StorageChange::Session { old, new } => {
            let read = |v: Option<&str>| v.and_then(Session::from_stored);
            match (read(old), read(new)) {
                (_, None) => Change::Logout,
                (Some(old), Some(new)) if old.same_identity(&new) => Change::JobsChanged,
                _ => Change::UserChanged,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::names::assert_names;
    use crate::core::quiet::Json;
    use serde_json::json;

    fn session(v: serde_json::Value) -> Session {
        Session::from_login(Json(&v)).unwrap()
    }

    fn message(kind: &str, user: Option<&str>) -> Message {
        Message {
            kind: kind.to_owned(),
            user: user.map(str::to_owned),
            guest: None,
        }
    }

    #[test]
    fn changes_and_sources_are_named_as_their_typescript_declarations() {
        assert_names!(Change);
        assert_names!(Source);
    }

    #[test]
    fn a_guard_with_shared_storage_believes_storage_not_messages() {
        let alice = session(json!({"userId": 1}));
        for kind in ["logout", "user_changed"] {
            for user in [Some("1"), Some("2"), None] {
                assert_eq!(
                    hear(&message(kind, user), Some(&alice), true).change,
                    None,
                    "{kind} {user:?}"
                );
            }
        }
        // A 401 is never in storage: it counts for the session it names.
        assert_eq!(
            hear(&message("unauthorized", Some("1")), Some(&alice), true).change,
            Some(Change::Unauthorized)
        );
        assert_eq!(
            hear(&message("unauthorized", Some("2")), Some(&alice), true).change,
            None
        );
        assert_eq!(
            hear(&message("forbidden", Some("1")), Some(&alice), true).change,
            Some(Change::Forbidden)
        );
        assert_eq!(
            hear(&message("forbidden", Some("2")), Some(&alice), true).change,
            None
        );
    }

    #[test]
    fn a_memory_only_guard_hears_logouts_and_other_users() {
        let alice = session(json!({"userId": 1}));
        let heard =
            |kind: &str, user: Option<&str>| hear(&message(kind, user), Some(&alice), false);
        assert_eq!(heard("logout", Some("2")).change, Some(Change::Logout));
        assert_eq!(
            heard("user_changed", Some("2")).change,
            Some(Change::UserChanged)
        );
        assert_eq!(
            heard("user_changed", Some("1")).change,
            None,
            "the same user"
        );
        assert_eq!(heard("jobs_changed", Some("1")).change, None);
        assert_eq!(heard("nonsense", Some("1")), Heard::default());
        // Without a session there is nothing to end.
        assert_eq!(
            hear(&message("logout", None), None, false),
            Heard::default()
        );
    }

    #[test]
    fn the_same_session_signing_in_elsewhere_resumes_a_stopped_follow() {
        let alice = session(json!({"userId": 1}));
        for shared in [true, false] {
            let signed_in = hear(&message(SIGNED_IN, Some("1")), Some(&alice), shared);
            assert_eq!(
                signed_in,
                Heard {
                    resume_follow: true,
                    change: None
                }
            );
            assert!(!hear(&message(SIGNED_IN, Some("2")), Some(&alice), shared).resume_follow);
            // Another tab's first login as the same user (a `user_changed` naming this session).
            assert!(hear(&message("user_changed", Some("1")), Some(&alice), shared).resume_follow);
            assert!(!hear(&message("logout", Some("1")), Some(&alice), shared).resume_follow);
        }
        let guest = session(json!({"userId": null, "guestKey": "g-1"}));
        let named = Message {
            kind: SIGNED_IN.to_owned(),
            user: None,
            guest: Some("g-1".to_owned()),
        };
        assert!(hear(&named, Some(&guest), true).resume_follow);
        assert_eq!(Message::about(SIGNED_IN, Some(&guest)), named);
    }

    #[test]
    fn storage_events_say_what_changed() {
        let alice = r#"{"user_id":"1","channel_id":"c"}"#;
        let alice_again = r#"{"user_id":"1","channel_id":"d"}"#;
        let bob = r#"{"user_id":"2","channel_id":"d"}"#;
        let now = session(json!({"userId": 1}));
        let session_change = |old, new| storage_change(StorageChange::Session { old, new }, None);
        assert_eq!(session_change(Some(alice), None), Change::Logout);
        assert_eq!(session_change(Some(alice), Some(bob)), Change::UserChanged);
        assert_eq!(session_change(None, Some(bob)), Change::UserChanged);
        assert_eq!(
            session_change(Some(alice), Some(alice_again)),
            Change::JobsChanged
        );
        assert_eq!(
            session_change(Some(alice), Some("not json")),
            Change::Logout,
            "an unreadable marker is no session"
        );
        assert_eq!(
            storage_change(StorageChange::Record, None),
            Change::JobsChanged
        );
        assert_eq!(storage_change(StorageChange::Cleared, None), Change::Logout);
        assert_eq!(
            storage_change(StorageChange::Cleared, Some(&now)),
            Change::UserChanged
        );
    }
}
