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
mod tests;
