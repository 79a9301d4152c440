//! The guard's options and their validation:
//! `{ namespace?, ttlSeconds?, maxJobs?, storage?, cancelUrl?, headers?, retry?, fetch? }`.
//! (`fetch` is a function: the browser shell takes it; here it only counts as known.)

use super::text::{cat, has_byte, join};
use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use super::error::GuardError;
use super::json::{u64_text, Object, Value};
use super::model::{char_count, has_control};
use super::retry::RetryPolicy;

pub const DEFAULT_NAMESPACE: &str = "superset-job-guard";
/// Superset's `GLOBAL_ASYNC_QUERIES_JWT_EXPIRATION_SECONDS` default: after that the channel
/// cookie is re-minted and the job can no longer be cancelled by this session anyway.
pub const DEFAULT_TTL_SECONDS: u64 = 3600;
pub const DEFAULT_MAX_JOBS: usize = 200;
pub const MAX_NAMESPACE_LEN: usize = 64;
pub const MAX_TTL_SECONDS: u32 = 366 * 24 * 3600;
pub const MAX_MAX_JOBS: usize = 10_000;

pub const DEFAULT_CANCEL_URL: &str = "/api/v1/async_event/{job_id}/cancel";
pub const MAX_CANCEL_URL_LEN: usize = 2048;
pub const MAX_HEADERS: usize = 32;
pub const MAX_ATTEMPTS: u32 = 10;
pub const MAX_BASE_DELAY_MS: u64 = 60_000;
pub const MAX_MAX_DELAY_MS: u64 = 300_000;

const KNOWN: [&str; 8] = [
    "namespace",
    "ttlSeconds",
    "maxJobs",
    "storage",
    "cancelUrl",
    "headers",
    "retry",
    "fetch",
];
const KNOWN_RETRY: [&str; 3] = ["attempts", "baseDelayMs", "maxDelayMs"];

/// Where the records live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    /// `localStorage`: shared by the origin's tabs, survives reloads.
    Local,
    /// This guard's own memory: one page, gone on reload.
    Memory,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardOptions {
    pub namespace: String,
    pub ttl_ms: u64,
    pub max_jobs: usize,
    pub storage: StorageKind,
    /// The cancel endpoint; `{job_id}` is replaced by the URL-encoded job id.
    pub cancel_url: String,
    /// Extra request headers for the cancel call, e.g. `X-CSRFToken`.
    pub headers: Vec<(String, String)>,
    pub retry: RetryPolicy,
}

impl Default for GuardOptions {
    fn default() -> Self {
        Self {
            namespace: DEFAULT_NAMESPACE.to_owned(),
            ttl_ms: DEFAULT_TTL_SECONDS * 1000,
            max_jobs: DEFAULT_MAX_JOBS,
            storage: StorageKind::Local,
            cancel_url: DEFAULT_CANCEL_URL.to_owned(),
            headers: Vec::new(),
            retry: RetryPolicy::default(),
        }
    }
}

impl GuardOptions {
    /// Reads options from JSON; `null` (JS `undefined`) means all defaults. Unknown fields are
    /// refused, so a misspelt option fails loudly instead of silently keeping its default.
    pub fn from_json(value: &Value) -> Result<Self, GuardError> {
        let mut options = Self::default();
        let obj = match value {
            Value::Null => return Ok(options),
            Value::Object(obj) => obj,
            _ => return Err(invalid("expected an object or undefined".to_owned())),
        };
        refuse_unknown(obj, "", &KNOWN)?;
        if let Some(v) = present(obj, "namespace") {
            options.namespace = namespace(v)?;
        }
        if let Some(v) = present(obj, "ttlSeconds") {
            options.ttl_ms = ttl_ms(v)?;
        }
        if let Some(v) = present(obj, "maxJobs") {
            options.max_jobs = max_jobs(v)?;
        }
        if let Some(v) = present(obj, "storage") {
            options.storage = match v.as_str() {
                Some("local") => StorageKind::Local,
                Some("memory") => StorageKind::Memory,
                _ => {
                    return Err(invalid(
                        "`storage` must be \"local\" or \"memory\"".to_owned(),
                    ))
                }
            };
        }
        if let Some(v) = present(obj, "cancelUrl") {
            options.cancel_url = cancel_url(v)?;
        }
        if let Some(v) = present(obj, "headers") {
            options.headers = headers(v)?;
        }
        if let Some(v) = present(obj, "retry") {
            options.retry = retry(v)?;
        }
        Ok(options)
    }

