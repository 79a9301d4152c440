//! The guard's running `query()`s as its state holds them ([`Queries`]): plain data, that
//! [`super::query`] drives and that a logout, a user switch and the page's end read to stop
//! them on the server.

use crate::core::by_url::ByUrl;

use serde_json::Value;

use web_sys::AbortController;

use crate::core::chart::{StopResult, DEFAULT_STOP_URL};
use crate::core::client_ids::ClientIds;
use crate::core::query::{Phase, QueryReason};
use crate::core::response::Contract;
use crate::core::session::Session;

/// One query running.
pub(super) struct RunningQuery {
    pub(super) id: u32,
    /// Aborting it ends what the query waits for now: its request, its waiter (whose abort
    /// cancels what no other waiter awaits), its result's read.
    pub(super) controller: AbortController,
    /// Aborting it ends its chart-data request at once, its answer unread: a request to a URL
    /// known to answer synchronously, stopped by the stop endpoint, whose answer is that stop's
    /// `400` (left in flight, it would reach the browser's console). Elsewhere a stopped
    /// request stays in flight for a late `202`, whose jobs are then cancelled.
    pub(super) request_end: AbortController,
    /// Its chart-data URL.
    pub(super) url: String,
    /// Where it is (its driver keeps it current).
    pub(super) phase: Phase,
    /// The `client_id` its request carries now (none on a server that refuses the field).
    pub(super) client_id: Option<String>,
    /// Where a synchronous query of it is stopped.
    pub(super) stop_url: String,
    /// The session that sent it.
    pub(super) owner: Session,
    /// The jobs its `202` named (each by its record's id), the tab id that `202` carried, and
    /// their contract: enough to cancel them once their records are gone (another tab's
    /// logout).
    pub(super) jobs: Vec<String>,
    pub(super) tab_id: Option<String>,
    pub(super) contract: Contract,
    /// Its waiter's id among the guard's, while it waits.
    pub(super) waiter: Option<u32>,
    /// Why it is being stopped, once it is.
    pub(super) reason: Option<QueryReason>,
    /// Whether its chart-data request has been sent (it waits, first, to know whether the
    /// server takes a `client_id`).
    pub(super) sent: bool,
    /// The stop its signal sent at once (its answer read when the query settles).
    pub(super) stop_pending: Option<wasm_bindgen::JsValue>,
    /// Told when what its stopped request may still answer has been seen to (a logout's
    /// `stopped` waits for it).
    pub(super) late_done: Option<js_sys::Function>,
    /// How the server was told, where that was done for it (a logout, the page's end).
    pub(super) stop: Option<StopResult>,
    pub(super) cancelling: Vec<String>,
}

/// The guard's queries.
#[derive(Default)]
pub struct Queries {
    pub(super) running: Vec<RunningQuery>,
    pub(super) next: u32,
    /// The stop URLs a server answered `404` (it has no stop endpoint): not asked again.
    pub(super) no_stop: ByUrl<()>,
    /// The chart-data URLs that answered a query's first request with its rows: their
    /// servers run queries synchronously.
    pub(super) synchronous: ByUrl<()>,
    /// Whether each chart-data URL's server takes a `client_id`, and the end of each question
    /// to a stop endpoint still out (what the queries that come meanwhile wait for).
    pub(super) client_ids: ClientIds,
    pub(super) probes: ByUrl<js_sys::Promise>,
}

impl Queries {
    pub(super) fn get(&mut self, id: u32) -> Option<&mut RunningQuery> {
        self.running.iter_mut().find(|q| q.id == id)
    }

    /// Whether query `id`'s request, stopped on the server, is ended at once: its URL answers
    /// synchronously, so the stop's `400` is all it would still answer.
    pub(super) fn ends_at_stop(&self, id: u32) -> bool {
        self.running
            .iter()
            .find(|q| q.id == id)
            .is_some_and(|q| self.synchronous.contains(&q.url))
    }

    /// The ids of the queries' own waiters.
    pub(super) fn waiters(&self) -> Vec<u32> {
        self.running.iter().filter_map(|q| q.waiter).collect()
    }
}

/// A query as registered: its id among the guard's, its body, and the app's own `client_id`
/// (where it keeps to the rule).
pub(super) struct Prepared {
    pub(super) id: u32,
    pub(super) body: serde_json::Map<String, Value>,
    pub(super) given: Option<String>,
}

/// Where a synchronous query sent to `url` is stopped: beside it (`…/chart/data/stop`), or
/// Superset's own.
pub(super) fn stop_url_for(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    if path.ends_with("/chart/data") {
        [path, "/stop"].concat()
    } else {
        DEFAULT_STOP_URL.to_owned()
    }
}
