//! Following Superset's event stream (`guard.follow()`): the rules, without a browser. What
//! the poll asks from (the cursors of both contracts), how long it waits (Superset's cadence,
//! backing off while nothing changes, with jitter after failures), and what an answer means:
//! read it, stop until the next login, start again from a fresh cursor, or try again later.
//! The browser shell (`src/web/follow.rs`: leader election, the timer, `fetch`) runs these
//! rules; a page of the async_event stream is read by [`pages`](super::pages).
//!
//! Cursors (Superset's source, `superset/async_events/`, `superset/tasks/api.py`):
//! - async_event: Superset's own `last_async_event_id` (a Redis stream id, `<ms>-<seq>`), sent
//!   as `?last_id=`; the events after it are answered.
//! - task: the ISO date-time of the `202` bodies and of each `status_changes` answer, sent as
//!   `?cursor=`; the rows changed at or after it are answered, the cursor floored to whole
//!   seconds (so a change may be answered twice: applying it again changes nothing).

use std::cmp::Ordering;

use serde::{Deserialize, Deserializer};

use super::error::GuardError;
use super::options::{refuse, unknown_option, whole};
use super::random::Random;
use super::response::Contract;
use super::retry::{jitter, parse_retry_after};
use super::task::StatusChange;
use super::wire::{self, Field, Object};

/// Superset's polling delay (`GLOBAL_ASYNC_QUERIES_POLLING_DELAY`, and the task framework's
/// first interval).
pub const DEFAULT_INTERVAL_MS: u64 = 500;
/// The task framework frontend's longest interval.
pub const DEFAULT_MAX_INTERVAL_MS: u64 = 30_000;
/// The shortest interval an app may ask for: below it a poll would hardly ever be quiet.
pub const MIN_INTERVAL_MS: u64 = 100;
/// The longest interval an app may ask for.
pub const MAX_INTERVAL_MS: u64 = 600_000;

/// How often to poll: `intervalMs` after an answer that changed a record, doubling while
/// nothing changes up to `maxIntervalMs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowOptions {
    pub interval_ms: u64,
    pub max_interval_ms: u64,
}

impl Default for FollowOptions {
    fn default() -> Self {
        Self {
            interval_ms: DEFAULT_INTERVAL_MS,
            max_interval_ms: DEFAULT_MAX_INTERVAL_MS,
        }
    }
}

/// The options of `follow(options?)`, every one optional.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(
    all(target_arch = "wasm32", feature = "follow"),
    derive(tsify::Tsify),
    tsify(rename = "FollowOptions")
)]
pub struct FollowWire {
    /// The wait after an answer that changed a record, in ms (100 to 600000). Default 500,
    /// Superset's polling delay.
    #[cfg_attr(
        all(target_arch = "wasm32", feature = "follow"),
        tsify(type = "number")
    )]
    interval_ms: Field<Option<f64>>,
    /// The longest wait, which the wait doubles up to while nothing changes, in ms
    /// (`intervalMs` to 600000). Default 30000.
    #[cfg_attr(
        all(target_arch = "wasm32", feature = "follow"),
        tsify(type = "number")
    )]
    max_interval_ms: Field<Option<f64>>,
}

const INTERVAL_RULE: &str =
    "`intervalMs` must be a whole number of milliseconds from 100 to 600000";
const MAX_INTERVAL_RULE: &str =
    "`maxIntervalMs` must be a whole number of milliseconds from `intervalMs` to 600000";

impl FollowOptions {
    /// Reads `follow(options?)`'s options, once: `null`/`undefined` means the defaults; unknown
    /// keys and values breaking a rule are refused (`invalid_options`).
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        let w: Option<Object<FollowWire>> =
            wire::read(value, "expected an object, null or undefined").map_err(|m| {
                unknown_option(&m, " of follow").unwrap_or(GuardError::InvalidOptions(m))
            })?;
        let w = w.map(|Object(w)| w).unwrap_or_default();
        let mut o = Self::default();
        let interval = w
            .interval_ms
            .nullable()
            .map_err(|_| refuse(INTERVAL_RULE))?;
        if let Some(v) = interval {
            o.interval_ms =
                whole(v, MIN_INTERVAL_MS, MAX_INTERVAL_MS).ok_or_else(|| refuse(INTERVAL_RULE))?;
            o.max_interval_ms = o.max_interval_ms.max(o.interval_ms);
        }
        let max = w
            .max_interval_ms
            .nullable()
            .map_err(|_| refuse(MAX_INTERVAL_RULE))?;
        if let Some(v) = max {
            o.max_interval_ms = whole(v, o.interval_ms, MAX_INTERVAL_MS)
                .ok_or_else(|| refuse(MAX_INTERVAL_RULE))?;
        }
        Ok(o)
    }
}

