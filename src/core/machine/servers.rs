//! What each server of the page can do, learned once per page from status codes and read
//! back by every guard: whether a chart-data URL's server takes a `client_id` (its stop
//! endpoint asked once: [`ClientIds`]), whether its stop endpoint is there, whether it answers
//! synchronously or accepts queries (`202`), and whether a cancel endpoint is there. What to
//! do with a superseded request follows from it ([`Servers::supersede`]).

use super::super::by_url::ByUrl;
use super::super::client_ids::{ClientIds, Probe};
use super::super::response::{Contract, Outcome};
use super::queries::stop_url_for;

/// How a chart-data URL's server has answered its first requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// With its rows (`200`), never a `202`.
    Sync,
    /// It accepted a query (`202`): its jobs or tasks run on.
    Async,
}

/// Whether a cancel endpoint is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Presence {
    /// Its first cancel is out: the others wait for its answer.
    Asking,
    Present,
    /// Its first cancel got no answer within [`ASK_MS`]: the others go without waiting.
    Unanswered,
    /// It answered as no endpoint does (an HTML 404: Superset 6.1.0), or its task framework is
    /// switched off: nothing is sent to it again.
    Absent,
}

/// How long the cancels after an endpoint's first wait for its answer.
pub(super) const ASK_MS: u64 = 1_000;

/// What is done with a query's request still out when the query is stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Supersede {
    /// Keep it open for its answer: a `202` names what to cancel.
    pub(super) keep: bool,
    /// Stop it on the server by its `client_id`.
    pub(super) stop: bool,
}

/// What the page knows of its servers.
#[derive(Debug, Default)]
pub(super) struct Servers {
    pub(super) client_ids: ClientIds,
    /// The stop URLs without the endpoint (a `404` or `405`).
    no_stop: ByUrl<()>,
    modes: ByUrl<Mode>,
    /// By cancel URL template and contract.
    cancels: ByUrl<Presence>,
}

/// The key of the stop endpoint of chart-data URL key `url` (`"<server> <path>"`).
pub(super) fn stop_key_for(url: &str) -> String {
    let (server, path) = url.split_once(' ').unwrap_or(("0", url));
    [server, " ", &stop_url_for(path)].concat()
}

/// The key of a cancel endpoint: its template and contract.
fn cancel_key(template: &str, contract: Contract) -> String {
    let contract = match contract {
        Contract::AsyncEvent => "async_event ",
        Contract::Task => "task ",
    };
    [contract, template].concat()
}

impl Servers {
    pub(super) fn has_no_stop(&self, stop_url: &str) -> bool {
        self.no_stop.contains(stop_url)
    }

    /// The stop endpoint `stop_url` of chart-data URL `url` is not there (a `404` or `405` to
    /// a stop or to its `OPTIONS`): no stop goes to it, no query to `url` carries a
    /// `client_id`.
    pub(super) fn stop_absent(&mut self, url: &str, stop_url: &str) {
        self.no_stop.insert(stop_url.to_owned(), ());
        self.client_ids.refuse(url);
    }

    /// The stop endpoint of chart-data URL `url` answered its `OPTIONS` (or did not).
    pub(super) fn probed(&mut self, url: &str, probe: &Probe) {
        if self.client_ids.probed(url, probe) {
            let stop = stop_key_for(url);
            self.stop_absent(url, &stop);
        }
    }

    /// Whether a stop can reach a synchronous query to `url` (stopped at `stop_url`): its
    /// endpoint is not known absent, and the server is not known to accept queries (a stop
    /// reaches synchronous queries only). The one rule every stop and every listing of one
    /// asks.
    pub(super) fn can_stop(&self, url: Option<&str>, stop_url: &str) -> bool {
        !self.has_no_stop(stop_url) && url.is_none_or(|url| self.mode(url) != Some(Mode::Async))
    }

    pub(super) fn mode(&self, url: &str) -> Option<Mode> {
        self.modes.get(url).copied()
    }

    /// A chart-data request to `url` was answered `status` (as a first request, not a
    /// result's read): a `202` says its server accepts queries; a `200` that it answers them
    /// synchronously, unless it accepted one before (a cache hit answers `200` too).
    pub(super) fn answered(&mut self, url: &str, status: u16) {
        match (status, self.mode(url)) {
            (202, _) => self.modes.insert(url.to_owned(), Mode::Async),
            (200, None) => self.modes.insert(url.to_owned(), Mode::Sync),
            _ => {}
        }
    }

    /// Whether `template`'s cancel endpoint under `contract` is there, as far as is known.
    pub(super) fn cancel(&self, template: &str, contract: Contract) -> Option<Presence> {
        self.cancels.get(&cancel_key(template, contract)).copied()
    }

    /// The first cancel to an endpoint not known yet goes out: the next ones wait for it.
    pub(super) fn asking(&mut self, template: &str, contract: Contract) {
        self.cancels
            .insert(cancel_key(template, contract), Presence::Asking);
    }

    /// The first cancel to `template` got no answer within [`ASK_MS`].
    pub(super) fn unanswered(&mut self, template: &str, contract: Contract) {
        let key = cancel_key(template, contract);
        if self.cancels.get(&key) == Some(&Presence::Asking) {
            self.cancels.insert(key, Presence::Unanswered);
        }
    }

