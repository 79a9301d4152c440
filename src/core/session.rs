//! Who the page is signed in as, and which job records that session owns.
//!
//! Superset identifies the caller of a cancel by the `async-token` cookie's channel and the
//! login session's user; the record it checks was written with the `channel_id` and `user_id`
//! of the job's creator. The guard mirrors that check before any request leaves the page.

use serde::{Deserialize, Deserializer, Serialize};

use super::error::GuardError;
use super::ids::{quote, ChannelId, GuestKey, MaybeUser, UserId, MAX_ID_LEN};
use super::model::JobRecord;
use super::wire::{self, Field};

/// The signed-in session: a user (`None` for guests and anonymous users), for a guest the key
/// the app derived from its guest token, and, once known, the async channel the server minted
/// for it. Stored as the session marker, `{"user_id": ..., "channel_id": ...}` (with
/// `"guest_key"` for a guest who has one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "MarkerWire")]
pub struct Session {
    pub user_id: Option<UserId>,
    pub channel_id: Option<ChannelId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_key: Option<GuestKey>,
}

/// The stored marker as read: `user_id` and `channel_id` must be there (`null` allowed).
#[derive(Deserialize)]
struct MarkerWire {
    user_id: MaybeUser,
    // Required, though it may be null (serde would read a missing `Option` as `None`).
    #[serde(deserialize_with = "Option::deserialize")]
    channel_id: Option<ChannelId>,
    #[serde(default)]
    guest_key: Option<GuestKey>,
}

impl TryFrom<MarkerWire> for Session {
    type Error = String;

    fn try_from(w: MarkerWire) -> Result<Self, String> {
        Session::new(w.user_id, w.channel_id, w.guest_key)
    }
}

/// What the app passes to `login`: `{ userId, channelId?, guestKey? }`, no other key.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct LoginWire {
    user_id: Field<MaybeUser>,
    channel_id: Field<Option<ChannelId>>,
    guest_key: Field<Option<GuestKey>>,
}

fn channel_rule() -> String {
    format!("`channelId` must be null or a non-empty string of at most {MAX_ID_LEN} characters")
}

fn guest_key_rule() -> String {
    format!(
        "`guestKey` must be null or a non-empty string of at most {MAX_ID_LEN} characters \
         without control characters, and only for a guest (userId null)"
    )
}

impl Session {
    fn new(
        user_id: MaybeUser,
        channel_id: Option<ChannelId>,
        guest_key: Option<GuestKey>,
    ) -> Result<Self, String> {
        if guest_key.is_some() && user_id.0.is_some() {
            return Err(guest_key_rule());
        }
        Ok(Self {
            user_id: user_id.0,
            channel_id,
            guest_key,
        })
    }

    /// Whether `other` is the same person: the same user, or the same guest.
    pub fn same_identity(&self, other: &Session) -> bool {
        self.user_id == other.user_id && self.guest_key == other.guest_key
    }

    /// Reads what the app passes to `login`, once: `{ userId, channelId?, guestKey? }`.
    pub fn from_login<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        let invalid = GuardError::InvalidSession;
        let w: LoginWire = wire::read(
            value,
            "expected an object { userId, channelId? } (userId null for guests)",
        )
        .map_err(|m| match wire::unknown_field(&m) {
            Some((key, _)) => invalid(format!(
                "unknown field `{}` (expected userId and optionally channelId, guestKey)",
                quote(&key)
            )),
            None => invalid(m),
        })?;
        let user_id = match w.user_id {
            Field::Valid(user) => user,
            Field::Missing => return Err(invalid("`userId` is required (null for guests)".into())),
            Field::Invalid => {
                return Err(invalid(
                    "`userId` must be a non-empty string without control characters, a whole \
                     number, or null (null for guests)"
                        .into(),
                ))
            }
        };
        let channel_id = w
            .channel_id
            .nullable()
            .map_err(|_| invalid(channel_rule()))?;
        let guest_key = w
            .guest_key
            .nullable()
            .map_err(|_| invalid(guest_key_rule()))?;
        Self::new(user_id, channel_id, guest_key).map_err(invalid)
    }

    /// Reads a stored session marker's text; anything malformed is `None`.
    pub fn from_stored(text: &str) -> Option<Self> {
        super::quiet::from_json(text).ok()
    }

    /// The session marker's text (what gloo-storage writes for it; for the tests).
    #[cfg(any(test, feature = "test-doubles"))]
    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether an event of a job created by `user_id` on `channel_id` is for this session: the
    /// same user and, once the session knows its channel, the same channel.
    pub fn owns(&self, user_id: &Option<UserId>, channel_id: &str) -> bool {
        &self.user_id == user_id
            && self
                .channel_id
                .as_deref()
                .is_none_or(|mine| mine == channel_id)
    }

    /// Whether a record is this session's: the same user (or the same guest) and, for a job of
    /// a channel, the session's channel once known. A task has no channel: it is the user's.
    pub fn owns_record(&self, record: &JobRecord) -> bool {
        self.guest_key == record.guest_key
            && match record.channel_id() {
                Some(channel) => self.owns(&record.user_id, channel),
                None => self.user_id == record.user_id,
            }
    }
}

/// The stored session, shared by the origin's tabs (`guard.session`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify), tsify(missing_as_null))]
pub struct SessionInfo<'a> {
    pub user_id: &'a Option<UserId>,
    pub channel_id: &'a Option<ChannelId>,
    pub guest_key: &'a Option<GuestKey>,
}

