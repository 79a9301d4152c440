//! The strings that decide identity, as types: [`JobId`], [`TaskId`], [`UserId`],
//! [`ChannelId`], [`TabId`], [`GuestKey`]. Each is validated once, where it enters (from JS,
//! storage or the network: `TryFrom<String>`, which serde uses too), so code that holds one
//! holds a checked one. Also the whole numbers JS hands over (user ids, timestamps).

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Longest job id or channel id accepted. Superset's are 36-character UUIDs and
/// `guest-` + a hex HMAC; this only keeps absurd values out of storage keys.
pub const MAX_ID_LEN: usize = 256;

/// Largest integer a JS number holds exactly (2^53 - 1).
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// Names that mean something on every JS object; never a job id.
pub const RESERVED_IDS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// An id (job, channel or user): a non-empty string of at most [`MAX_ID_LEN`] characters with
/// no control characters, no U+FFFD and not `.` or `..`.
///
/// - U+FFFD is what a JS string with a lone surrogate becomes when it is copied into Rust, so
///   `"\uD800"` and `"\uDC00"` would both name a job recorded as `"\uFFFD"`. No id that a lossy
///   copy can produce is accepted, so no two JS strings can name one record.
/// - A job id fills one segment of the cancel URL, and `encodeURIComponent` keeps dots: `.` and
///   `..` would be dot segments that the URL parser removes, sending the cancel elsewhere.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id.chars().count() <= MAX_ID_LEN
        && !id
            .chars()
            .any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER)
}

/// At most a short prefix of `text`, for messages that quote what they refuse.
pub fn quote(text: &str) -> String {
    const MAX: usize = 64;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or_default()),
        None => text.to_owned(),
    }
}

/// A task id of Superset's task framework, canonical: a UUID written as 36 characters,
/// `8-4-4-4-12` hex digits, lowercase (as Superset writes it; an uppercase one is lowered).
pub fn canonical_uuid(id: &str) -> Option<String> {
    let groups = [8, 4, 4, 4, 12];
    let parts: Vec<&str> = id.split('-').collect();
    let ok = parts.len() == groups.len()
        && parts
            .iter()
            .zip(groups)
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()));
    ok.then(|| id.to_ascii_lowercase())
}

/// A `tab_id` as Superset's cancel endpoint takes it: `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_tab_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub fn is_reserved_id(id: &str) -> bool {
    RESERVED_IDS.contains(&id)
}

/// Why a string is not an id of its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdError {
    /// Not of the kind's form.
    Invalid,
    /// A job id that is a name every JS object has ([`RESERVED_IDS`]).
    Reserved,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdError::Invalid => "not a valid id",
            IdError::Reserved => "a reserved name",
        })
    }
}

/// Declares an id type: a `String` that passed `$check` (`fn(&str) -> Result<(), IdError>`),
/// read from a string (`TryFrom<String>`, and so serde), written as that string.
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $check:expr) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify), tsify(type = "string"))]
        pub struct $name(String);

        impl $name {
            const CHECK: fn(&str) -> Result<(), IdError> = $check;
        }

        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(id: String) -> Result<Self, IdError> {
                (Self::CHECK)(&id).map(|()| Self(id))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                read_id(deserializer, Self::CHECK).map(Self)
            }
        }

        /// For this crate's unit tests: a literal that is an id (panics otherwise).
        #[cfg(test)]
        impl From<&str> for $name {
            #[allow(clippy::expect_used)]
            fn from(id: &str) -> Self {
                Self::try_from(id.to_owned()).expect("an id of its kind")
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// Reads a string that `check` accepts (one reader for every id type, per deserializer).
fn read_id<'de, D: Deserializer<'de>>(
    deserializer: D,
    check: fn(&str) -> Result<(), IdError>,
) -> Result<String, D::Error> {
    let id = String::deserialize(deserializer)?;
    check(&id).map_err(de::Error::custom)?;
    Ok(id)
}

fn valid(id: &str) -> Result<(), IdError> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(IdError::Invalid)
    }
}

id_type!(
    /// An async_event job's id (Superset's `job_id`): a valid id (`is_valid_id`) that is not a
    /// reserved name. A task's uuid is one too: records of both kinds are keyed by it.
    JobId,
    |id| {
        valid(id)?;
        if is_reserved_id(id) {
            Err(IdError::Reserved)
        } else {
            Ok(())
        }
    }
);

