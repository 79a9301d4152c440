//! `query()`'s rules: a chart's query from its request to its result, as a sans-IO machine
//! ([`QueryLife`]). The shell sends what a [`Step`] names and tells the machine what came back;
//! the machine says what that means, on every Superset:
//!
//! - `200` (synchronous, a cache hit, the task framework switched off): `done`, the body as the
//!   result;
//! - `202` with job metadata (6.1.0's `GLOBAL_ASYNC_QUERIES`): wait for the job as `waitFor`
//!   does, then read its `result_url`;
//! - `202` with `task_ids` (7.0, main): wait for the tasks, then send the same request again
//!   and take its `200` (Superset's warm cache), as Superset's own frontend does;
//! - `401`: `unauthenticated`; `403`: `refused` (`forbidden`), never retried; anything else:
//!   `failed` with the errors the body names.
//!
//! How a query is stopped where it is, and what each server can do about it, is the
//! machine's ([`machine`](super::machine)): a request in flight may be a synchronous query,
//! stopped by its `client_id` (`POST /api/v1/chart/data/stop`); a job or tasks being waited
//! for are cancelled through `cancel()`'s path, except what another waiter of the browser
//! still awaits; a result being read has nothing left to stop.

use serde::Serialize;
use serde_json::Value;

use super::chart::{is_result_url, ChartAnswer, StopResult};
use super::names::names;
use super::wait_input::WaitInput;
use super::wait_outcome::{WaitOutcome, WaitRefusal, WaitResult};

/// How many times a task query's result is asked for again when the server answers `202`
/// again instead of its warm cache.
pub const MAX_REFETCHES: u8 = 2;

/// How long `logout()`'s `stopped` waits at most for the answers to the stops and cancels it
/// sent (a server that never answers holds the app's sign-out no longer than this).
pub const STOP_DELIVERY_MS: u32 = 3_000;

names! {
    /// How a `query()` settled.
    pub enum QueryResult ("not a query outcome") as "QueryOutcomeKind" {
        /// The result came: `result` is the server's JSON.
        Done = "done",
        /// The server answered with an error, or the job failed: `httpStatus` or `status`,
        /// `errors`.
        Failed = "failed",
        /// Not sent, or not allowed: `reason` (`forbidden` for a `403`, never retried).
        Refused = "refused",
        /// The server answered `401`: its login has ended.
        Unauthenticated = "unauthenticated",
        /// No progress for `staleTimeoutMs`: it was stopped on the server.
        Stale = "stale",
        /// Stopped before its result: `reason` says by what, `stop` how the server was told.
        Aborted = "aborted",
    }
}

names! {
    /// Why a `query()` was refused or aborted.
    pub enum QueryReason ("not a query reason") as "QueryReason" {
        /// Nobody is signed in.
        NoSession = "no_session",
        /// The server answered `403` (a role without the permission): never retried.
        Forbidden = "forbidden",
        /// Its job is another session's (a job this browser purged from another user).
        NotJobOwner = "not_job_owner",
        /// Its job's record went or expired while it waited.
        Removed = "removed",
        /// What was given is not a query, or an option is wrong.
        InvalidInput = "invalid_input",
        /// The server stopped answering what the query waits on (its task framework switched
        /// off).
        Unsupported = "unsupported",
        /// Its signal aborted it.
        Signal = "signal",
        /// A logout, in this tab or another: the query was stopped before the session ended.
        Logout = "logout",
        /// Another user or guest signed in: nothing was sent for it as them.
        UserChanged = "user_changed",
        /// The page went away (not into the back/forward cache).
        PageEnd = "page_end",
    }
}

