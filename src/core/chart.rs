//! Superset's chart-data endpoints, as `query()` speaks to them: the request it sends, and what
//! each answer means.
//!
//! | endpoint | URL | sent | read |
//! |---|---|---|---|
//! | chart data | `POST /api/v1/chart/data` (`url`) | the app's body with `client_id` (and `tab_id` on the task contract) | [`classify_chart`] |
//! | a job's result (6.1.0) | `GET <result_url>` | | [`classify_result`] |
//! | stop a synchronous query | `POST /api/v1/chart/data/stop` | `{"client_id"}` | [`classify_stop`] |
//!
//! Superset answers a chart-data request with a `200` and the result (synchronous, the default
//! without `GLOBAL_ASYNC_QUERIES`, a cache hit, or the task framework switched off), a `202`
//! with job metadata (6.1.0's `GLOBAL_ASYNC_QUERIES`) or with `task_ids` (the task framework of
//! 7.0 and main), or an error: `401` (signed out), `403` (no access), `400`/`422`/`500` with
//! `{"message"}` or `{"errors": [...]}`. The stop endpoint (PR #44552, docs "Version: Next")
//! answers `200`, `400`, `401`, `403` or `500`, never `404`: a `404`, or the `405` a real 6.1.0
//! answers (its `GET /api/v1/chart/data/<cache_key>` takes the path), means a Superset without
//! it, and the guard does not ask that server again.

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::error::GuardError;
use super::ids::quote;
use super::names::names;
use super::wait_input::{read_input, read_options, WaitInput, WaitSettings};
use super::wire::Field;

/// Where chart data is asked for, unless the app says otherwise (`url`).
pub const DEFAULT_CHART_DATA_URL: &str = "/api/v1/chart/data";
/// Where a synchronous chart-data query is stopped.
pub const DEFAULT_STOP_URL: &str = "/api/v1/chart/data/stop";
/// The longest `client_id` Superset takes (`ChartDataStopSchema`: 1 to 64 characters).
pub const MAX_CLIENT_ID: usize = 64;
/// The most error entries an outcome carries, and the most characters of one's message.
pub const MAX_ERRORS: usize = 20;
pub const MAX_MESSAGE_CHARS: usize = 1024;

/// Whether `id` may be a `client_id`: 1 to 64 of `[A-Za-z0-9_-]` (what the guard makes; an
/// app's own is taken when it keeps to the same).
pub fn is_client_id(id: &str) -> bool {
    super::ids::is_tab_id(id) && id.len() <= MAX_CLIENT_ID
}

/// A `client_id` from random numbers in `[0, 1)`: `sjg-` and 16 base-36 characters.
pub fn make_client_id(mut random: impl FnMut() -> f64) -> String {
    let mut id = String::from("sjg-");
    for _ in 0..16 {
        let digit = (random() * 36.0) as u32 % 36;
        id.extend(char::from_digit(digit, 36));
    }
    id
}

/// Whether `url` may be requested: a path on the page's own origin (`/…`, not `//…`), without
/// control characters or whitespace, at most 2048 characters. A `result_url` from the server
/// and the app's `url` are both held to it.
pub fn is_same_origin_path(url: &str) -> bool {
    url.len() <= 2048
        && url.starts_with('/')
        && !url.starts_with("//")
        && !url.starts_with("/\\")
        && !url.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Whether `url` (a job's `result_url`) is a result of the chart-data endpoint `chart_url`:
/// `<chart_url's path>/<key>`, the key 1 to 128 of `[A-Za-z0-9_-]` (Superset's
/// `/api/v1/chart/data/qc-…`). Nothing else an answer or an event names is requested: not the
/// sign-out page, not another API.
pub fn is_result_url(url: &str, chart_url: &str) -> bool {
    let base = chart_url.split(['?', '#']).next().unwrap_or(chart_url);
    let key = url
        .strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or("");
    is_same_origin_path(url)
        && !key.is_empty()
        && key.len() <= 128
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `query()`'s options as JSON writes them (the shell takes `signal` out first).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct OptionsWire {
    /// Taken out before; named so that an unknown key's message lists it as known.
    #[allow(dead_code)]
    signal: Option<IgnoredAny>,
    stale_timeout_ms: Field<Option<f64>>,
    cancel_on_close: Field<Option<bool>>,
    url: Field<Option<String>>,
}

const URL_RULE: &str = "`url` must be a path of this site (starting with one `/`)";

/// `query()`'s options, read: its wait's settings and where to send it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuerySettings {
    pub wait: WaitSettings,
    pub url: String,
}

impl QuerySettings {
    /// Reads `query()`'s options (without `signal`), once, as `waitFor`'s are read, and `url`
    /// (default [`DEFAULT_CHART_DATA_URL`]): a path of this site.
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        let w: OptionsWire = read_options(value, "query")?;
        let url = w
            .url
            .nullable()
            .map_err(|_| GuardError::InvalidOptions(URL_RULE.to_owned()))?
            .unwrap_or_else(|| DEFAULT_CHART_DATA_URL.to_owned());
        if !is_same_origin_path(&url) {
            return Err(GuardError::InvalidOptions(URL_RULE.to_owned()));
        }
        Ok(Self {
            wait: WaitSettings::of(w.stale_timeout_ms, w.cancel_on_close)?,
            url,
        })
    }
}

