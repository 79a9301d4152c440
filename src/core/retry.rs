//! The retry schedule for transient cancel failures: exponential backoff with full jitter,
//! lengthened (never shortened) by the server's `Retry-After` (seconds or an HTTP date), capped
//! at the maximum; and the jitter `follow()`'s backoff shares ([`jitter`]).

use super::random::Random;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests in all, the first included (at least 1).
    pub attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            base_delay_ms: 200,
            max_delay_ms: 5000,
        }
    }
}

impl RetryPolicy {
    /// The wait before request number `sent + 1`, after `sent` requests (`sent >= 1`): a
    /// uniformly random time up to `base * 2^(sent-1)` ("full jitter"), or the server's
    /// `Retry-After` where that is longer: a hint never shortens the backoff (`Retry-After: 0`
    /// or a date in the past does not make the guard hammer the server). Capped at
    /// `max_delay_ms`.
    pub fn delay_ms(
        &self,
        sent: u32,
        retry_after: Option<&str>,
        now_ms: u64,
        random: &mut dyn Random,
    ) -> u64 {
        let exponent = sent.saturating_sub(1).min(32);
        let ceiling = self
            .base_delay_ms
            .saturating_mul(1u64 << exponent)
            .min(self.max_delay_ms);
        let backoff = jitter(0, ceiling, random);
        let hint = retry_after.and_then(|h| parse_retry_after(h, now_ms));
        backoff.max(hint.unwrap_or(0)).min(self.max_delay_ms)
    }
}

/// A random wait from `floor` up to (not including) `ceiling`, uniformly; `floor` when the
/// random source answers outside `0..1` (a page that replaced `Math.random`) or `ceiling` is
/// not above `floor`. The one jitter of the guard: full jitter (`floor` 0) for cancel's
/// retries, equal jitter (`floor` half the ceiling) for `follow()`'s failures.
pub fn jitter(floor: u64, ceiling: u64, random: &mut dyn Random) -> u64 {
    let fraction = random.next_f64();
    let fraction = if (0.0..1.0).contains(&fraction) {
        fraction
    } else {
        0.0
    };
    floor + (ceiling.saturating_sub(floor) as f64 * fraction) as u64
}

/// `Retry-After` as milliseconds from `now_ms`: delay-seconds (`120`) or an HTTP date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`; also the obsolete RFC 850 and asctime forms). A date in
/// the past is 0. Anything unreadable is `None`.
pub fn parse_retry_after(value: &str, now_ms: u64) -> Option<u64> {
    let value = trim_http_whitespace(value);
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return number(value).map(|seconds| seconds.saturating_mul(1000));
    }
    let at = parse_http_date(value)?;
    Some(at.saturating_sub(now_ms))
}

/// An HTTP date (RFC 9110 §5.6.7: IMF-fixdate, RFC 850 or asctime) as milliseconds since the
/// epoch, read by httpdate with two allowances its strictness leaves out and the guard kept
/// before it: a leap second (`23:59:60`, the next day's first second) and a weekday that is not
/// the date's own (the date is what the server means; nothing reads the weekday).
pub fn parse_http_date(value: &str) -> Option<u64> {
    match value.find(LEAP_SECOND) {
        Some(at) => {
            let second_before = [&value[..at], ":59 ", &value[at + LEAP_SECOND.len()..]].concat();
            any_weekday(&second_before)?.checked_add(1000)
        }
        None => any_weekday(value),
    }
}

/// The seconds field of a leap second: the time is followed by a space in every form.
const LEAP_SECOND: &str = ":60 ";

/// httpdate's reading of `value`; if it refuses the weekday, its reading with the date's own.
fn any_weekday(value: &str) -> Option<u64> {
    const SHORT: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const LONG: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    if let Some(at) = httpdate_ms(value) {
        return Some(at);
    }
    let (day, rest) = value.split_at(value.find([',', ' '])?);
    let names = if day.len() == 3 { SHORT } else { LONG };
    if !names.contains(&day) {
        return None;
    }
    names
        .iter()
        .filter(|name| **name != day)
        .find_map(|name| httpdate_ms(&[name, rest].concat()))
}

fn httpdate_ms(value: &str) -> Option<u64> {
    let at = httpdate::parse_http_date(value).ok()?;
    let since = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}

/// `value` without leading and trailing spaces and tabs (HTTP's optional whitespace).
fn trim_http_whitespace(value: &str) -> &str {
    value.trim_matches([' ', '\t'])
}

