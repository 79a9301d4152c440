//! `query()` in the machine: a chart's query from its request to its result. What each answer
//! means is [`QueryLife`]'s; here the request goes out (with a `client_id` where the server
//! takes one: its stop endpoint asked once per URL), a `202`'s jobs are awaited by a waiter
//! of the guard's own, the result is read, and the outcome handed over. Stopping a query is
//! [`stops`](super::stops)'.

use serde_json::{Map, Value};

use super::super::chart::{is_client_id, QuerySettings, StopResult, DEFAULT_STOP_URL};
use super::super::query::{QueryLife, QueryOutcome, QueryReason, QueryResult, Step};
use super::super::response::Contract;
use super::super::session::Session;
use super::super::wait_input::{WaitInput, WaitSettings};
use super::super::wait_outcome::WaitOutcome;
use super::io::{Effect, GuardId, Method, PromiseId, ReqId, Settled, SignalId};
use super::requests::Purpose;
use super::stopped::cancel_word;
use super::waits::Resolver;
use super::{Machine, Platform};

/// What stopped a query, and how the server was told.
#[derive(Debug)]
pub(super) struct Stopped {
    /// Why (`None`: given up as `stale`).
    pub(super) reason: Option<QueryReason>,
    pub(super) stop: Option<StopResult>,
    pub(super) cancelling: Vec<String>,
    /// Its outcome was handed over: what is left is seeing it stopped on the server.
    pub(super) settled: bool,
    /// Its stop request out.
    pub(super) stop_req: Option<ReqId>,
    /// How many times the stop was sent again.
    pub(super) confirms: u8,
    /// Its chart-data request, kept open for a late answer (a `202` names what to cancel).
    pub(super) late: Option<ReqId>,
    /// The logout whose `stopped` waits for that late answer.
    pub(super) group: Option<u32>,
    /// Its request was ended in flight as its stop left: it may still reach the server after
    /// the stop (a stop that finds nothing is sent once more).
    pub(super) ended_in_flight: bool,
}

/// One query of a guard.
#[derive(Debug)]
pub(super) struct Query {
    pub(super) id: u32,
    pub(super) promise: PromiseId,
    pub(super) signal: Option<SignalId>,
    pub(super) url: String,
    /// Where a synchronous query of it is stopped.
    pub(super) stop_url: String,
    pub(super) wait: WaitSettings,
    /// The session that sent it.
    pub(super) owner: Session,
    pub(super) body: Map<String, Value>,
    /// The app's own `client_id`, where it keeps to the rule.
    pub(super) given: Option<String>,
    pub(super) life: QueryLife,
    /// Its request out: the chart-data request (sent again), or its result's read.
    pub(super) req: Option<ReqId>,
    /// The status of the answer whose body is being read.
    pub(super) reading: Option<u16>,
    /// Waiting for the answer to the stop endpoint's question.
    pub(super) probing: bool,
    /// The body without the `client_id` the guard added, while the first answer may refuse
    /// the field.
    pub(super) without: Option<String>,
    /// The request out is that body, sent again without its `client_id`.
    pub(super) resent: bool,
    /// The jobs its `202` named (each by its record's id), their contract and tab id: enough
    /// to cancel them once their records are gone.
    pub(super) jobs: Vec<String>,
    pub(super) contract: Contract,
    pub(super) tab_id: Option<String>,
    pub(super) stopped: Option<Stopped>,
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

/// The JSON text of a body.
pub(super) fn text(body: &Map<String, Value>) -> String {
    serde_json::to_string(body).unwrap_or_default()
}

impl<P: Platform> Machine<P> {
    /// `query(body, options)`: the chart-data request goes now (or once the stop endpoint
    /// answered whether the server takes a `client_id`); `promise` settles with its outcome.
    pub fn query(
        &mut self,
        id: GuardId,
        mut body: Map<String, Value>,
        settings: QuerySettings,
        signal: Option<(SignalId, bool)>,
        promise: PromiseId,
    ) {
        let token = self.page_token();
        let qid = self.id();
        let Some(guard) = self.live(id) else {
            return self.hand_over(
                promise,
                refused(QueryReason::InvalidInput, "The guard was freed"),
                None,
            );
        };
        let Some(owner) = guard.store.session() else {
            let message = "No session: nobody is signed in, so nothing was sent";
            return self.hand_over(promise, refused(QueryReason::NoSession, message), None);
        };
        if guard.unauthenticated {
            let message =
                "The server answered 401 to this session: nothing is sent until the next login";
            let outcome = QueryOutcome::new(QueryResult::Unauthenticated, None, message);
            return self.hand_over(promise, outcome, None);
        }
        if let Some((signal, true)) = signal {
            self.emit(Effect::Forget(signal));
            let mut outcome = QueryLife::new(None).aborted(
                QueryReason::Signal,
                Some(StopResult::NotSent),
                Vec::new(),
            );
            outcome.explain_stop();
            return self.hand_over(promise, outcome, None);
        }
        let contract = guard.options.contract;
        let mut tab_id = None;
        if contract == Contract::Task {
            let tab = guard
                .options
                .tab_id
                .as_ref()
                .map_or(token, |t| t.to_string());
            body.insert("tab_id".to_owned(), Value::String(tab.clone()));
            tab_id = Some(tab);
        }
        let given = match body.remove("client_id") {
            Some(Value::String(given)) if is_client_id(&given) => Some(given),
            _ => None,
        };
        guard.queries.push(Query {
            id: qid,
            promise,
            signal: signal.map(|(s, _)| s),
            stop_url: stop_url_for(&settings.url),
            url: settings.url,
            wait: settings.wait,
            owner,
            body,
            given,
            life: QueryLife::new(None),
            req: None,
            reading: None,
            probing: false,
            without: None,
            resent: false,
            jobs: Vec::new(),
            contract,
            tab_id,
            stopped: None,
        });
        self.query_client_id(id, qid);
        self.settle_waits();
    }

