//! Who the page is signed in as, and which job records that session owns.
//!
//! Superset identifies the caller of a cancel by the `async-token` cookie's channel and the
//! login session's user; the record it checks was written with the `channel_id` and `user_id`
//! of the job's creator. The guard mirrors that check before any request leaves the page.

use super::text::cat;
use alloc::borrow::ToOwned;
use alloc::string::String;

use super::error::GuardError;
use super::json::{self, ObjectWriter, ToJson, Value};
use super::model::{is_valid_id, JobRecord, MAX_ID_LEN};

/// Largest integer a JS number holds exactly (2^53 - 1).
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// Normalises a user id as Superset sends it: a string stays as it is, an integer becomes its
/// decimal string (the registry stores ints, the API sends strings), `null` means a guest or
/// anonymous user. Anything else is an error message.
pub fn normalize_user_id(value: &Value) -> Result<Option<String>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if is_valid_id(s) => Ok(Some(s.clone())),
        Value::String(_) => {
            Err("must be a non-empty string without control characters, a whole number, or null")
        }
        Value::Number(n) => {
            // An integer as written (within 64 bits), or a whole number a JS number holds
            // exactly: JS numbers may arrive as `7.0` or `7e0`, which are the user 7.
            let whole = n
                .exact_magnitude(0)
                .filter(|m| *m <= MAX_SAFE_INTEGER || n.is_integer_text())
                .filter(|m| !n.is_negative() || *m <= 1 << 63)
                .ok_or("must be a whole number when it is a number")?;
            let digits = json::u64_text(whole);
            Ok(Some(if n.is_negative() {
                cat(&["-", &digits])
            } else {
                digits
            }))
        }
        _ => Err("must be a string, a whole number, or null"),
    }
}

/// The signed-in session: a user (`None` for guests and anonymous users) and, once known, the
/// async channel the server minted for it. Stored as the session marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub user_id: Option<String>,
    pub channel_id: Option<String>,
}

impl Session {
    /// Reads what the app passes to `login`: `{ userId, channelId? }`.
    pub fn from_login(value: &Value) -> Result<Self, GuardError> {
        let obj = value.as_object().ok_or_else(|| {
            invalid("expected an object { userId, channelId? } (userId null for guests)")
        })?;
        if let Some(key) = obj.unknown_key(&["userId", "channelId"]) {
            return Err(invalid(&cat(&[
                "unknown field `",
                key,
                "` (expected userId and optionally channelId)",
            ])));
        }
        let user_id = match obj.get("userId") {
            None => return Err(invalid("`userId` is required (null for guests)")),
            Some(v) => normalize_user_id(v).map_err(|m| invalid(&cat(&["`userId` ", m])))?,
        };
        let channel_id = match obj.get("channelId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if is_valid_id(s) => Some(s.clone()),
            Some(_) => {
                return Err(invalid(&cat(&[
                    "`channelId` must be null or a non-empty string of at most ",
                    &json::u64_text(MAX_ID_LEN as u64),
                    " characters",
                ])))
            }
        };
        Ok(Self {
            user_id,
            channel_id,
        })
    }

    /// Reads the stored session marker; anything malformed is `None`.
    pub fn from_stored(text: &str) -> Option<Self> {
        let value = json::parse(text)?;
        let obj = value.as_object()?;
        let user_id = normalize_user_id(obj.get("user_id")?).ok()?;
        let channel_id = match obj.get("channel_id")? {
            Value::Null => None,
            Value::String(s) if is_valid_id(s) => Some(s.clone()),
            _ => return None,
        };
        Some(Self {
            user_id,
            channel_id,
        })
    }

    /// The JSON text kept as the session marker.
    pub fn to_stored(&self) -> String {
        self.to_json()
    }

    /// Whether a job created by `user_id` on `channel_id` is this session's: the same user and,
    /// once the session knows its channel, the same channel.
    pub fn owns(&self, user_id: &Option<String>, channel_id: &str) -> bool {
        &self.user_id == user_id
            && self
                .channel_id
                .as_deref()
                .is_none_or(|mine| mine == channel_id)
    }

    pub fn owns_record(&self, record: &JobRecord) -> bool {
        self.owns(&record.user_id, &record.channel_id)
    }
}

impl ToJson for Session {
    fn write_json(&self, out: &mut String) {
        ObjectWriter::new(out)
            .field("user_id", &self.user_id)
            .field("channel_id", &self.channel_id)
            .end();
    }
}

fn invalid(message: &str) -> GuardError {
    GuardError::InvalidSession(message.to_owned())
}

#[cfg(test)]
mod tests {
    use crate::test_prelude::*;

    use super::*;
    use crate::core::json::testing::json;

    fn session(user: Option<&str>, channel: Option<&str>) -> Session {
        Session {
            user_id: user.map(str::to_owned),
            channel_id: channel.map(str::to_owned),
        }
    }

    #[test]
    fn user_ids_compare_as_strings() {
        assert_eq!(normalize_user_id(&json!(1)), Ok(Some("1".into())));
        assert_eq!(normalize_user_id(&json!("1")), Ok(Some("1".into())));
        assert_eq!(normalize_user_id(&json!(7.0)), Ok(Some("7".into())));
        assert_eq!(normalize_user_id(&json!(-3)), Ok(Some("-3".into())));
        assert_eq!(normalize_user_id(&Value::Null), Ok(None));
        assert!(normalize_user_id(&json!(1.5)).is_err());
        assert!(normalize_user_id(&json!(1e300)).is_err());
        assert!(normalize_user_id(&json!("")).is_err());
        assert!(normalize_user_id(&json!(true)).is_err());
        assert!(normalize_user_id(&json!({"id": 1})).is_err());
    }

    #[test]
    fn login_reads_user_and_optional_channel() {
        assert_eq!(
            Session::from_login(&json!({"userId": 7})).unwrap(),
            session(Some("7"), None)
        );
        assert_eq!(
            Session::from_login(&json!({"userId": null, "channelId": "guest-ab"})).unwrap(),
            session(None, Some("guest-ab"))
        );
        assert_eq!(
            Session::from_login(&json!({"userId": "1", "channelId": null})).unwrap(),
            session(Some("1"), None)
        );
    }

    #[test]
    fn login_rejects_bad_sessions() {
        for v in [
            json!(null),
            json!("1"),
            json!({}),
            json!({"userId": 1.25}),
            json!({"userId": "1", "channelId": 3}),
            json!({"userId": "1", "channelId": ""}),
            json!({"userId": "1", "channelid": "c"}),
        ] {
            let err = Session::from_login(&v).unwrap_err();
            assert_eq!(err.code(), "invalid_session", "{v}");
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
        for text in [
            "",
            "[]",
            "{}",
            r#"{"user_id":"1"}"#,
            r#"{"user_id":false,"channel_id":null}"#,
            r#"{"user_id":"1","channel_id":5}"#,
        ] {
            assert_eq!(Session::from_stored(text), None, "{text}");
        }
    }
}
