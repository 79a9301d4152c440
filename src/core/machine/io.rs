//! What crosses between the machine and its executor, each shape declared once: the ids of
//! the executor's live handles, the events the machine hears ([`Event`]) and the effects it
//! asks for ([`Effect`]).
//!
//! The machine allocates the ids of what it asks for (requests, timers, locks); the executor
//! allocates the ids of what the app hands it (a promise to settle, an `AbortSignal` it
//! listens to).

use super::super::cancel_flow::CancelOutcome;
use super::super::endpoints::Limit;
use super::super::query::QueryOutcome;
use super::super::tabs::{Change, Message, Source};
use super::super::wait_outcome::WaitOutcome;

macro_rules! ids {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
            pub struct $name(pub u32);
        )*
    };
}

ids! {
    /// A guard of the page.
    GuardId,
    /// A request the machine sent.
    ReqId,
    /// A timer the machine set.
    TimerId,
    /// A promise the app holds, which the machine settles.
    PromiseId,
    /// An `AbortSignal` of the app's, which the executor listens to.
    SignalId,
    /// A Web Lock the machine asked for.
    LockId,
}

/// An HTTP method the guard sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Options,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Options => "OPTIONS",
        }
    }
}

/// A request to send: with the guard's headers and `fetch`, `credentials: "same-origin"`, a
/// JSON body with `Content-Type: application/json`, and a signal of its own that
/// [`Effect::End`] aborts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub req: ReqId,
    pub guard: GuardId,
    pub method: Method,
    pub url: String,
    pub body: Option<String>,
    /// Sent with `keepalive`: it outlives the page (a stop, a cancel).
    pub keepalive: bool,
}

/// What `fetch` answered, as far as the guard reads it without waiting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// `fetch` followed a redirect to reach it (another page's answer).
    pub redirected: bool,
    pub content_type: Option<String>,
    pub content_length: Option<String>,
    pub retry_after: Option<String>,
    pub allow: Option<String>,
}

impl Answer {
    /// Whether its body is the endpoint's JSON: said so by its `Content-Type`, and not another
    /// page's (reached by following a redirect).
    pub fn is_json(&self) -> bool {
        !self.redirected
            && self
                .content_type
                .as_deref()
                .is_some_and(super::super::endpoints::is_json_type)
    }
}

/// What reading a body gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Text(String),
    /// The first [`Limit::Page`] characters of a longer page.
    Cut(String),
    /// Longer than its limit.
    TooLong,
    /// `text()` is missing, threw, rejected, or gave no string; or (a result) it is not JSON.
    Broken,
    /// A result ([`Limit::Result`]) parsed as JSON and kept by the executor, for
    /// [`Settled::Query`] to hand over.
    Kept,
}

/// A `storage` event from another tab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageEvent {
    /// `None` after `localStorage.clear()`.
    pub key: Option<String>,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// What the machine hears.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A request was answered (its body not read yet).
    Answered(ReqId, Answer),
    /// A request got no answer: `fetch` is missing, threw, rejected, or gave no status.
    NoAnswer(ReqId),
    /// The body [`Effect::Read`] asked for.
    Body(ReqId, Body),
    Timer(TimerId),
    /// An app's signal aborted.
    Aborted(SignalId),
    Storage(StorageEvent),
    /// A message on the namespace's channel.
    Message {
        namespace: String,
        message: Message,
    },
    /// The page's `pagehide` (`persisted`: into the back/forward cache).
    PageHide {
        persisted: bool,
    },
    /// The page's `pageshow` (`persisted`: out of the back/forward cache).
    PageShow {
        persisted: bool,
    },
    /// A lock [`Effect::Lock`] asked for is held.
    Locked(LockId),
    /// A lock [`Effect::Lock`] asked for cannot be had: the page has no lock manager (an
    /// insecure context, an old browser), or it refused.
    NoLock(LockId),
    /// The app let the guard go (`free()`, or its JS object collected): as
    /// [`Machine::free`].
    Freed(GuardId),
}

/// What a promise settles with.
#[derive(Clone, Debug, PartialEq)]
pub enum Settled {
    Cancel(CancelOutcome),
    Wait(WaitOutcome),
    /// A query's outcome; `done`'s result is what the request named kept ([`Body::Kept`]).
    Query(Box<QueryOutcome>, Option<ReqId>),
    /// `undefined` (`logout()`'s `stopped`).
    Nothing,
}

/// What the machine asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    Send(Request),
    /// Read the answer's body within `limit` (a result is parsed and kept:
    /// [`Body::Kept`]).
    Read {
        req: ReqId,
        limit: Limit,
    },
    /// The request is done with: abort it (its `fetch`, or its body still coming); with
    /// `drain`, an answer whose body was not read first lets it arrive (within
    /// [`UNREAD_BODY_MS`](super::super::endpoints::UNREAD_BODY_MS)). What it kept goes.
    End {
        req: ReqId,
        drain: bool,
    },
    SetTimer {
        timer: TimerId,
        ms: u64,
    },
    ClearTimer(TimerId),
    Settle {
        promise: PromiseId,
        value: Settled,
    },
    /// Stop listening to the app's signal.
    Forget(SignalId),
    /// Tell the guard's listeners (`onChange` hears `other_tab` only).
    Notify {
        guard: GuardId,
        change: Change,
        source: Source,
    },
    /// Post on the namespace's channel to the other tabs (`shared`: the change is in the
    /// origin's storage too, which guards of earlier versions read).
    Post {
        namespace: String,
        message: Message,
        shared: bool,
    },
    /// Guard `id` is gone (freed, and nothing of it runs any more): what the executor keeps
    /// for it goes.
    Gone(GuardId),
    /// Ask for the Web Lock `name` (held until [`Effect::Unlock`]).
    Lock {
        lock: LockId,
        name: String,
    },
    Unlock(LockId),
}