    pub(super) fn query_mut(&mut self, id: GuardId, qid: u32) -> Option<&mut Query> {
        self.guard(id)?.queries.iter_mut().find(|q| q.id == qid)
    }

    /// Settles `promise` with `outcome` (`done`'s result kept under `result`).
    pub(super) fn hand_over(
        &mut self,
        promise: PromiseId,
        mut outcome: QueryOutcome,
        result: Option<ReqId>,
    ) {
        outcome.explain_stop();
        self.emit(Effect::Settle {
            promise,
            value: Settled::Query(Box::new(outcome), result),
        });
    }

    /// Sends query `qid`'s chart-data request, carrying `client_id`.
    pub(super) fn send_chart(&mut self, id: GuardId, qid: u32, client_id: Option<String>) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let mut body = q.body.clone();
        if let Some(client_id) = &client_id {
            if q.given.is_none() {
                q.without = Some(text(&body));
            }
            body.insert("client_id".to_owned(), Value::String(client_id.clone()));
        }
        q.life = QueryLife::new(client_id);
        self.post_chart(id, qid, text(&body));
    }

    /// Sends `body` to query `qid`'s chart-data URL (its request, or the same again).
    pub(super) fn post_chart(&mut self, id: GuardId, qid: u32, body: String) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let (url, stale) = (q.url.clone(), q.wait.stale_ms);
        let purpose = Purpose::Chart {
            guard: id,
            query: qid,
        };
        let req = self.send(purpose, Method::Post, url, Some(body), false, stale);
        if let Some(q) = self.query_mut(id, qid) {
            q.req = Some(req);
        }
        self.keep_entry(id);
    }

    /// Does what query `qid`'s life says next.
    pub(super) fn act(&mut self, id: GuardId, qid: u32, step: Step, result: Option<ReqId>) {
        match step {
            Step::Settle { mut outcome, stop } => {
                if stop {
                    // What nothing here can follow any more (stale, or the other stream) is
                    // stopped on the server as an abort would.
                    let jobs = self.query_mut(id, qid).map(|q| q.life.job_ids().to_vec());
                    let cancelling = self.cancel_unawaited(id, jobs.unwrap_or_default(), &[]);
                    outcome.stop = Some(cancel_word(&cancelling, StopResult::Cancelling));
                    outcome.cancelling = cancelling;
                }
                self.finish_query(id, qid, outcome, result);
            }
            Step::Wait(input) => self.query_wait(id, qid, input),
            Step::Fetch(url) => {
                let stale = self.query_mut(id, qid).map_or(0, |q| q.wait.stale_ms);
                let purpose = Purpose::Chart {
                    guard: id,
                    query: qid,
                };
                let req = self.send(purpose, Method::Get, url, None, false, stale);
                if let Some(q) = self.query_mut(id, qid) {
                    q.req = Some(req);
                }
            }
            Step::Refetch => {
                let Some(q) = self.query_mut(id, qid) else {
                    return;
                };
                let mut body = q.body.clone();
                if let Some(client_id) = &q.life.client_id {
                    body.insert("client_id".to_owned(), Value::String(client_id.clone()));
                }
                self.post_chart(id, qid, text(&body));
            }
        }
    }

    /// Waits for what a `202` named, as `waitFor` does, with a waiter of the guard's own.
    pub(super) fn query_wait(&mut self, id: GuardId, qid: u32, input: WaitInput) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let settings = q.wait;
        let (contract, tab_id) = match &input {
            WaitInput::Tasks(s) => (Contract::Task, s.tab_id.as_ref().map(|t| t.to_string())),
            _ => (Contract::AsyncEvent, None),
        };
        q.contract = contract;
        if tab_id.is_some() {
            q.tab_id = tab_id;
        }
        match self.register_wait(id, input, settings, Resolver::Query(qid)) {
            Ok((_, jobs)) => {
                if let Some(q) = self.query_mut(id, qid) {
                    q.life.set_job_ids(jobs.clone());
                    q.jobs = jobs;
                }
            }
            Err(refused) => self.query_waited(id, qid, *refused),
        }
    }

    /// Query `qid`'s waiter settled with `waited`.
    pub(super) fn query_waited(&mut self, id: GuardId, qid: u32, waited: WaitOutcome) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let first = q.life.job_ids().first().cloned();
        let url = q.url.clone();
        let result_url = first
            .and_then(|job| self.guard(id)?.store.job(&job))
            .and_then(|r| r.result_url().map(str::to_owned));
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        if q.jobs.is_empty() {
            q.jobs.clone_from(&waited.job_ids);
        }
        let step = q.life.waited(&waited, result_url.as_deref(), &url);
        let step = self.in_its_words(id, qid, step, &waited);
        self.act(id, qid, step, None);
    }

    /// Hands query `qid`'s outcome over (what was decided when it was stopped in its words);
    /// it goes once nothing of it is left to see to on the server.
    pub(super) fn finish_query(
        &mut self,
        id: GuardId,
        qid: u32,
        outcome: QueryOutcome,
        result: Option<ReqId>,
    ) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        let (promise, signal) = (q.promise, q.signal.take());
        if let Some(stopped) = &mut q.stopped {
            stopped.settled = true;
        } else {
            q.stopped = Some(Stopped {
                settled: true,
                ..Stopped::new(None)
            });
        }
        if let Some(signal) = signal {
            self.emit(Effect::Forget(signal));
        }
        if let Some(waiter) = self.guard(id).and_then(|g| g.waits.of_query(qid)) {
            self.drop_waiter(id, waiter);
        }
        if let Some(req) = self.query_mut(id, qid).and_then(|q| q.req.take()) {
            self.end(req, false);
        }
        self.hand_over(promise, outcome, result);
        if let Some(req) = result {
            self.end(req, false);
        }
        self.drop_if_done(id, qid);
        self.keep_entry(id);
    }

    /// Takes query `qid` off its guard once its outcome was handed over and nothing of it is
    /// left out (its stop, its late answer).
    pub(super) fn drop_if_done(&mut self, id: GuardId, qid: u32) {
        if let Some(guard) = self.guard(id) {
            guard.queries.retain(|q| {
                q.id != qid
                    || !q
                        .stopped
                        .as_ref()
                        .is_some_and(|s| s.settled && s.stop_req.is_none() && s.late.is_none())
            });
        }
    }
}

/// A query refused before anything was sent.
fn refused(reason: QueryReason, message: &str) -> QueryOutcome {
    QueryOutcome::refused(None, reason, message)
}
