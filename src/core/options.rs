//! The guard's options: what the constructor accepts, validated. (The URLs they make are
//! [`endpoints`](super::endpoints)'.)

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::error::GuardError;
use super::ids::{quote, TabId};
use super::quiet::Json;
use super::response::{Contract, CONTRACT_RULE};
use super::retry::RetryPolicy;
use super::wire::{self, AnyJson, Field, Object};

pub const DEFAULT_NAMESPACE: &str = "superset-job-guard";
pub const DEFAULT_TTL_SECONDS: u64 = 3600;
pub const DEFAULT_MAX_JOBS: usize = 200;
pub const MAX_NAMESPACE_LEN: usize = 64;
pub const MAX_TTL_SECONDS: u32 = 366 * 24 * 3600;
pub const MAX_MAX_JOBS: usize = 10_000;

/// Superset's async_event cancel endpoint; `{job_id}` is replaced by the URL-encoded id.
pub const DEFAULT_CANCEL_URL: &str = "/api/v1/async_event/{job_id}/cancel";
/// The task framework's cancel endpoint; `{job_id}` is replaced by the task's uuid.
pub const DEFAULT_TASK_CANCEL_URL: &str = "/api/v1/task/{job_id}/cancel";
/// Where a URL template takes the job's id.
pub const PLACEHOLDER: &str = "{job_id}";
pub const MAX_CANCEL_URL_LEN: usize = 2048;
pub const MAX_HEADERS: usize = 32;
pub const MAX_ATTEMPTS: u32 = 10;
pub const MAX_BASE_DELAY_MS: u64 = 60_000;
pub const MAX_MAX_DELAY_MS: u64 = 300_000;
/// How long one request of a cancel may take, its body read included, unless `timeoutMs` says
/// otherwise (ky's default).
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// Where the guard keeps its data: `"local"` (default), shared by the origin's tabs, or
/// `"memory"`, this guard only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum StorageKind {
    /// `localStorage`, shared by the origin's tabs.
    Local,
    /// This guard's memory only.
    Memory,
}

/// The validated options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardOptions {
    pub namespace: String,
    pub ttl_ms: u64,
    pub max_jobs: usize,
    pub storage: StorageKind,
    pub cancel_url: String,
    pub headers: Vec<(String, String)>,
    pub retry: RetryPolicy,
    pub contract: Contract,
    /// This tab's `tab_id`, as the app sends it with its queries (task contract).
    pub tab_id: Option<TabId>,
    /// How long one request may take, its body read included.
    pub timeout_ms: u64,
    /// Whether the page's end (`pagehide`, not into the back/forward cache) cancels the jobs
    /// only its `waitFor` waiters await.
    pub cancel_on_close: bool,
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
            contract: Contract::AsyncEvent,
            tab_id: None,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            cancel_on_close: true,
        }
    }
}