/// A run of ASCII digits (nothing else) as a number; `None` if empty or too long for u64.
fn number(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {

    use super::*;

    use crate::core::doubles::SequenceRandom;

    #[test]
    fn http_dates_in_all_three_forms() {
        // 784111777 s: the RFC's own example, Sun, 06 Nov 1994 08:49:37 GMT.
        let expected = Some(784_111_777_000);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), expected);
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 23:59:59 GMT"),
            Some(1_835_481_599_000)
        );
        // RFC 850's two-digit years: 00-69 are 2000-2069, 70-99 are 1970-1999.
        assert_eq!(
            parse_http_date("Sunday, 07-Nov-27 08:49:37 GMT"),
            parse_http_date("Sun, 07 Nov 2027 08:49:37 GMT")
        );
        assert_eq!(
            parse_http_date("Wednesday, 01-Jan-69 00:00:00 GMT"),
            Some(3_124_224_000_000)
        );
        assert_eq!(parse_http_date("Thursday, 01-Jan-70 00:00:00 GMT"), Some(0));
        // The last second of each field is in range; one more is not.
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 23:59:60 GMT"),
            Some(784_166_400_000)
        );
        // A leap second and another weekday in each form (httpdate alone refuses both).
        assert_eq!(
            parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777_000)
        );
        assert_eq!(
            parse_http_date("Monday, 06-Nov-94 23:59:60 GMT"),
            Some(784_166_400_000)
        );
        assert_eq!(
            parse_http_date("Mon Nov  6 23:59:60 1994"),
            Some(784_166_400_000)
        );
        // Not a weekday's name, or a name in the other form: unreadable.
        assert_eq!(parse_http_date("Xyz, 06 Nov 1994 08:49:37 GMT"), None);
        assert_eq!(parse_http_date("Mon, 06-Nov-94 08:49:37 GMT"), None);
        for bad in [
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 0 08:49:37 GMT",
            "Sun, 06 Nov 10000 08:49:37 GMT",
            // Digits only in every field (Rust's integer parser would take a sign).
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:+9:37 GMT",
            "",
            "tomorrow",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37:01 GMT",
            "Sun, 06 Nov -5 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn retry_after_seconds_or_date() {
        let now = 784_111_777_000;
        assert_eq!(parse_retry_after("120", now), Some(120_000));
        assert_eq!(parse_retry_after(" 0 ", now), Some(0));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now),
            Some(3000)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:30 GMT", now),
            Some(0),
            "a date in the past"
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("1.5", now), None);
        // Digits only: Rust's integer parser would take a sign.
        assert_eq!(parse_retry_after("+5", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            None,
            "overflow"
        );
    }

    #[test]
    fn full_jitter_grows_exponentially_up_to_the_cap() {
        let policy = RetryPolicy {
            attempts: 10,
            base_delay_ms: 200,
            max_delay_ms: 5000,
        };
        // Just below 1: the ceiling of each step.
        let mut top = SequenceRandom::new(vec![0.999_999]);
        let ceilings: Vec<u64> = (1..=7)
            .map(|sent| policy.delay_ms(sent, None, 0, &mut top))
            .collect();
        assert_eq!(ceilings, [199, 399, 799, 1599, 3199, 4999, 4999]);
        let mut half = SequenceRandom::new(vec![0.5]);
        assert_eq!(policy.delay_ms(1, None, 0, &mut half), 100);
        assert_eq!(policy.delay_ms(3, None, 0, &mut half), 400);
        let mut zero = SequenceRandom::new(vec![0.0]);
        assert_eq!(policy.delay_ms(2, None, 0, &mut zero), 0);
        // A broken random source cannot push the delay past the ceiling.
        let mut broken = SequenceRandom::new(vec![7.0, f64::NAN, -1.0]);
        for _ in 0..3 {
            assert_eq!(policy.delay_ms(1, None, 0, &mut broken), 0);
        }
        assert!(policy.delay_ms(u32::MAX, None, 0, &mut top) <= 5000);
    }

    #[test]
    fn retry_after_lengthens_the_backoff_but_never_shortens_it() {
        let policy = RetryPolicy::default();
        let mut r = SequenceRandom::new(vec![0.5]);
        assert_eq!(policy.delay_ms(1, Some("2"), 0, &mut r), 2000);
        assert_eq!(policy.delay_ms(1, Some("3600"), 0, &mut r), 5000);
        assert_eq!(
            policy.delay_ms(1, Some("Thu, 01 Jan 1970 00:00:01 GMT"), 0, &mut r),
            1000
        );
        assert_eq!(
            policy.delay_ms(1, Some("garbage"), 0, &mut r),
            100,
            "unreadable: backoff"
        );
        // `Retry-After: 0` or a date in the past: the backoff as without the hint.
        assert_eq!(policy.delay_ms(1, Some("0"), 0, &mut r), 100);
        assert_eq!(policy.delay_ms(3, Some("0"), 0, &mut r), 400);
        assert_eq!(
            policy.delay_ms(3, Some("Thu, 01 Jan 1970 00:00:01 GMT"), 5000, &mut r),
            400
        );
        // A hint shorter than the backoff: the backoff.
        assert_eq!(policy.delay_ms(5, Some("1"), 0, &mut r), 1600);
    }
}