/// What `query()` settles with; it never rejects.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    target_arch = "wasm32",
    derive(tsify::Tsify),
    tsify(rename = "QueryOutcome", missing_as_null)
)]
pub struct QueryOutcome {
    #[cfg_attr(target_arch = "wasm32", tsify(type = "QueryOutcomeKind"))]
    pub outcome: QueryResult,
    /// `done`: the server's chart-data JSON, as `JSON.parse` reads its body; else `null`.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "unknown"))]
    pub result: (),
    /// The `client_id` the request carried (`POST /api/v1/chart/data/stop` takes it); `null`
    /// when it carried none (a server without the stop endpoint refuses the field).
    pub client_id: Option<String>,
    /// The jobs (a task's uuid for a task) a `202` named.
    pub job_ids: Vec<String>,
    /// The HTTP status of the answer that settled it, where one did.
    pub http_status: Option<u16>,
    /// `failed` by a job: its final status.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "JobStatus | TaskStatus | null"))]
    pub status: Option<&'static str>,
    /// `failed`: the errors the server named (a task's `semantic_result_error` as
    /// `[{ message }]` where it was read back).
    #[cfg_attr(target_arch = "wasm32", tsify(type = "unknown[]"))]
    pub errors: Vec<Value>,
    /// `refused` and `aborted`: why.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "QueryReason | null"))]
    pub reason: Option<QueryReason>,
    /// `aborted` and `stale`: how the server was told to stop it.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "StopOutcome | null"))]
    pub stop: Option<StopResult>,
    /// The jobs whose cancel its stop started (`guard.cancel(id)` hands back each one's).
    pub cancelling: Vec<String>,
    /// Ready to show to a person.
    pub message: String,
}

impl QueryOutcome {
    pub fn new(outcome: QueryResult, client_id: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            outcome,
            result: (),
            client_id: client_id.map(str::to_owned),
            job_ids: Vec::new(),
            http_status: None,
            status: None,
            errors: Vec::new(),
            reason: None,
            stop: None,
            cancelling: Vec::new(),
            message: message.into(),
        }
    }

    /// For a stopped query (`aborted`, or `stale` and stopped on the server), the message in
    /// the words of what stopped it and what the server was told, so that it never says other
    /// than its fields: its `reason`, its `stop`, its `cancelling`.
    pub fn explain_stop(&mut self) {
        let stopped_by = match (self.outcome, self.reason) {
            (QueryResult::Aborted, Some(QueryReason::Logout)) => "Stopped: the session ended",
            (QueryResult::Aborted, Some(QueryReason::UserChanged)) => {
                "Stopped: another user signed in"
            }
            (QueryResult::Aborted, Some(QueryReason::PageEnd)) => "Stopped: the page went away",
            (QueryResult::Aborted, _) => "Stopped: the query was aborted",
            (QueryResult::Stale, _) => "No answer and no progress for the stale timeout",
            _ => return,
        };
        let told = match self.stop {
            Some(StopResult::Stopped) => "; the server stopped its query",
            Some(StopResult::NotRunning) => "; nothing of it was still running on the server",
            Some(StopResult::Unsupported) => {
                "; this server cannot stop it (no stop endpoint, or it carried no client_id), so it runs to its end there"
            }
            Some(StopResult::Refused) => "; the server refused to stop it",
            Some(StopResult::Failed) => "; its stop got no answer",
            Some(StopResult::Sent) => "; the server was told to stop it",
            // A logout sends its cancels itself (`cancel(id)` would be refused once the session
            // has ended): its `stopped` is what settles when they are answered.
            Some(StopResult::Cancelling) if !self.cancelling.is_empty() => {
                if self.reason == Some(QueryReason::Logout) {
                    "; its jobs' cancel was sent with the logout (logout()'s stopped settles when they are answered)"
                } else {
                    "; its jobs' cancel was sent (guard.cancel(id) gives each outcome)"
                }
            }
            Some(StopResult::Cancelling | StopResult::NotSent) | None => {
                if self.reason == Some(QueryReason::UserChanged) {
                    "; nothing was sent for it as the new user"
                } else {
                    "; nothing was sent (nothing of it ran on the server, or another waiter still awaits its jobs)"
                }
            }
        };
        self.message = [stopped_by, told].concat();
    }

    /// Refused before or while it ran.
    pub fn refused(
        client_id: Option<&str>,
        reason: QueryReason,
        message: impl Into<String>,
    ) -> Self {
        Self {
            reason: Some(reason),
            ..Self::new(QueryResult::Refused, client_id, message)
        }
    }
}