/// The options of `new JobGuard(options)`, every one optional. `null` reads as absent; unknown
/// options are refused.
// An unknown key is refused by `deny_unknown_fields` (its message rewritten by
// [`unknown_option`]). Each field's TypeScript type is the one its rule takes (a `Field` tells
// a missing option from one of the wrong type).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "GuardOptions")
)]
pub struct OptionsWire {
    /// Prefix of every storage key. Default `"superset-job-guard"`; no `:`.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "string"))]
    namespace: Field<Option<String>>,
    /// Records older than this are dropped. Default 3600 (Superset's JWT expiration).
    #[cfg_attr(target_arch = "wasm32", tsify(type = "number"))]
    ttl_seconds: Field<Option<f64>>,
    /// Most records kept; terminal ones are evicted first, then the oldest. Default 200.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "number"))]
    max_jobs: Field<Option<f64>>,
    /// `"local"` (default): shared by the origin's tabs. `"memory"`: this guard only.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "StorageKind"))]
    storage: Field<Option<StorageKind>>,
    /// The cancel endpoint; `{job_id}` becomes the URL-encoded job (or task) id. Default
    /// `"/api/v1/async_event/{job_id}/cancel"`, or `"/api/v1/task/{job_id}/cancel"` with
    /// `contract: "task"`.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "string"))]
    cancel_url: Field<Option<String>>,
    /// Extra headers for the cancel request, e.g. `{ "X-CSRFToken": token }` for real Superset.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, string>"))]
    headers: Field<Option<AnyJson>>,
    /// Retries of transient failures. `attempts` counts every request, the first included.
    /// Defaults 3, 200, 5000.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "RetryOptions"))]
    retry: Field<Option<AnyJson>>,
    /// The server contract. Default `"async_event"`.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Contract"))]
    contract: Field<Option<Contract>>,
    /// Task contract: this tab's `tab_id`, as the app sends it with its queries (kept in
    /// sessionStorage, it survives a reload). A cancel carries the tab id this tab recorded
    /// the task with; after a reload, this one if the record lists it.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "TabId"))]
    tab_id: Field<Option<TabId>>,
    /// How long one request of a cancel may take, its body included, in ms (1 to 600000). A
    /// request that takes longer is a failure that is retried. Default 10000.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "number"))]
    timeout_ms: Field<Option<f64>>,
    /// When the page closes (`pagehide`, not into the back/forward cache), cancel the jobs that
    /// only this page's `waitFor` waiters await, with `fetch(…, { keepalive: true })` (best
    /// effort; the `headers` go with it). Default `true`: a task-contract cancel carries the tab
    /// id the task was recorded with, so it detaches only this tab (a task another tab or user
    /// shares runs on); an async_event cancel stops the job, whose id no other page awaits.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "boolean"))]
    cancel_on_close: Field<Option<bool>>,
    /// The fetch to send the cancel with. Default: the page's `fetch` at call time. (A
    /// function, which the browser shell takes out before the rest is read here.)
    #[allow(dead_code)]
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(type = "(input: RequestInfo | URL, init?: RequestInit) => Promise<Response>")
    )]
    fetch: Option<IgnoredAny>,
}

/// Retries of transient failures (`GuardOptions.retry`).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "RetryOptions")
)]
pub struct RetryWire {
    /// Every request counts, the first included. Default 3.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "number"))]
    attempts: Field<Option<f64>>,
    /// Default 200.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "number"))]
    base_delay_ms: Field<Option<f64>>,
    /// Default 5000.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "number"))]
    max_delay_ms: Field<Option<f64>>,
}

// The rule each option keeps, as its error message says it (a test checks the numbers against
// the constants above).
const NAMESPACE_RULE: &str =
    "`namespace` must be a non-empty string of at most 64 characters without ':'";
const TTL_RULE: &str = "`ttlSeconds` must be a number of seconds above 0 and at most 31622400";
const MAX_JOBS_RULE: &str = "`maxJobs` must be a whole number from 1 to 10000";
const STORAGE_RULE: &str = "`storage` must be \"local\" or \"memory\"";
const CANCEL_URL_RULE: &str =
    "`cancelUrl` must be a URL of at most 2048 characters containing {job_id}";
const HEADERS_RULE: &str =
    "`headers` must be an object of at most 32 header names to string values";
const RETRY_RULE: &str = "`retry` must be an object";
const TAB_ID_RULE: &str = "`tabId` must be 1 to 64 of A-Z, a-z, 0-9, _ and -";
const CANCEL_ON_CLOSE_RULE: &str = "`cancelOnClose` must be true or false";
const TIMEOUT_RULE: &str = "`timeoutMs` must be a whole number of milliseconds from 1 to 600000";
const ATTEMPTS_RULE: &str = "`retry.attempts` must be a whole number from 1 to 10";
const BASE_DELAY_RULE: &str = "`retry.baseDelayMs` must be a whole number from 0 to 60000";
const MAX_DELAY_RULE: &str = "`retry.maxDelayMs` must be a whole number from 0 to 300000";

pub(super) fn refuse(rule: &str) -> GuardError {
    GuardError::InvalidOptions(rule.to_owned())
}