/// Who holds `follow()` on: each `follow()` call (the app's, a provider's) until its `stop`,
/// and a guard's waiters while anything waits. Stopping one holder stops only that one: the
/// loop polls while anybody holds it, at the fastest cadence any holder asks for (a holder that
/// gave no options asks for Superset's: 500 ms, up to 30 s), so no holder's slower cadence
/// keeps another waiting.
#[derive(Debug, Default)]
pub struct Holders {
    held: Vec<(u32, Option<FollowOptions>)>,
    next: u32,
}

impl Holders {
    /// A new holder (`options`: its cadence, or `None` for Superset's); its id.
    pub fn hold(&mut self, options: Option<FollowOptions>) -> u32 {
        self.next = self.next.wrapping_add(1);
        self.held.push((self.next, options));
        self.next
    }

    /// Lets holder `id` go; whether it held (a second `stop` is harmless).
    pub fn release(&mut self, id: u32) -> bool {
        let before = self.held.len();
        self.held.retain(|(h, _)| *h != id);
        self.held.len() != before
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The cadence: the shortest interval and the shortest longest wait any holder asked for
    /// (the defaults when nobody holds it). The result keeps `interval_ms <= max_interval_ms`:
    /// the holder with the shortest longest wait asked for an interval no longer than it.
    pub fn options(&self) -> FollowOptions {
        let mut asked = self.held.iter().map(|(_, o)| o.unwrap_or_default());
        let Some(first) = asked.next() else {
            return FollowOptions::default();
        };
        asked.fold(first, |a, b| FollowOptions {
            interval_ms: a.interval_ms.min(b.interval_ms),
            max_interval_ms: a.max_interval_ms.min(b.max_interval_ms),
        })
    }
}

/// The wait before each poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cadence {
    options: FollowOptions,
    /// The wait after the next quiet answer.
    quiet_ms: u64,
    /// Failures in a row.
    failures: u32,
}

impl Cadence {
    pub fn new(options: FollowOptions) -> Self {
        Self {
            options,
            quiet_ms: options.interval_ms,
            failures: 0,
        }
    }

    /// The wait the next quiet answer gets: what a change may wait to be seen, less the
    /// request's own time.
    pub fn current_ms(&self) -> u64 {
        self.quiet_ms
    }

    /// An answer changed a record: the next poll after the shortest interval, as may the next
    /// change be near.
    pub fn changed(&mut self) -> u64 {
        self.failures = 0;
        self.quiet_ms = self.options.interval_ms;
        self.quiet_ms
    }

    /// An answer with nothing new: this interval, and the next one twice as long, up to the
    /// longest.
    pub fn quiet(&mut self) -> u64 {
        self.failures = 0;
        let wait = self.quiet_ms;
        self.quiet_ms = wait.saturating_mul(2).min(self.options.max_interval_ms);
        wait
    }

    /// Whether the last answer was a failure: its backoff stands.
    pub fn failing(&self) -> bool {
        self.failures > 0
    }

    /// Something new to follow woke the wait (a record written by any tab, a login): how long
    /// from `now_ms` to wait before the next poll. While failures back off, the backoff stands
    /// (what is left of it until `backoff_until`); otherwise the shortest interval again, but
    /// no sooner than `intervalMs` after the last poll (`last_poll_ms`), so that a burst of
    /// records makes one poll, not one each.
    pub fn woken(
        &mut self,
        now_ms: u64,
        last_poll_ms: Option<u64>,
        backoff_until: Option<u64>,
    ) -> u64 {
        if self.failing() {
            return backoff_until.map_or(0, |until| until.saturating_sub(now_ms));
        }
        self.restart();
        last_poll_ms.map_or(0, |at| {
            self.options
                .interval_ms
                .saturating_sub(now_ms.saturating_sub(at))
        })
    }