impl Session {
    pub fn info(&self) -> SessionInfo<'_> {
        SessionInfo {
            user_id: &self.user_id,
            channel_id: &self.channel_id,
            guest_key: &self.guest_key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn session(user: Option<&str>, channel: Option<&str>) -> Session {
        Session {
            user_id: user.map(Into::into),
            channel_id: channel.map(Into::into),
            guest_key: None,
        }
    }

    #[test]
    fn guests_sign_in_with_a_guest_key_that_decides_ownership() {
        let a = login(&json!({"userId": null, "guestKey": "g-1"})).unwrap();
        assert_eq!(a.guest_key.as_deref(), Some("g-1"));
        assert!(!a.same_identity(&login(&json!({"userId": null, "guestKey": "g-2"})).unwrap()));
        assert!(!a.same_identity(&session(None, None)));
        assert!(a.same_identity(
            &login(&json!({"userId": null, "guestKey": "g-1", "channelId": "c"})).unwrap()
        ));
        for bad in [
            json!({"userId": 1, "guestKey": "g"}),
            json!({"userId": null, "guestKey": ""}),
            json!({"userId": null, "guestKey": 5}),
            json!({"userId": null, "guestKey": "a\u{0}b"}),
        ] {
            let err = login(&bad).unwrap_err();
            assert_eq!(err.code(), "invalid_session", "{bad}");
            assert!(err.to_string().contains("guestKey"), "{bad}: {err}");
        }
        // The marker keeps the key; a user's marker is written as before.
        let text = a.to_stored();
        assert_eq!(
            text,
            r#"{"user_id":null,"channel_id":null,"guest_key":"g-1"}"#
        );
        assert_eq!(Session::from_stored(&text), Some(a.clone()));
        assert_eq!(
            session(Some("1"), Some("c")).to_stored(),
            r#"{"user_id":"1","channel_id":"c"}"#
        );
        assert_eq!(
            Session::from_stored(r#"{"user_id":"1","channel_id":null,"guest_key":"g"}"#),
            None
        );
        // A guest's records are that guest's: another guest key, or none, owns none of them.
        let mut rec = JobRecord::task("10a0bd9a-03c8-4737-9345-f4234ba86512".into(), None, None, 1);
        rec.guest_key = Some("g-1".into());
        assert!(a.owns_record(&rec));
        let other = login(&json!({"userId": null, "guestKey": "g-2"})).unwrap();
        assert!(!other.owns_record(&rec));
        assert!(!session(None, None).owns_record(&rec));
    }

    fn login(v: &Value) -> Result<Session, GuardError> {
        Session::from_login(v)
    }

    #[test]
    fn login_reads_user_and_optional_channel() {
        assert_eq!(
            login(&json!({"userId": 7})).unwrap(),
            session(Some("7"), None)
        );
        assert_eq!(
            login(&json!({"userId": null, "channelId": "guest-ab"})).unwrap(),
            session(None, Some("guest-ab"))
        );
        assert_eq!(
            login(&json!({"userId": "1", "channelId": null})).unwrap(),
            session(Some("1"), None)
        );
    }

    #[test]
    fn login_rejects_bad_sessions() {
        for (v, field) in [
            (json!(null), "object"),
            (json!("1"), "object"),
            (json!({}), "userId"),
            (json!({"userId": 1.25}), "userId"),
            (json!({"userId": "1", "channelId": 3}), "channelId"),
            (json!({"userId": "1", "channelId": ""}), "channelId"),
            (json!({"userId": "1", "channelid": "c"}), "channelid"),
        ] {
            let err = login(&v).unwrap_err();
            assert_eq!(err.code(), "invalid_session", "{v}");
            assert!(err.to_string().contains(field), "{v}: {err}");
        }
    }

    #[test]
    fn ownership_needs_user_and_known_channel() {
        let s = session(Some("1"), Some("chan-a"));
        assert!(s.owns(&Some("1".into()), "chan-a"));
        assert!(!s.owns(&Some("1".into()), "chan-b"), "old channel");
        assert!(!s.owns(&Some("2".into()), "chan-a"), "other user");
        assert!(!s.owns(&None, "chan-a"), "guest job");
        let no_channel = session(Some("1"), None);
        assert!(no_channel.owns(&Some("1".into()), "anything"));
        assert!(!no_channel.owns(&Some("2".into()), "anything"));
        let guest = session(None, Some("guest-1"));
        assert!(guest.owns(&None, "guest-1"));
        assert!(!guest.owns(&None, "guest-2"), "another guest token");
        assert!(!guest.owns(&Some("1".into()), "guest-1"));
    }

    #[test]
    fn session_marker_round_trips_and_rejects_garbage() {
        for s in [
            session(Some("1"), Some("c")),
            session(None, Some("guest-x")),
            session(Some("2"), None),
        ] {
            let text = s.to_stored();
            assert_eq!(Session::from_stored(&text), Some(s));
        }
        assert_eq!(
            session(Some("1"), None).to_stored(),
            r#"{"user_id":"1","channel_id":null}"#,
            "the v1 marker"
        );
        for text in [
            "",
            "[]",
            "{}",
            r#"{"user_id":"1"}"#,
            r#"{"user_id":false,"channel_id":null}"#,
            r#"{"user_id":"1","channel_id":5}"#,
            r#"{"user_id":"1","channel_id":""}"#,
        ] {
            assert_eq!(Session::from_stored(text), None, "{text}");
        }
    }
}