/// Where a query is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Its chart-data request is in flight.
    Sending,
    /// Waiting for the job or tasks a `202` named.
    Waiting,
    /// Reading a job's `result_url`.
    Fetching,
    /// Sending the request again for the tasks' warm cache.
    Refetching,
    /// Settled.
    Ended,
}

/// What the shell does next.
#[derive(Debug)]
pub enum Step {
    /// Settle with this outcome (`done`: the body just read is its `result`). With `stop`, it
    /// was given up (`stale`): stop it on the server first, as an abort would.
    Settle { outcome: QueryOutcome, stop: bool },
    /// Wait for what a `202` named, as `waitFor` would (recorded first).
    Wait(WaitInput),
    /// Read the job's result here (`GET`).
    Fetch(String),
    /// Send the same request again.
    Refetch,
}

/// One query's life.
#[derive(Debug)]
pub struct QueryLife {
    pub client_id: Option<String>,
    phase: Phase,
    refetches: u8,
    job_ids: Vec<String>,
    /// Whether its `202` was a job's (whose result is read at `result_url`).
    job: bool,
}

impl QueryLife {
    pub fn new(client_id: Option<String>) -> Self {
        Self {
            client_id,
            phase: Phase::Sending,
            refetches: 0,
            job_ids: Vec::new(),
            job: false,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn job_ids(&self) -> &[String] {
        &self.job_ids
    }

    /// The jobs a `202` named, each by its record's id (known once its waiter is admitted).
    pub fn set_job_ids(&mut self, ids: Vec<String>) {
        self.job_ids = ids;
    }

    fn settle(&mut self, mut outcome: QueryOutcome) -> Step {
        self.phase = Phase::Ended;
        outcome.job_ids.clone_from(&self.job_ids);
        Step::Settle {
            outcome,
            stop: false,
        }
    }

    fn outcome(&self, result: QueryResult, message: impl Into<String>) -> QueryOutcome {
        QueryOutcome::new(result, self.client_id.as_deref(), message)
    }

    /// What an answer means: to the chart-data request (sent or sent again), or to the
    /// result's read.
    pub fn answered(&mut self, answer: ChartAnswer, http_status: Option<u16>) -> Step {
        let step = match answer {
            ChartAnswer::Result => {
                let done = "The query is done".to_owned();
                let mut outcome = self.outcome(QueryResult::Done, done);
                outcome.http_status = http_status;
                return self.settle(outcome);
            }
            ChartAnswer::Accepted(input) if self.phase != Phase::Fetching => {
                if self.phase == Phase::Refetching {
                    if self.refetches >= MAX_REFETCHES {
                        let message = "The server accepted the query again instead of answering \
                                       it from its cache";
                        let mut outcome = self.outcome(QueryResult::Failed, message);
                        outcome.http_status = http_status;
                        return self.settle(outcome);
                    }
                } else {
                    self.job = matches!(input, WaitInput::Job(_));
                }
                self.phase = Phase::Waiting;
                return Step::Wait(input);
            }
            ChartAnswer::Accepted(_) => ChartAnswer::Failed {
                http_status,
                errors: Vec::new(),
                message: "The job's result was not there".to_owned(),
            },
            other => other,
        };
        let outcome = match step {
            ChartAnswer::Unauthenticated => {
                let mut o = self.outcome(
                    QueryResult::Unauthenticated,
                    "The server answered 401: its login has ended",
                );
                o.http_status = Some(401);
                o
            }
            ChartAnswer::Forbidden => {
                let mut o = QueryOutcome::refused(
                    self.client_id.as_deref(),
                    QueryReason::Forbidden,
                    "The server answered 403: this session may not run the query",
                );
                o.http_status = Some(403);
                o
            }
            ChartAnswer::Failed {
                http_status,
                errors,
                message,
            } => {
                let mut o = self.outcome(QueryResult::Failed, message);
                o.http_status = http_status;
                o.errors = errors;
                o
            }
            ChartAnswer::Result | ChartAnswer::Accepted(_) => {
                self.outcome(QueryResult::Failed, "unexpected answer")
            }
        };
        self.settle(outcome)
    }

    /// Its waiter settled with `waited`; `result_url` is the job's record's (async_event),
    /// read only where it is a result of the chart-data endpoint `chart_url` the query was
    /// sent to ([`is_result_url`]).
    pub fn waited(
        &mut self,
        waited: &WaitOutcome,
        result_url: Option<&str>,
        chart_url: &str,
    ) -> Step {
        match waited.outcome {
            WaitResult::Done if self.job => match result_url {
                Some(url) if is_result_url(url, chart_url) => {
                    self.phase = Phase::Fetching;
                    Step::Fetch(url.to_owned())
                }
                _ => {
                    let message = "The job is done, but its result_url is not a chart-data result \
                                   of this server's API: nothing was requested";
                    self.settle(self.outcome(QueryResult::Failed, message))
                }
            },
            WaitResult::Done => {
                self.phase = Phase::Refetching;
                self.refetches += 1;
                Step::Refetch
            }
            WaitResult::Failed => {
                let mut o = self.outcome(QueryResult::Failed, waited.message.clone());
                o.status = waited.status;
                o.errors.clone_from(&waited.errors);
                self.settle(o)
            }
            WaitResult::Stale => {
                let o = self.outcome(QueryResult::Stale, waited.message.clone());
                self.phase = Phase::Ended;
                let mut outcome = o;
                outcome.job_ids.clone_from(&self.job_ids);
                Step::Settle {
                    outcome,
                    stop: true,
                }
            }
            WaitResult::Refused | WaitResult::Aborted => {
                let (result, reason) = match waited.reason {
                    Some(WaitRefusal::Unauthenticated) => (QueryResult::Unauthenticated, None),
                    Some(WaitRefusal::NoSession) => {
                        (QueryResult::Aborted, Some(QueryReason::Logout))
                    }
                    Some(WaitRefusal::UserChanged) => {
                        (QueryResult::Aborted, Some(QueryReason::UserChanged))
                    }
                    Some(WaitRefusal::NotJobOwner) => {
                        (QueryResult::Refused, Some(QueryReason::NotJobOwner))
                    }
                    Some(WaitRefusal::InvalidInput) => {
                        (QueryResult::Refused, Some(QueryReason::InvalidInput))
                    }
                    Some(WaitRefusal::Forbidden) => {
                        (QueryResult::Refused, Some(QueryReason::Forbidden))
                    }
                    Some(WaitRefusal::Unsupported) => {
                        (QueryResult::Refused, Some(QueryReason::Unsupported))
                    }
                    None => (QueryResult::Aborted, Some(QueryReason::Signal)),
                    Some(_) => (QueryResult::Refused, Some(QueryReason::Removed)),
                };
                // Refused as it was admitted: its jobs are what the 202 named.
                if self.job_ids.is_empty() {
                    self.job_ids.clone_from(&waited.job_ids);
                }
                let mut o = self.outcome(result, waited.message.clone());
                o.reason = reason;
                o.cancelling.clone_from(&waited.cancelling);
                // What nothing here can follow (the guard's other stream) is stopped on the
                // server, as a stale query's is.
                let stop = reason == Some(QueryReason::Unsupported) && !self.job_ids.is_empty();
                match self.settle(o) {
                    Step::Settle { outcome, .. } => Step::Settle { outcome, stop },
                    step => step,
                }
            }
        }
    }

    /// Settles it `aborted` (`reason`), the server told as `stop` says, `cancelling` the jobs
    /// whose cancel that started.
    pub fn aborted(
        &mut self,
        reason: QueryReason,
        stop: Option<StopResult>,
        cancelling: Vec<String>,
    ) -> QueryOutcome {
        let message = match reason {
            QueryReason::Logout => "Stopped: the session ended",
            QueryReason::UserChanged => "Stopped: another user signed in (nothing was sent for it)",
            QueryReason::PageEnd => "Stopped: the page went away",
            _ => "Stopped: the query was aborted",
        };
        let mut o = self.outcome(QueryResult::Aborted, message);
        o.reason = Some(reason);
        o.stop = stop;
        o.cancelling = cancelling;
        o.job_ids.clone_from(&self.job_ids);
        self.phase = Phase::Ended;
        o
    }
}

#[cfg(test)]
mod tests;