    /// Something new to follow (a record written by any tab, a new leader): back to the
    /// shortest interval.
    pub fn restart(&mut self) {
        self.failures = 0;
        self.quiet_ms = self.options.interval_ms;
    }

    /// A request that failed: a random wait from half to all of `interval * 2^failures`,
    /// capped at the longest interval ("equal jitter": tabs of many browsers do not come back
    /// together, and no wait is shorter than half the backoff), or the server's `Retry-After`
    /// where that is longer (capped at the longest interval too). A hint never shortens the
    /// backoff: `Retry-After: 0`, or a date in the past, backs off as an answer without one.
    pub fn failed(
        &mut self,
        retry_after: Option<&str>,
        now_ms: u64,
        random: &mut dyn Random,
    ) -> u64 {
        self.failures = self.failures.saturating_add(1);
        let max = self.options.max_interval_ms;
        let ceiling = self
            .options
            .interval_ms
            .saturating_mul(1u64 << self.failures.min(32))
            .min(max);
        let backoff = jitter(ceiling / 2, ceiling, random);
        let hint = retry_after.and_then(|h| parse_retry_after(h, now_ms));
        backoff.max(hint.unwrap_or(0)).min(max)
    }
}

/// What a poll's answer means, from its status code and content type alone (a server's
/// message text is not a contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollAnswer {
    /// A 2xx with a JSON body: read it.
    Read,
    /// 401: the server's session is gone: stop following until the next `login`.
    SignedOut,
    /// The task contract's 400 to a cursor (the endpoint's one 400, "Invalid cursor"): start
    /// again from a fresh cursor, and read the running tasks' statuses so nothing is lost.
    CursorRefused,
    /// 403: a role without the permission (7.x: the Task permissions): stop following until
    /// the next `login` (never retried).
    Forbidden,
    /// 404: the stream is not there (the task framework switched off, whose routes all answer
    /// 404; a Superset without the async_event stream): stop following it for good.
    Absent,
    /// Anything else (a 5xx, an HTML page, a redirect): back off and try again.
    Failed,
}

/// What the answer `status` (with a JSON body or not) to a poll of `contract` means;
/// `sent_cursor` says whether the request carried a cursor.
pub fn classify_poll(
    status: u16,
    is_json: bool,
    contract: Contract,
    sent_cursor: bool,
) -> PollAnswer {
    match status {
        200..=299 if is_json => PollAnswer::Read,
        401 => PollAnswer::SignedOut,
        403 => PollAnswer::Forbidden,
        404 => PollAnswer::Absent,
        400 if contract == Contract::Task && sent_cursor => PollAnswer::CursorRefused,
        _ => PollAnswer::Failed,
    }
}

/// Most digits of each part of a Redis stream id (a `u64`).
const MAX_ID_DIGITS: usize = 20;

/// A Redis stream id, `<ms>-<seq>`: the async_event stream's cursor (`last_id`). Ordered as
/// Redis orders them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventId {
    text: String,
    ms: u64,
    seq: u64,
}