    /// The cancel URL of one job: `{job_id}` replaced by the job id, encoded as
    /// `encodeURIComponent` would.
    pub fn cancel_url_for(&self, job_id: &str) -> String {
        let id = encode_uri_component(job_id);
        let mut url = String::with_capacity(self.cancel_url.len() + id.len());
        let mut rest = self.cancel_url.as_str();
        while let Some(at) = placeholder_at(rest) {
            url.push_str(rest.get(..at).unwrap_or_default());
            url.push_str(&id);
            rest = rest.get(at + PLACEHOLDER.len()..).unwrap_or_default();
        }
        url.push_str(rest);
        url
    }
}

const PLACEHOLDER: &str = "{job_id}";

/// Where `{job_id}` starts in `s`. (A byte search: `str::replace` would link the generic
/// substring searcher into the wasm module for this one use.)
fn placeholder_at(s: &str) -> Option<usize> {
    s.as_bytes()
        .windows(PLACEHOLDER.len())
        .position(|w| w == PLACEHOLDER.as_bytes())
}

/// `encodeURIComponent`: every byte but `A-Z a-z 0-9 - _ . ! ~ * ' ( )` percent-encoded.
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || has_byte(b"-_.!~*'()", b) {
            out.push(char::from(b));
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            for nibble in [b >> 4, b & 0xf] {
                out.push(char::from(
                    HEX.get(usize::from(nibble)).copied().unwrap_or(b'0'),
                ));
            }
        }
    }
    out
}

fn cancel_url(v: &Value) -> Result<String, GuardError> {
    match v.as_str() {
        Some(s)
            if placeholder_at(s).is_some() && s.len() <= MAX_CANCEL_URL_LEN && !has_control(s) =>
        {
            Ok(s.to_owned())
        }
        _ => Err(invalid(cat(&[
            "`cancelUrl` must be a URL of at most ",
            &u64_text(MAX_CANCEL_URL_LEN as u64),
            " characters containing {job_id}",
        ]))),
    }
}

fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || has_byte(b"!#$%&'*+-.^_`|~", b))
}

fn headers(v: &Value) -> Result<Vec<(String, String)>, GuardError> {
    let err = || {
        invalid(cat(&[
            "`headers` must be an object of at most ",
            &u64_text(MAX_HEADERS as u64),
            " header names to string values",
        ]))
    };
    let obj = v.as_object().ok_or_else(err)?;
    if obj.len() > MAX_HEADERS {
        return Err(err());
    }
    let mut out = Vec::with_capacity(obj.len());
    for (name, value) in obj.iter() {
        match value.as_str() {
            Some(value) if is_token(name) && !has_any_byte(value.as_bytes(), b"\r\n\0") => {
                out.push((name.to_owned(), value.to_owned()));
            }
            _ => {
                return Err(invalid(cat(&[
                    "`headers.",
                    name,
                    "` must be a valid header name with a string value",
                ])))
            }
        }
    }
    Ok(out)
}

/// Whether `bytes` holds any of `set`.
fn has_any_byte(bytes: &[u8], set: &[u8]) -> bool {
    bytes.iter().any(|b| has_byte(set, *b))
}

/// A whole number up to `max`: `Ok(None)` when absent or null, `Err(())` when invalid.
fn whole(v: Option<&Value>, max: u64) -> Result<Option<u64>, ()> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_number()
            .filter(|n| !n.is_negative())
            .and_then(|n| n.exact_magnitude(0))
            .filter(|n| *n <= max)
            .map(Some)
            .ok_or(()),
    }
}

fn retry(v: &Value) -> Result<RetryPolicy, GuardError> {
    let obj = v
        .as_object()
        .ok_or_else(|| invalid("`retry` must be an object".to_owned()))?;
    refuse_unknown(obj, "retry.", &KNOWN_RETRY)?;
    let mut policy = RetryPolicy::default();
    let attempts = whole(obj.get("attempts"), u64::from(MAX_ATTEMPTS))
        .ok()
        .and_then(|n| match n {
            None => Some(policy.attempts),
            Some(n) => u32::try_from(n).ok().filter(|n| *n >= 1),
        });
    policy.attempts =
        attempts.ok_or_else(|| whole_number_error("retry.attempts", 1, u64::from(MAX_ATTEMPTS)))?;
    let base = whole(obj.get("baseDelayMs"), MAX_BASE_DELAY_MS)
        .map_err(|()| whole_number_error("retry.baseDelayMs", 0, MAX_BASE_DELAY_MS))?;
    let max = whole(obj.get("maxDelayMs"), MAX_MAX_DELAY_MS)
        .map_err(|()| whole_number_error("retry.maxDelayMs", 0, MAX_MAX_DELAY_MS))?;
    policy.base_delay_ms = base.unwrap_or(policy.base_delay_ms);
    policy.max_delay_ms = max.unwrap_or(policy.max_delay_ms);
    Ok(policy)
}

