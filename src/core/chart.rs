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
    pub fn read<'de, D: Deserializer<'de>>(value: D, guards: bool) -> Result<Self, GuardError> {
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
            wait: WaitSettings::of(w.stale_timeout_ms, w.cancel_on_close, guards)?,
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

/// What an answer of the stop endpoint means.
pub fn classify_stop(status: u16) -> StopResult {
    match status {
        200..=299 => StopResult::Stopped,
        400 => StopResult::NotRunning,
        401 | 403 => StopResult::Refused,
        // 6.1.0 answers 405: its `GET /api/v1/chart/data/<cache_key>` takes the path.
        404 | 405 => StopResult::Unsupported,
        _ => StopResult::Failed,
    }
}

/// The stop request's body: `{"client_id": …}` (a `client_id` is `[A-Za-z0-9_-]`: nothing to
/// escape).
pub fn stop_body(client_id: &str) -> String {
    ["{\"client_id\":\"", client_id, "\"}"].concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::names::assert_names;
    use serde_json::json;

    #[test]
    fn named_as_their_typescript_declaration() {
        assert_names!(StopResult);
    }

    #[test]
    fn each_chart_data_answer_means_what_superset_says() {
        assert!(matches!(
            classify_chart(200, true, Some(&json!({"result": []}))),
            ChartAnswer::Result
        ));
        let tasks = json!({"task_ids": ["0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01"], "cursor": "c"});
        assert!(matches!(
            classify_chart(202, true, Some(&tasks)),
            ChartAnswer::Accepted(WaitInput::Tasks(_))
        ));
        let job = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "pending",
                         "errors": [], "result_url": null});
        assert!(matches!(
            classify_chart(202, true, Some(&job)),
            ChartAnswer::Accepted(WaitInput::Job(_))
        ));
        for (status, json, body) in [
            (202, true, json!({"x": 1})),
            (202, true, json!(["a"])),
            (202, false, tasks.clone()),
            (200, false, json!(null)),
        ] {
            assert!(
                matches!(
                    classify_chart(status, json, Some(&body)),
                    ChartAnswer::Failed { .. }
                ),
                "{status} {body}"
            );
        }
        assert!(matches!(
            classify_chart(401, true, None),
            ChartAnswer::Unauthenticated
        ));
        assert!(matches!(
            classify_chart(403, false, None),
            ChartAnswer::Forbidden
        ));
        let body = json!({"errors": [{"message": "relation \"x\" does not exist",
                                      "error_type": "GENERIC_DB_ENGINE_ERROR"}]});
        let ChartAnswer::Failed {
            http_status,
            errors,
            message,
        } = classify_chart(400, true, Some(&body))
        else {
            panic!("a failure");
        };
        assert_eq!(http_status, Some(400));
        assert_eq!(errors[0]["error_type"], "GENERIC_DB_ENGINE_ERROR");
        assert!(
            message.contains("does not exist") && message.contains("400"),
            "{message}"
        );
        let ChartAnswer::Failed { errors, .. } =
            classify_chart(500, true, Some(&json!({"message": "x".repeat(5000)})))
        else {
            panic!("a failure");
        };
        assert_eq!(
            errors[0]["message"].as_str().unwrap().len(),
            MAX_MESSAGE_CHARS
        );
        let many = json!({"errors": vec![json!({"message": "m"}); 100]});
        assert_eq!(errors_of(Some(&many)).len(), MAX_ERRORS);
    }

    #[test]
    fn the_options_are_an_object_of_known_keys_and_url_a_path_of_this_site() {
        use crate::core::quiet::Json;
        let read = |v: Value| QuerySettings::read(Json(&v), true);
        let d = read(json!(null)).unwrap();
        assert_eq!(d.url, DEFAULT_CHART_DATA_URL);
        assert!(d.wait.cancel_on_close);
        let given =
            read(json!({"url": "/chart/data", "staleTimeoutMs": 5, "cancelOnClose": false}))
                .unwrap();
        assert_eq!(
            (given.url.as_str(), given.wait.stale_ms),
            ("/chart/data", 5)
        );
        assert!(!given.wait.cancel_on_close);
        for (bad, says) in [
            (json!({"url": "https://evil.test/x"}), "`url`"),
            (json!({"url": 5}), "`url`"),
            (json!({"staleTimeoutMs": 0}), "`staleTimeoutMs`"),
            (json!({"urll": "/x"}), "unknown option `urll` of query"),
            (json!([1]), "must be an object"),
        ] {
            let e = read(bad.clone()).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_stop_answer_is_read_by_its_status_and_a_404_or_405_is_a_superset_without_it() {
        assert_eq!(classify_stop(200), StopResult::Stopped);
        assert_eq!(classify_stop(400), StopResult::NotRunning);
        assert_eq!(classify_stop(401), StopResult::Refused);
        assert_eq!(classify_stop(403), StopResult::Refused);
        assert_eq!(classify_stop(404), StopResult::Unsupported);
        assert_eq!(classify_stop(405), StopResult::Unsupported);
        assert_eq!(classify_stop(500), StopResult::Failed);
        assert_eq!(stop_body("sjg-abc"), r#"{"client_id":"sjg-abc"}"#);
    }

    #[test]
    fn client_ids_and_urls_are_held_to_their_rules() {
        let mut n = 0.0;
        let id = make_client_id(|| {
            n = (n + 0.37) % 1.0;
            n
        });
        assert!(
            is_client_id(&id) && id.starts_with("sjg-") && id.len() == 20,
            "{id}"
        );
        assert!(!is_client_id("") && !is_client_id("a b") && !is_client_id(&"a".repeat(65)));
        for good in ["/api/v1/chart/data", "/api/v1/chart/data/qc-1?x=1"] {
            assert!(is_same_origin_path(good), "{good}");
        }
        for bad in [
            "https://evil.test/x",
            "//evil.test/x",
            "/\\evil.test",
            "api/v1",
            "/a b",
            "/a\nb",
            "",
        ] {
            assert!(!is_same_origin_path(bad), "{bad}");
        }
        assert!(!is_same_origin_path(&format!("/{}", "a".repeat(2048))));
    }

    #[test]
    fn only_a_result_of_the_chart_data_endpoint_is_a_result_url() {
        let chart = "/api/v1/chart/data";
        assert!(is_result_url(
            "/api/v1/chart/data/qc-ecd766dd461f294e1bcdaa321e0e8463",
            chart
        ));
        assert!(is_result_url(
            "/proxy/chart/data/qc_1",
            "/proxy/chart/data?x=1"
        ));
        for bad in [
            "/logout/",
            "/api/v1/chart/data",
            "/api/v1/chart/data/",
            "/api/v1/chart/data/qc-1/../../../logout/",
            "/api/v1/chart/data/qc-1?format=csv",
            "/api/v1/chart/datax/qc-1",
            "/api/v1/me/",
            "https://evil.test/api/v1/chart/data/qc-1",
            "//evil.test/api/v1/chart/data/qc-1",
        ] {
            assert!(!is_result_url(bad, chart), "{bad}");
        }
        assert!(!is_result_url(
            &format!("{chart}/{}", "a".repeat(129)),
            chart
        ));
    }
}