impl EventId {
    /// `text` if it is a stream id: two whole numbers of at most 20 digits each (each a `u64`),
    /// joined by `-`.
    pub fn parse(text: &str) -> Option<Self> {
        let (ms, seq) = text.split_once('-')?;
        let part = |p: &str| {
            let digits =
                !p.is_empty() && p.len() <= MAX_ID_DIGITS && p.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| p.parse::<u64>().ok()).flatten()
        };
        Some(Self {
            ms: part(ms)?,
            seq: part(seq)?,
            text: text.to_owned(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl Ord for EventId {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.ms, self.seq).cmp(&(other.ms, other.seq))
    }
}

impl PartialOrd for EventId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The task contract's cursor: an ISO date-time as Superset writes it
/// (`2026-09-01T10:00:00`, perhaps with a fraction and an offset), floored to whole seconds
/// as the server floors it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCursor(String);

impl TaskCursor {
    /// `text` floored to whole seconds, if it is `YYYY-MM-DDTHH:MM:SS`, then at most a
    /// fraction of 1 to 9 digits, then at most `Z` or an offset `±HH:MM`. The fraction goes;
    /// the offset stays.
    pub fn parse(text: &str) -> Option<Self> {
        const SHAPE: &[u8; 19] = b"0000-00-00T00:00:00";
        let bytes = text.as_bytes();
        let head = bytes.get(..19)?;
        let shaped = head.iter().zip(SHAPE).all(|(&b, &s)| {
            if s == b'0' {
                b.is_ascii_digit()
            } else {
                b == s
            }
        });
        if !shaped {
            return None;
        }
        let mut rest = text.get(19..)?;
        if let Some(fraction) = rest.strip_prefix('.') {
            let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if !(1..=9).contains(&digits) {
                return None;
            }
            rest = fraction.get(digits..)?;
        }
        let offset = rest.is_empty()
            || rest == "Z"
            || (rest.len() == 6
                && matches!(rest.as_bytes().first(), Some(b'+' | b'-'))
                && rest.bytes().enumerate().skip(1).all(|(i, b)| {
                    if i == 3 {
                        b == b':'
                    } else {
                        b.is_ascii_digit()
                    }
                }));
        if !offset {
            return None;
        }
        let mut floored = text.get(..19)?.to_owned();
        floored.push_str(rest);
        Some(Self(floored))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The earlier of two cursors, so that following from it misses neither's changes; when
    /// their offsets differ they cannot be compared as text, and `self` stays.
    pub fn earlier(self, other: TaskCursor) -> TaskCursor {
        let (a, b) = (self.0.split_at(19), other.0.split_at(19));
        if a.1 == b.1 && b.0 < a.0 {
            other
        } else {
            self
        }
    }
}

impl<'de> Deserialize<'de> for TaskCursor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        TaskCursor::parse(&text).ok_or_else(|| serde::de::Error::custom("not a task cursor"))
    }
}

/// A `status_changes` answer, `{ statuses: { <uuid>: { status, progress } }, cursor }`: its
/// changes, read as `applyStatusChanges` reads them, and the cursor to ask from next.
#[derive(Debug, PartialEq)]
pub struct ChangesPage {
    pub changes: Vec<StatusChange>,
    /// The answer's cursor, floored; `None` when it has none that is a cursor (the one sent
    /// before stays).
    pub cursor: Option<TaskCursor>,
}

impl ChangesPage {
    /// Reads an answer: refused whole as [`StatusChange::read_all`] refuses it. `value` makes
    /// a deserializer of it each time it is called (read twice: the changes, then the cursor).
    pub fn read_with<'de, D: Deserializer<'de>>(value: impl Fn() -> D) -> Result<Self, GuardError> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct CursorWire {
            cursor: Field<TaskCursor>,
        }
        let changes = StatusChange::read_all(value())?;
        let cursor = wire::read::<CursorWire, D>(value(), "")
            .ok()
            .and_then(|w| w.cursor.valid());
        Ok(Self { changes, cursor })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_runs_while_anybody_holds_it_at_the_fastest_cadence_asked() {
        let mut holders = Holders::default();
        let slow = FollowOptions {
            interval_ms: 600_000,
            max_interval_ms: 600_000,
        };
        let quick = FollowOptions {
            interval_ms: 100,
            max_interval_ms: 200,
        };
        let app = holders.hold(Some(slow));
        assert_eq!(holders.options(), slow, "alone, its own");
        let waits = holders.hold(None);
        assert_eq!(
            holders.options(),
            FollowOptions::default(),
            "a wait is not kept waiting by the app's slow cadence"
        );
        let provider = holders.hold(Some(quick));
        assert_eq!(holders.options(), quick);
        assert!(holders.release(provider));
        assert!(holders.release(app));
        assert!(!holders.release(app), "a second stop is harmless");
        assert_eq!(holders.options(), FollowOptions::default());
        assert!(!holders.is_empty(), "the waits still hold it");
        assert!(holders.release(waits));
        assert!(holders.is_empty());
        let mixed = [
            Some(FollowOptions {
                interval_ms: 100,
                max_interval_ms: 600_000,
            }),
            Some(FollowOptions {
                interval_ms: 20_000,
                max_interval_ms: 20_000,
            }),
        ];
        for o in mixed {
            holders.hold(o);
        }
        let o = holders.options();
        assert_eq!((o.interval_ms, o.max_interval_ms), (100, 20_000));
    }
    use crate::core::doubles::SequenceRandom;
    use crate::core::quiet::Json;
    use serde_json::{json, Value};

    fn options(v: Value) -> Result<FollowOptions, GuardError> {
        FollowOptions::read(Json(&v))
    }