/// An option: absent or `null` keeps the default (`None`); the wrong type breaks its rule.
fn take<T>(field: Field<Option<T>>, rule: &str) -> Result<Option<T>, GuardError> {
    field.nullable().map_err(|_| refuse(rule))
}

/// `v` if it is a whole number from `min` to `max`.
pub(super) fn whole(v: f64, min: u64, max: u64) -> Option<u64> {
    (v.fract() == 0.0 && v >= min as f64 && v <= max as f64).then_some(v as u64)
}

impl GuardOptions {
    /// Reads and validates the options, once: `null`/`undefined` means all defaults; an
    /// unknown option (`retry`'s too) and a value breaking its rule are refused
    /// (`invalid_options`).
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        let wire: Option<Object<OptionsWire>> =
            wire::read(value, "expected an object, null or undefined")
                .map_err(|m| unknown_option(&m, "").unwrap_or(GuardError::InvalidOptions(m)))?;
        Self::try_from(wire.map(|Object(w)| w).unwrap_or_default())
    }
}

/// An unknown option, as serde's `deny_unknown_fields` said it: ``unknown option `x`{of} (known:
/// …)``, `x` prefixed by `path` (`retry.`), naming the options known there.
pub(super) fn unknown_option(message: &str, of: &str) -> Option<GuardError> {
    let (key, known) = wire::unknown_field(message)?;
    Some(GuardError::InvalidOptions(format!(
        "unknown option `{}`{of} (known: {})",
        quote(&key),
        known.join(", ")
    )))
}

// Each option's rule is a function of its own, called only when the option is given: a page
// compiles the module's functions on their first call, so a guard made with two options
// compiles two rules, not all of them (`#[inline(never)]` keeps them apart).
impl TryFrom<OptionsWire> for GuardOptions {
    type Error = GuardError;

    fn try_from(w: OptionsWire) -> Result<Self, GuardError> {
        let mut o = GuardOptions::default();
        // `retry`'s keys are read first, as the options' own are: an unknown one is refused
        // before any value.
        let retry = match take(w.retry, RETRY_RULE)? {
            None | Some(AnyJson(Value::Null)) => None,
            Some(AnyJson(value)) => Some(retry_wire(&value)?),
        };
        if let Some(ns) = take(w.namespace, NAMESPACE_RULE)? {
            o.namespace = namespace(ns)?;
        }
        if let Some(s) = take(w.ttl_seconds, TTL_RULE)? {
            o.ttl_ms = ttl_ms(s)?;
        }
        if let Some(n) = take(w.max_jobs, MAX_JOBS_RULE)? {
            let n = whole(n, 1, MAX_MAX_JOBS as u64).ok_or_else(|| refuse(MAX_JOBS_RULE))?;
            o.max_jobs = usize::try_from(n).map_err(|_| refuse(MAX_JOBS_RULE))?;
        }
        if let Some(kind) = take(w.storage, STORAGE_RULE)? {
            o.storage = kind;
        }
        if let Some(contract) = take(w.contract, CONTRACT_RULE)? {
            o.contract = contract;
            if contract == Contract::Task {
                o.cancel_url = DEFAULT_TASK_CANCEL_URL.to_owned();
            }
        }
        if let Some(on) = take(w.cancel_on_close, CANCEL_ON_CLOSE_RULE)? {
            o.cancel_on_close = on;
        }
        if let Some(tab) = take(w.tab_id, TAB_ID_RULE)? {
            o.tab_id = Some(tab);
        }
        if let Some(url) = take(w.cancel_url, CANCEL_URL_RULE)? {
            o.cancel_url = cancel_url(url)?;
        }
        if let Some(AnyJson(value)) = take(w.headers, HEADERS_RULE)? {
            o.headers = headers(value)?;
        }
        if let Some(ms) = take(w.timeout_ms, TIMEOUT_RULE)? {
            o.timeout_ms = whole(ms, 1, MAX_TIMEOUT_MS).ok_or_else(|| refuse(TIMEOUT_RULE))?;
        }
        if let Some(r) = retry {
            o.retry = retry_policy(r)?;
        }
        Ok(o)
    }
}