id_type!(
    /// A task's id: a canonical uuid (36 characters, `8-4-4-4-12` lowercase hex digits).
    /// `TaskId::parse` takes an upper-case one and lowers it.
    TaskId,
    |id| {
        if canonical_uuid(id).as_deref() == Some(id) {
            Ok(())
        } else {
            Err(IdError::Invalid)
        }
    }
);

id_type!(
    /// A user id: a valid id (`is_valid_id`). Superset's integer ids are their decimal
    /// strings (`MaybeUser` reads both).
    UserId,
    valid
);

id_type!(
    /// An async channel id (Superset's `channel_id`): a valid id.
    ChannelId,
    valid
);

id_type!(
    /// A tab's id as Superset's cancel endpoint takes it: `^[A-Za-z0-9_-]{1,64}$`.
    TabId,
    |id| if is_tab_id(id) { Ok(()) } else { Err(IdError::Invalid) }
);

id_type!(
    /// The key an app derives from a guest token (guests only): a valid id.
    GuestKey,
    valid
);

impl TaskId {
    /// A task id in any case, lowered to the canonical form.
    pub fn parse(id: &str) -> Option<TaskId> {
        canonical_uuid(id).map(TaskId)
    }
}

impl From<TaskId> for JobId {
    /// A uuid is a valid, unreserved job id: records of tasks are keyed by it.
    fn from(id: TaskId) -> JobId {
        JobId(id.0)
    }
}

/// A user id as Superset sends it: a string stays as it is, an integer becomes its decimal
/// string (the registry stores ints, the API sends strings), `null` means a guest or anonymous
/// user. Serialised as the string or `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct MaybeUser(pub Option<UserId>);

impl<'de> Deserialize<'de> for MaybeUser {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UserIdVisitor)
    }
}

struct UserIdVisitor;

const UNSAFE_USER: &str =
    "must be a whole number from -(2^53 - 1) to 2^53 - 1 when it is a number (a JS number \
     holds no larger one exactly)";

impl<'de> Visitor<'de> for UserIdVisitor {
    type Value = MaybeUser;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, a whole number, or null")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<MaybeUser, E> {
        if is_valid_id(v) {
            Ok(MaybeUser(Some(UserId(v.to_owned()))))
        } else {
            Err(E::custom(
                "must be a non-empty string without control characters, a whole number, or null",
            ))
        }
    }

    /// A whole number JS holds exactly (at most 2^53 - 1 either side of 0): a larger one came
    /// from a JS number already rounded, so it names no user for sure.
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<MaybeUser, E> {
        if v > MAX_SAFE_INTEGER {
            return Err(E::custom(UNSAFE_USER));
        }
        Ok(MaybeUser(Some(UserId(v.to_string()))))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<MaybeUser, E> {
        if v.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(E::custom(UNSAFE_USER));
        }
        Ok(MaybeUser(Some(UserId(v.to_string()))))
    }

    /// JS numbers may arrive as `7.0` or `7e0`, which are the user 7: a whole number a JS
    /// number holds exactly.
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<MaybeUser, E> {
        match exact_whole(v.abs()) {
            // -0.0 is the user 0.
            Some(n) if v.is_sign_negative() && n > 0 => {
                Ok(MaybeUser(Some(UserId(format!("-{n}")))))
            }
            Some(n) => Ok(MaybeUser(Some(UserId(n.to_string())))),
            None => Err(E::custom("must be a whole number when it is a number")),
        }
    }

    /// `null` (and JS's `undefined`): every deserializer the guard reads with hands these to
    /// `deserialize_any` as a unit, never as an option.
    fn visit_unit<E: de::Error>(self) -> Result<MaybeUser, E> {
        Ok(MaybeUser(None))
    }
}

/// `v` as a whole number if it is one a JS number holds exactly (0 to 2^53 - 1): user ids
/// and timestamps that JS wrote as `7.0` or `1.7e12`.
pub fn exact_whole(v: f64) -> Option<u64> {
    (v >= 0.0 && v.fract() == 0.0 && v <= MAX_SAFE_INTEGER as f64).then_some(v as u64)
}

#[cfg(test)]
mod tests;
