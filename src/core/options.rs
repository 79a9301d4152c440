//! The guard's options and their validation: `{ namespace?, ttlSeconds?, maxJobs?, storage? }`.

use serde_json::{Map, Value};

use super::error::GuardError;

pub const DEFAULT_NAMESPACE: &str = "superset-job-guard";
/// Superset's `GLOBAL_ASYNC_QUERIES_JWT_EXPIRATION_SECONDS` default: after that the channel
/// cookie is re-minted and the job can no longer be cancelled by this session anyway.
pub const DEFAULT_TTL_SECONDS: u64 = 3600;
pub const DEFAULT_MAX_JOBS: usize = 200;
pub const MAX_NAMESPACE_LEN: usize = 64;
pub const MAX_TTL_SECONDS: f64 = 366.0 * 24.0 * 3600.0;
pub const MAX_MAX_JOBS: usize = 10_000;

const KNOWN: [&str; 4] = ["namespace", "ttlSeconds", "maxJobs", "storage"];

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
}

impl Default for GuardOptions {
    fn default() -> Self {
        Self {
            namespace: DEFAULT_NAMESPACE.to_owned(),
            ttl_ms: DEFAULT_TTL_SECONDS * 1000,
            max_jobs: DEFAULT_MAX_JOBS,
            storage: StorageKind::Local,
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
        if let Some(key) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unknown option `{key}` (known: {})",
                KNOWN.join(", ")
            )));
        }
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
        Ok(options)
    }
}

/// A field that is there and not `null`/`undefined`.
fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn namespace(v: &Value) -> Result<String, GuardError> {
    match v.as_str() {
        Some(s)
            if !s.is_empty()
                && s.chars().count() <= MAX_NAMESPACE_LEN
                && !s.contains(':')
                && !s.chars().any(char::is_control) =>
        {
            Ok(s.to_owned())
        }
        _ => Err(invalid(format!(
            "`namespace` must be a non-empty string of at most {MAX_NAMESPACE_LEN} characters without ':'"
        ))),
    }
}

fn ttl_ms(v: &Value) -> Result<u64, GuardError> {
    match v.as_f64() {
        Some(s) if s > 0.0 && s <= MAX_TTL_SECONDS => Ok(((s * 1000.0).round() as u64).max(1)),
        _ => Err(invalid(format!(
            "`ttlSeconds` must be a number of seconds above 0 and at most {MAX_TTL_SECONDS}"
        ))),
    }
}

fn max_jobs(v: &Value) -> Result<usize, GuardError> {
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
            .map(|f| f as u64)
    });
    match n.and_then(|n| usize::try_from(n).ok()) {
        Some(n) if (1..=MAX_MAX_JOBS).contains(&n) => Ok(n),
        _ => Err(invalid(format!(
            "`maxJobs` must be a whole number from 1 to {MAX_MAX_JOBS}"
        ))),
    }
}

fn invalid(message: String) -> GuardError {
    GuardError::InvalidOptions(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults() {
        let o = GuardOptions::from_json(&Value::Null).unwrap();
        assert_eq!(o, GuardOptions::default());
        assert_eq!(o.namespace, "superset-job-guard");
        assert_eq!(o.ttl_ms, 3_600_000);
        assert_eq!(o.max_jobs, 200);
        assert_eq!(o.storage, StorageKind::Local);
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
                storage: StorageKind::Memory
            }
        );
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
        ];
        for (v, field) in cases {
            let err = GuardOptions::from_json(&v).unwrap_err();
            assert_eq!(err.code(), "invalid_options");
            assert!(err.to_string().contains(field), "{v}: {err}");
        }
    }
}