/// `retry`'s keys, read; an unknown one is refused by name.
#[inline(never)]
fn retry_wire(value: &Value) -> Result<RetryWire, GuardError> {
    RetryWire::deserialize(Json(value)).map_err(|e| {
        let m = e.to_string();
        match wire::unknown_field(&m) {
            Some((key, known)) => GuardError::InvalidOptions(format!(
                "unknown option `retry.{}` (known: {})",
                quote(&key),
                known.join(", ")
            )),
            None => refuse(RETRY_RULE),
        }
    })
}

#[inline(never)]
fn namespace(ns: String) -> Result<String, GuardError> {
    let ok = !ns.is_empty()
        && ns.chars().count() <= MAX_NAMESPACE_LEN
        && !ns.contains(':')
        && !ns
            .chars()
            .any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER);
    if ok {
        Ok(ns)
    } else {
        Err(refuse(NAMESPACE_RULE))
    }
}

#[inline(never)]
fn ttl_ms(s: f64) -> Result<u64, GuardError> {
    let max_ms = u64::from(MAX_TTL_SECONDS) * 1000;
    let ms = (s * 1000.0).round();
    if !(s > 0.0 && ms <= max_ms as f64) {
        return Err(refuse(TTL_RULE));
    }
    Ok((ms as u64).max(1))
}

#[inline(never)]
fn cancel_url(url: String) -> Result<String, GuardError> {
    let ok = url.contains(PLACEHOLDER)
        && url.len() <= MAX_CANCEL_URL_LEN
        && !url.chars().any(char::is_control);
    if ok {
        Ok(url)
    } else {
        Err(refuse(CANCEL_URL_RULE))
    }
}

#[inline(never)]
fn headers(headers: Value) -> Result<Vec<(String, String)>, GuardError> {
    let Value::Object(headers) = headers else {
        return Err(refuse(HEADERS_RULE));
    };
    if headers.len() > MAX_HEADERS {
        return Err(refuse(HEADERS_RULE));
    }
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        match value {
            // `fetch` takes Latin-1 header values only (a ByteString): anything else would
            // make every cancel fail at send.
            Value::String(value)
                if is_token(&name)
                    && !value.contains(['\r', '\n', '\0'])
                    && value.chars().all(|c| u32::from(c) <= 0xFF) =>
            {
                out.push((name, value));
            }
            _ => {
                return Err(GuardError::InvalidOptions(format!(
                    "`headers.{}` must be a valid header name with a string value of \
                     Latin-1 characters (U+0000 to U+00FF) without line breaks or NUL",
                    quote(&name)
                )))
            }
        }
    }
    Ok(out)
}

#[inline(never)]
fn retry_policy(r: RetryWire) -> Result<RetryPolicy, GuardError> {
    let read =
        |v: Field<Option<f64>>, field: &str, min: u64, max: u64, default: u64| match v.nullable() {
            Ok(None) => Ok(default),
            Ok(Some(v)) => whole(v, min, max).ok_or_else(|| refuse(field)),
            Err(_) => Err(refuse(field)),
        };
    let d = RetryPolicy::default();
    Ok(RetryPolicy {
        attempts: read(
            r.attempts,
            ATTEMPTS_RULE,
            1,
            u64::from(MAX_ATTEMPTS),
            u64::from(d.attempts),
        )? as u32,
        base_delay_ms: read(
            r.base_delay_ms,
            BASE_DELAY_RULE,
            0,
            MAX_BASE_DELAY_MS,
            d.base_delay_ms,
        )?,
        max_delay_ms: read(
            r.max_delay_ms,
            MAX_DELAY_RULE,
            0,
            MAX_MAX_DELAY_MS,
            d.max_delay_ms,
        )?,
    })
}

/// An HTTP header name (RFC 9110 `token`).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests;