/// Refuses a field not in `known` (a misspelt option fails loudly); `prefix` names the parent.
fn refuse_unknown(obj: &Object, prefix: &str, known: &[&str]) -> Result<(), GuardError> {
    match obj.unknown_key(known) {
        Some(key) => Err(invalid(cat(&[
            "unknown option `",
            prefix,
            key,
            "` (known: ",
            &join(known, ", "),
            ")",
        ]))),
        None => Ok(()),
    }
}

/// A field that is there and not `null`/`undefined`.
fn present<'a>(obj: &'a Object, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn namespace(v: &Value) -> Result<String, GuardError> {
    match v.as_str() {
        Some(s)
            if !s.is_empty()
                && char_count(s) <= MAX_NAMESPACE_LEN
                && !has_byte(s.as_bytes(), b':')
                && !has_control(s) =>
        {
            Ok(s.to_owned())
        }
        _ => Err(invalid(cat(&[
            "`namespace` must be a non-empty string of at most ",
            &u64_text(MAX_NAMESPACE_LEN as u64),
            " characters without ':'",
        ]))),
    }
}

/// Seconds (fractions allowed) as milliseconds, rounded; at least 1 ms.
fn ttl_ms(v: &Value) -> Result<u64, GuardError> {
    let max_ms = u64::from(MAX_TTL_SECONDS) * 1000;
    match v.as_number() {
        Some(n) if !n.is_negative() && !n.is_zero() => n
            .rounded_magnitude(3)
            .filter(|ms| *ms <= max_ms)
            .map(|ms| ms.max(1)),
        _ => None,
    }
    .ok_or_else(|| {
        invalid(cat(&[
            "`ttlSeconds` must be a number of seconds above 0 and at most ",
            &u64_text(u64::from(MAX_TTL_SECONDS)),
        ]))
    })
}

fn max_jobs(v: &Value) -> Result<usize, GuardError> {
    match whole(Some(v), MAX_MAX_JOBS as u64) {
        Ok(Some(n)) if n >= 1 => usize::try_from(n).ok(),
        _ => None,
    }
    .ok_or_else(|| whole_number_error("maxJobs", 1, MAX_MAX_JOBS as u64))
}

fn whole_number_error(option: &str, min: u64, max: u64) -> GuardError {
    invalid(cat(&[
        "`",
        option,
        "` must be a whole number from ",
        &u64_text(min),
        " to ",
        &u64_text(max),
    ]))
}

fn invalid(message: String) -> GuardError {
    GuardError::InvalidOptions(message)
}

#[cfg(test)]
mod tests {
    use crate::test_prelude::*;

    use super::*;
    use crate::core::json::testing::json;

    #[test]
    fn cancel_urls_encode_the_job_id() {
        let o = GuardOptions::default();
        assert_eq!(
            o.cancel_url_for("10a0bd9a-03c8-4737-9345-f4234ba86512"),
            "/api/v1/async_event/10a0bd9a-03c8-4737-9345-f4234ba86512/cancel"
        );
        assert_eq!(
            o.cancel_url_for("a/b?c=d#e f"),
            "/api/v1/async_event/a%2Fb%3Fc%3Dd%23e%20f/cancel"
        );
        assert_eq!(encode_uri_component("é!~*'()_.-"), "%C3%A9!~*'()_.-");
    }