    /// A cancel to `template` under `contract` settled `outcome`, answered or not: an
    /// `unsupported` one says the endpoint is not there; any answer else that it is; no answer
    /// leaves it to the next cancel to find out.
    pub(super) fn cancel_settled(
        &mut self,
        template: &str,
        contract: Contract,
        outcome: Outcome,
        answered: bool,
    ) {
        let key = cancel_key(template, contract);
        let known = match (outcome, answered) {
            (Outcome::Unsupported, true) => Presence::Absent,
            (_, true) => Presence::Present,
            (_, false) => {
                if matches!(
                    self.cancels.get(&key),
                    Some(Presence::Asking | Presence::Unanswered)
                ) {
                    self.cancels.remove(&key);
                }
                return;
            }
        };
        if self.cancels.get(&key) != Some(&Presence::Absent) {
            self.cancels.insert(key, known);
        }
    }

    /// What to do with a query's chart-data request to `url` still out when it is stopped
    /// (its stop URL `stop_url`, whether it carries a `client_id`, and the contract its jobs
    /// would be cancelled under):
    /// - it is kept open for its answer where that may be a `202` whose jobs can be cancelled:
    ///   a server not known to answer synchronously, whose cancel endpoint is not known to be
    ///   absent. Elsewhere it is ended at once: a request still queued in the browser then
    ///   never leaves, and one in flight frees its connection for the next charts;
    /// - it is stopped by its `client_id` where the server has the stop endpoint (or may have
    ///   it) and is not known to accept queries (a stop reaches synchronous queries only).
    pub(super) fn supersede(
        &self,
        url: &str,
        stop_url: &str,
        client_id: bool,
        template: &str,
        contract: Contract,
    ) -> Supersede {
        let mode = self.mode(url);
        let cancels = self.cancel(template, contract) != Some(Presence::Absent);
        Supersede {
            keep: mode != Some(Mode::Sync) && cancels,
            stop: client_id && self.can_stop(Some(url), stop_url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "/api/v1/chart/data";
    const STOP: &str = "/api/v1/chart/data/stop";
    const CANCEL: &str = "/api/v1/async_event/{job_id}/cancel";

    #[test]
    fn a_request_is_kept_for_a_202_only_where_its_jobs_could_be_cancelled() {
        let mut s = Servers::default();
        let plan = |s: &Servers| s.supersede(URL, STOP, true, CANCEL, Contract::AsyncEvent);
        // Nothing known: kept for a late 202, and stopped in case it runs synchronously.
        assert_eq!(
            plan(&s),
            Supersede {
                keep: true,
                stop: true
            }
        );
        // Synchronous: ended at once, and stopped.
        s.answered(URL, 200);
        assert_eq!(
            plan(&s),
            Supersede {
                keep: false,
                stop: true
            }
        );
        // A 202 later (the first 200 was a cache hit): it accepts queries; a stop reaches none.
        s.answered(URL, 202);
        s.answered(URL, 200);
        assert_eq!(
            plan(&s),
            Supersede {
                keep: true,
                stop: false
            }
        );
        // Superset 6.1.0: no cancel endpoint, no stop endpoint: ended at once, nothing sent.
        s.cancel_settled(CANCEL, Contract::AsyncEvent, Outcome::Unsupported, true);
        s.stop_absent(URL, STOP);
        assert_eq!(
            plan(&s),
            Supersede {
                keep: false,
                stop: false
            }
        );
        // Without a client_id nothing stops it.
        let fresh = Servers::default();
        assert!(
            !fresh
                .supersede(URL, STOP, false, CANCEL, Contract::AsyncEvent)
                .stop
        );
    }

    #[test]
    fn a_cancel_endpoints_absence_is_learned_once_and_kept() {
        let mut s = Servers::default();
        assert_eq!(s.cancel(CANCEL, Contract::AsyncEvent), None);
        s.asking(CANCEL, Contract::AsyncEvent);
        assert_eq!(
            s.cancel(CANCEL, Contract::AsyncEvent),
            Some(Presence::Asking)
        );
        // No answer: the next cancel asks again.
        s.cancel_settled(CANCEL, Contract::AsyncEvent, Outcome::Failed, false);
        assert_eq!(s.cancel(CANCEL, Contract::AsyncEvent), None);
        s.cancel_settled(CANCEL, Contract::AsyncEvent, Outcome::Unsupported, true);
        assert_eq!(
            s.cancel(CANCEL, Contract::AsyncEvent),
            Some(Presence::Absent)
        );
        // Another answer later does not bring it back; the other contract is its own.
        s.cancel_settled(CANCEL, Contract::AsyncEvent, Outcome::Cancelled, true);
        assert_eq!(
            s.cancel(CANCEL, Contract::AsyncEvent),
            Some(Presence::Absent)
        );
        assert_eq!(s.cancel(CANCEL, Contract::Task), None);
        s.cancel_settled(CANCEL, Contract::Task, Outcome::Cancelled, true);
        assert_eq!(s.cancel(CANCEL, Contract::Task), Some(Presence::Present));
    }
}
