//! A query's `client_id`: the app's own, else the guard's where the server takes one. Whether
//! it does is asked once per chart-data URL (an `OPTIONS` to its stop endpoint,
//! [`client_ids`](super::super::client_ids) decides from the answer); the queries that asked
//! meanwhile wait for that answer.

use super::super::chart::make_client_id;
use super::super::client_ids::{Decision, Probe};
use super::super::random::Random;
use super::io::{Answer, GuardId, Method, ReqId};
use super::queries::stop_url_for;
use super::requests::Purpose;
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
    /// Whether query `qid` carries a `client_id`, and which: the app's own, else the guard's
    /// where the server takes one (asking its stop endpoint first where that is not known, or
    /// waiting for the answer to another query's question).
    pub(super) fn query_client_id(&mut self, id: GuardId, qid: u32) {
        let Some(q) = self.query_mut(id, qid) else {
            return;
        };
        if let Some(given) = q.given.clone() {
            return self.send_chart(id, qid, Some(given));
        }
        let url = q.url.clone();
        let key = self.server_key(id, &url);
        match self.servers.client_ids.decide(&key) {
            Decision::Carry => {
                let fresh = make_client_id(|| self.random.next_f64());
                self.send_chart(id, qid, Some(fresh));
            }
            Decision::Without => self.send_chart(id, qid, None),
            Decision::Probe => {
                // The guard's question, not this query's: a stop of this query does not end it.
                let timeout = self.guard(id).map_or(0, |g| g.options.timeout_ms);
                let purpose = Purpose::Probe {
                    guard: id,
                    url: key,
                };
                self.send(
                    purpose,
                    Method::Options,
                    stop_url_for(&url),
                    None,
                    false,
                    timeout,
                );
                if let Some(q) = self.query_mut(id, qid) {
                    q.probing = true;
                }
            }
            Decision::AwaitProbe => {
                if let Some(q) = self.query_mut(id, qid) {
                    q.probing = true;
                }
            }
        }
    }

    /// The stop endpoint answered the question for chart-data URL `url` (or did not): the
    /// queries that waited go, with a `client_id` where it says the server takes one; without
    /// an answer, without one (the next query asks again).
    pub(super) fn probe_answered(&mut self, key: &str, req: ReqId, answer: Option<&Answer>) {
        self.end(req, true);
        let probe = answer.map_or(Probe::NoAnswer, |a| Probe::Answered {
            status: a.status,
            allow: a.allow.clone(),
        });
        self.servers.probed(key, &probe);
        let waiting: Vec<(GuardId, u32, String)> = self
            .guards
            .iter()
            .flat_map(|g| {
                g.queries
                    .iter()
                    .filter(|q| q.probing && q.stopped.is_none())
                    .map(move |q| (g.id, q.id, q.url.clone()))
            })
            .filter(|(id, _, url)| self.server_key(*id, url) == key)
            .collect();
        let waiting: Vec<(GuardId, u32)> = waiting.into_iter().map(|(g, q, _)| (g, q)).collect();
        for (id, qid) in waiting {
            if let Some(q) = self.query_mut(id, qid) {
                q.probing = false;
            }
            match probe {
                Probe::NoAnswer => self.send_chart(id, qid, None),
                Probe::Answered { .. } => self.query_client_id(id, qid),
            }
        }
        self.settle_waits();
    }
}