    #[test]
    fn defaults() {
        let o = GuardOptions::from_json(&Value::Null).unwrap();
        assert_eq!(o, GuardOptions::default());
        assert_eq!(o.namespace, "superset-job-guard");
        assert_eq!(o.ttl_ms, 3_600_000);
        assert_eq!(o.max_jobs, 200);
        assert_eq!(o.storage, StorageKind::Local);
        assert_eq!(o.cancel_url, "/api/v1/async_event/{job_id}/cancel");
        assert!(o.headers.is_empty());
        assert_eq!(
            o.retry,
            RetryPolicy {
                attempts: 3,
                base_delay_ms: 200,
                max_delay_ms: 5000
            }
        );
        assert_eq!(GuardOptions::from_json(&json!({})).unwrap(), o);
        assert_eq!(
            GuardOptions::from_json(&json!({"namespace": null, "maxJobs": null})).unwrap(),
            o
        );
    }

    #[test]
    fn reads_every_option() {
        let o = GuardOptions::from_json(
            &json!({"namespace": "app", "ttlSeconds": 1.5, "maxJobs": 3, "storage": "memory"}),
        )
        .unwrap();
        assert_eq!(
            o,
            GuardOptions {
                namespace: "app".into(),
                ttl_ms: 1500,
                max_jobs: 3,
                storage: StorageKind::Memory,
                ..GuardOptions::default()
            }
        );
        let o = GuardOptions::from_json(&json!({
            "cancelUrl": "/superset/api/v1/async_event/{job_id}/cancel",
            "headers": {"X-CSRFToken": "tok", "X-GuestToken": "g"},
            "retry": {"attempts": 5, "baseDelayMs": 0, "maxDelayMs": 1000},
            "fetch": null
        }))
        .unwrap();
        assert_eq!(o.cancel_url, "/superset/api/v1/async_event/{job_id}/cancel");
        assert_eq!(
            o.headers,
            [
                ("X-CSRFToken".into(), "tok".into()),
                ("X-GuestToken".into(), "g".into())
            ]
        );
        assert_eq!(
            o.retry,
            RetryPolicy {
                attempts: 5,
                base_delay_ms: 0,
                max_delay_ms: 1000
            }
        );
        let partial = GuardOptions::from_json(&json!({"retry": {"attempts": 1}})).unwrap();
        assert_eq!(partial.retry.attempts, 1);
        assert_eq!(partial.retry.base_delay_ms, 200);
        assert_eq!(
            GuardOptions::from_json(&json!({"maxJobs": 5.0}))
                .unwrap()
                .max_jobs,
            5
        );
    }

    #[test]
    fn rejects_bad_options_naming_the_option() {
        let cases = [
            (json!("x"), "object"),
            (json!({"ttlSecond": 5}), "ttlSecond"),
            (json!({"namespace": ""}), "namespace"),
            (json!({"namespace": "a:b"}), "namespace"),
            (json!({"namespace": 5}), "namespace"),
            (json!({"ttlSeconds": 0}), "ttlSeconds"),
            (json!({"ttlSeconds": -1}), "ttlSeconds"),
            (json!({"ttlSeconds": "60"}), "ttlSeconds"),
            (json!({"ttlSeconds": 1e12}), "ttlSeconds"),
            (json!({"maxJobs": 0}), "maxJobs"),
            (json!({"maxJobs": 2.5}), "maxJobs"),
            (json!({"maxJobs": 1_000_000}), "maxJobs"),
            (json!({"storage": "session"}), "storage"),
            (
                json!({"cancelUrl": "/api/v1/async_event/cancel"}),
                "cancelUrl",
            ),
            (json!({"cancelUrl": 5}), "cancelUrl"),
            (json!({"headers": "X-CSRFToken: t"}), "headers"),
            (
                json!({"headers": {"X-CSRFToken": 5}}),
                "headers.X-CSRFToken",
            ),
            (json!({"headers": {"Bad Name": "v"}}), "headers.Bad Name"),
            (
                json!({"headers": {"X-A": "v\r\nX-Injected: 1"}}),
                "headers.X-A",
            ),
            (json!({"retry": 3}), "retry"),
            (json!({"retry": {"attempts": 0}}), "retry.attempts"),
            (json!({"retry": {"attempts": 11}}), "retry.attempts"),
            (json!({"retry": {"baseDelayMs": -1}}), "retry.baseDelayMs"),
            (json!({"retry": {"maxDelayMs": 1e9}}), "retry.maxDelayMs"),
            (json!({"retry": {"tries": 2}}), "retry.tries"),
        ];
        for (v, field) in cases {
            let err = GuardOptions::from_json(&v).unwrap_err();
            assert_eq!(err.code(), "invalid_options");
            assert!(err.to_string().contains(field), "{v}: {err}");
        }
    }
}