    #[test]
    fn options_default_to_supersets_cadence_and_keep_their_rules() {
        let defaults = FollowOptions {
            interval_ms: 500,
            max_interval_ms: 30_000,
        };
        assert_eq!(options(json!(null)).unwrap(), defaults);
        assert_eq!(options(json!({})).unwrap(), defaults);
        assert_eq!(
            options(json!({"intervalMs": null, "maxIntervalMs": null})).unwrap(),
            defaults
        );
        assert_eq!(
            options(json!({"intervalMs": 1000, "maxIntervalMs": 60000})).unwrap(),
            FollowOptions {
                interval_ms: 1000,
                max_interval_ms: 60_000
            }
        );
        // A longer interval than the default longest raises the longest with it.
        assert_eq!(
            options(json!({"intervalMs": 45000})).unwrap(),
            FollowOptions {
                interval_ms: 45_000,
                max_interval_ms: 45_000
            }
        );
        assert_eq!(
            options(json!({"intervalMs": 100})).unwrap().interval_ms,
            100
        );
        assert_eq!(
            options(json!({"maxIntervalMs": 600000}))
                .unwrap()
                .max_interval_ms,
            600_000
        );
        assert_eq!(
            options(json!({"maxIntervalMs": 500}))
                .unwrap()
                .max_interval_ms,
            500
        );
        for (bad, says) in [
            (json!({"intervalMs": 99}), "`intervalMs`"),
            (json!({"intervalMs": 600001}), "`intervalMs`"),
            (json!({"intervalMs": 500.5}), "`intervalMs`"),
            (json!({"intervalMs": "500"}), "`intervalMs`"),
            (json!({"maxIntervalMs": 499}), "`maxIntervalMs`"),
            (json!({"maxIntervalMs": 600001}), "`maxIntervalMs`"),
            (
                json!({"intervalMs": 2000, "maxIntervalMs": 1999}),
                "`maxIntervalMs`",
            ),
            (json!({"maxIntervalMs": true}), "`maxIntervalMs`"),
            (json!({"interval": 500}), "unknown option `interval`"),
            (json!(5), "expected an object"),
        ] {
            let err = options(bad.clone()).unwrap_err();
            assert_eq!(err.code(), "invalid_options", "{bad}");
            assert!(err.to_string().contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn the_cadence_doubles_while_quiet_and_starts_over_on_a_change() {
        let mut c = Cadence::new(FollowOptions::default());
        let quiet: Vec<u64> = (0..9).map(|_| c.quiet()).collect();
        assert_eq!(
            quiet,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        assert_eq!(c.current_ms(), 30_000);
        assert_eq!(c.changed(), 500);
        assert_eq!(c.current_ms(), 500);
        assert_eq!(c.quiet(), 500);
        assert_eq!(c.quiet(), 1000);
        c.restart();
        assert_eq!(c.quiet(), 500);
    }

    #[test]
    fn failures_back_off_with_equal_jitter_and_honour_retry_after() {
        let mut c = Cadence::new(FollowOptions::default());
        let mut low = SequenceRandom::new(vec![0.0]);
        let mut high = SequenceRandom::new(vec![0.999_999]);
        // Ceilings 1 s, 2 s, 4 s …: a wait from half of it to all of it.
        assert_eq!(c.failed(None, 0, &mut low), 500);
        assert_eq!(c.failed(None, 0, &mut high), 1999);
        assert_eq!(c.failed(None, 0, &mut low), 2000);
        for _ in 0..40 {
            c.failed(None, 0, &mut high);
        }
        assert_eq!(c.failed(None, 0, &mut high), 29_999);
        assert_eq!(c.failed(None, 0, &mut low), 15_000);
        // A random source out of range counts as 0, not as a wait past the ceiling.
        let mut broken = SequenceRandom::new(vec![f64::NAN, 7.0, -1.0]);
        for _ in 0..3 {
            assert_eq!(c.failed(None, 0, &mut broken), 15_000);
        }
        // The server's hint lengthens the wait, capped at the longest interval, and never
        // shortens it: `Retry-After: 0` or a date in the past backs off all the same.
        assert_eq!(c.failed(Some("86400"), 0, &mut high), 30_000);
        assert_eq!(c.failed(Some("soon"), 0, &mut low), 15_000);
        assert_eq!(c.failed(Some("0"), 0, &mut low), 15_000);
        assert_eq!(
            c.failed(Some("Thu, 01 Jan 1970 00:00:01 GMT"), 5000, &mut high),
            29_999
        );
        let mut fresh = Cadence::new(FollowOptions::default());
        assert_eq!(fresh.failed(Some("3"), 0, &mut low), 3000);
        assert_eq!(fresh.failed(Some("0"), 0, &mut low), 1000);
        // However the server answers, failures in a row reach the longest interval.
        let waits: Vec<u64> = (0..8)
            .map(|_| fresh.failed(Some("0"), 0, &mut low))
            .collect();
        assert_eq!(
            waits,
            [2000, 4000, 8000, 15_000, 15_000, 15_000, 15_000, 15_000]
        );
        // An answer read ends the failures: the backoff starts over.
        c.quiet();
        assert_eq!(c.failed(None, 0, &mut low), 500);
        c.changed();
        assert_eq!(c.failed(None, 0, &mut low), 500);
        c.failed(None, 0, &mut low);
        c.restart();
        assert_eq!(c.failed(None, 0, &mut low), 500);
    }

    #[test]
    fn a_change_never_brings_a_poll_into_a_backoff_or_within_the_interval() {
        let mut c = Cadence::new(FollowOptions::default());
        let mut low = SequenceRandom::new(vec![0.0]);
        // Healthy: the next poll no sooner than 500 ms after the last one.
        assert_eq!(c.woken(10_000, None, None), 0, "never polled: at once");
        assert_eq!(c.woken(10_000, Some(9_900), None), 400);
        assert_eq!(c.woken(10_000, Some(9_000), None), 0);
        // A quiet stretch had doubled the interval: a change starts it over.
        c.quiet();
        c.quiet();
        c.woken(10_000, Some(0), None);
        assert_eq!(c.current_ms(), 500);
        // Failing: what is left of the backoff stands, however many changes come.
        let wait = c.failed(Some("0"), 10_000, &mut low);
        assert!(c.failing());
        let until = 10_000 + wait;
        for now in [10_001, 10_200, until - 1] {
            assert_eq!(c.woken(now, Some(10_000), Some(until)), until - now);
        }
        assert_eq!(c.woken(until + 5, Some(10_000), Some(until)), 0);
        // An answer read ends the failures.
        c.quiet();
        assert!(!c.failing());
        assert_eq!(c.woken(20_000, Some(19_800), Some(until)), 300);
    }

    #[test]
    fn answers_are_told_apart_by_status_and_content_type() {
        use Contract::{AsyncEvent, Task};
        use PollAnswer::*;
        for contract in [AsyncEvent, Task] {
            assert_eq!(classify_poll(200, true, contract, true), Read);
            assert_eq!(classify_poll(204, true, contract, false), Read);
            // Vite's dev server answers an unknown GET with its HTML page.
            assert_eq!(classify_poll(200, false, contract, true), Failed);
            assert_eq!(classify_poll(401, true, contract, true), SignedOut);
            assert_eq!(classify_poll(401, false, contract, false), SignedOut);
            for status in [301, 429, 500, 502, 503] {
                assert_eq!(classify_poll(status, true, contract, true), Failed);
            }
            // A role without the permission: stopped until the next login, never retried.
            assert_eq!(classify_poll(403, true, contract, true), Forbidden);
            // The stream is not there (the task framework switched off answers 404 on every
            // task route, with JSON; a Superset without the route, its HTML page).
            assert_eq!(classify_poll(404, true, contract, true), Absent);
            assert_eq!(classify_poll(404, false, contract, false), Absent);
        }
        assert_eq!(classify_poll(400, true, Task, true), CursorRefused);
        assert_eq!(classify_poll(400, false, Task, true), CursorRefused);
        // Without a cursor there is no cursor to refuse; the event stream has none to refuse.
        assert_eq!(classify_poll(400, true, Task, false), Failed);
        assert_eq!(classify_poll(400, true, AsyncEvent, true), Failed);
    }

    #[test]
    fn event_ids_are_redis_stream_ids_in_redis_order() {
        let id = |s: &str| EventId::parse(s).unwrap();
        assert_eq!(id("1607477697866-0").as_str(), "1607477697866-0");
        assert!(id("1607477697866-1") > id("1607477697866-0"));
        assert!(id("1607477697867-0") > id("1607477697866-9"));
        assert!(id("10-0") > id("9-5"));
        assert!(id("18446744073709551615-18446744073709551615") > id("1-1"));
        for bad in [
            "",
            "-",
            "1",
            "1-",
            "-1",
            "1-2-3",
            "a-1",
            "1-a",
            " 1-1",
            "1-1 ",
            "+1-1",
            "1-+1",
            "18446744073709551616-0",
            "0-000000000000000000001",
            "1_1",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn task_cursors_are_floored_to_whole_seconds() {
        let c = |s: &str| TaskCursor::parse(s).map(|c| c.0);
        assert_eq!(
            c("2026-09-01T10:00:00").as_deref(),
            Some("2026-09-01T10:00:00")
        );
        assert_eq!(
            c("2026-09-01T10:00:00.999").as_deref(),
            Some("2026-09-01T10:00:00")
        );
        assert_eq!(
            c("2026-09-01T10:00:00.123456789Z").as_deref(),
            Some("2026-09-01T10:00:00Z")
        );
        assert_eq!(
            c("2026-09-01T10:00:59.5+02:00").as_deref(),
            Some("2026-09-01T10:00:59+02:00")
        );
        assert_eq!(
            c("2026-09-01T10:00:00-05:30").as_deref(),
            Some("2026-09-01T10:00:00-05:30")
        );
        for bad in [
            "",
            "2026-09-01",
            "2026-09-01 10:00:00",
            "2026-09-01T10:00",
            "2026-09-01T10:00:00.",
            "2026-09-01T10:00:00.1234567890",
            "2026-09-01T10:00:00z",
            "2026-09-01T10:00:00+0200",
            "2026-09-01T10:00:00+02:0a",
            "2026-09-01T10:00:00+02:00:00",
            "2026-09-01T10:00:00.5&task_type=x",
            "２026-09-01T10:00:00",
            "now",
        ] {
            assert_eq!(c(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_earlier_cursor_is_kept_when_they_compare() {
        let c = |s: &str| TaskCursor::parse(s).unwrap();
        let early = c("2026-09-01T10:00:00");
        let late = c("2026-09-01T10:00:05.7");
        assert_eq!(early.clone().earlier(late.clone()), early);
        assert_eq!(late.clone().earlier(early.clone()), early);
        let utc = c("2026-09-01T09:00:00Z");
        assert_eq!(late.clone().earlier(utc.clone()), late);
        assert_eq!(
            utc.clone().earlier(c("2026-09-01T08:00:00Z")).as_str(),
            "2026-09-01T08:00:00Z"
        );
        assert_eq!(
            serde_json::from_value::<TaskCursor>(json!("2026-09-01T10:00:00.25")).unwrap(),
            early
        );
        assert!(serde_json::from_value::<TaskCursor>(json!("tomorrow")).is_err());
        assert!(serde_json::from_value::<TaskCursor>(json!(5)).is_err());
    }

    #[test]
    fn a_changes_page_keeps_its_changes_and_its_floored_cursor() {
        const A: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";
        let read = |v: Value| ChangesPage::read_with(|| Json(&v));
        let page = read(
            json!({"statuses": {A: {"status": "success", "progress": 1}},
                               "cursor": "2026-09-01T10:00:01.734"}),
        )
        .unwrap();
        assert_eq!(page.changes.len(), 1);
        assert_eq!(page.cursor.unwrap().as_str(), "2026-09-01T10:00:01");
        let first = read(json!({"statuses": {}, "cursor": "2026-09-01T10:00:00"})).unwrap();
        assert!(first.changes.is_empty());
        assert!(first.cursor.is_some());
        for no_cursor in [
            json!({"statuses": {}}),
            json!({"statuses": {}, "cursor": null}),
            json!({"statuses": {}, "cursor": 17}),
            json!({"statuses": {}, "cursor": "yesterday"}),
        ] {
            assert_eq!(read(no_cursor.clone()).unwrap().cursor, None, "{no_cursor}");
        }
        for bad in [
            json!({"cursor": "2026-09-01T10:00:00"}),
            json!([]),
            json!(null),
        ] {
            assert_eq!(read(bad).unwrap_err().code(), "invalid_job");
        }
    }
}