/// What a chart-data request's answer means.
#[derive(Debug)]
pub enum ChartAnswer {
    /// `200` with a JSON body: the result, handed to the app as it came.
    Result,
    /// `202`: the job or tasks to wait for (a task submission or async_event metadata).
    Accepted(WaitInput),
    /// `401`: the server's login has ended.
    Unauthenticated,
    /// `403`: the session may not run this query (never retried).
    Forbidden,
    /// Anything else: its status, and the errors its body names.
    Failed {
        http_status: Option<u16>,
        errors: Vec<Value>,
        message: String,
    },
}

/// What a chart-data answer (`status`, whether its `Content-Type` is JSON, its body parsed
/// within the limits when it is) means. A `202` that is neither a task submission nor job
/// metadata, and a `200` that is not JSON, are failures.
pub fn classify_chart(status: u16, json: bool, body: Option<&Value>) -> ChartAnswer {
    match status {
        200 if json => ChartAnswer::Result,
        202 => match body.filter(|_| json).map(read_input) {
            Some(Ok(input @ (WaitInput::Tasks(_) | WaitInput::Job(_)))) => {
                ChartAnswer::Accepted(input)
            }
            _ => failed(
                Some(status),
                None,
                "The server accepted the query (202) but named no job or task",
            ),
        },
        401 => ChartAnswer::Unauthenticated,
        403 => ChartAnswer::Forbidden,
        _ => failed(
            Some(status),
            body.filter(|_| json),
            "The server answered the chart-data request with an error",
        ),
    }
}

/// A failure, with the errors `body` names (`errors`, else `message`), bounded.
fn failed(http_status: Option<u16>, body: Option<&Value>, otherwise: &str) -> ChartAnswer {
    let errors = errors_of(body);
    let said = errors
        .iter()
        .find_map(|e| e.get("message").and_then(Value::as_str))
        .map(|m| format!(": {}", quote(m)))
        .unwrap_or_default();
    let status = http_status
        .map(|s| format!(" (HTTP {s})"))
        .unwrap_or_default();
    ChartAnswer::Failed {
        http_status,
        errors,
        message: [otherwise, &status, &said].concat(),
    }
}

/// A failure of the request itself (no answer: the network, a timeout).
pub fn no_answer() -> ChartAnswer {
    failed(None, None, "The chart-data request got no answer")
}

/// Superset's errors in a body: its `errors` list (each kept as it came, at most
/// [`MAX_ERRORS`], a `message` cut to [`MAX_MESSAGE_CHARS`]), else its `message` as
/// `[{ message }]`.
pub fn errors_of(body: Option<&Value>) -> Vec<Value> {
    let Some(body) = body else {
        return Vec::new();
    };
    let bounded = |mut e: Value| {
        if let Some(Value::String(m)) = e.get_mut("message") {
            if m.chars().count() > MAX_MESSAGE_CHARS {
                *m = m.chars().take(MAX_MESSAGE_CHARS).collect();
            }
        }
        e
    };
    match (body.get("errors"), body.get("message")) {
        (Some(Value::Array(errors)), _) if !errors.is_empty() => errors
            .iter()
            .take(MAX_ERRORS)
            .cloned()
            .map(bounded)
            .collect(),
        (_, Some(Value::String(m))) => {
            vec![bounded(serde_json::json!({ "message": m }))]
        }
        _ => Vec::new(),
    }
}

/// What the answer to a job's `result_url` (6.1.0) means: its result, or why not.
pub fn classify_result(status: u16, json: bool, body: Option<&Value>) -> ChartAnswer {
    match status {
        200 if json => ChartAnswer::Result,
        401 => ChartAnswer::Unauthenticated,
        403 => ChartAnswer::Forbidden,
        _ => failed(
            Some(status),
            body.filter(|_| json),
            "The job's result could not be read",
        ),
    }
}

names! {
    /// How a synchronous query's stop went, or what stopping an async one did.
    pub enum StopResult ("not a stop outcome") as "StopOutcome" {
        /// The server stopped the query (`200`).
        Stopped = "stopped",
        /// The server had nothing of it running any more (`400`).
        NotRunning = "not_running",
        /// The server has no stop endpoint (a `404` or `405`: 6.1.0, 7.0), or the query carried
        /// no `client_id` to stop it by; the guard does not ask that server again.
        Unsupported = "unsupported",
        /// `401` or `403`: the session may not stop it.
        Refused = "refused",
        /// A `500`, or no answer.
        Failed = "failed",
        /// Sent with `keepalive` as the page ended or the session did; its answer is not read.
        Sent = "sent",
        /// Its job or tasks are being cancelled (`cancelling` names them), as `cancel()` would.
        Cancelling = "cancelling",
        /// Nothing was sent: another waiter still awaits its jobs, they had ended, or another
        /// user signed in (nothing is sent as them).
        NotSent = "not_sent",
    }
}

/// Whether the stop endpoint's answer of `status` (to a stop or its `OPTIONS`) says it is not
/// there. 6.1.0 answers 405: its `GET /api/v1/chart/data/<cache_key>` takes the path.
pub fn no_stop_endpoint(status: u16) -> bool {
    matches!(status, 404 | 405)
}

/// What an answer of the stop endpoint means.
pub fn classify_stop(status: u16) -> StopResult {
    match status {
        _ if no_stop_endpoint(status) => StopResult::Unsupported,
        200..=299 => StopResult::Stopped,
        400 => StopResult::NotRunning,
        401 | 403 => StopResult::Refused,
        _ => StopResult::Failed,
    }
}

/// The stop request's body: `{"client_id": …}` (a `client_id` is `[A-Za-z0-9_-]`: nothing to
/// escape).
pub fn stop_body(client_id: &str) -> String {
    ["{\"client_id\":\"", client_id, "\"}"].concat()
}

#[cfg(test)]
mod tests;
