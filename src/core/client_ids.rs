//! Whether a server takes a `client_id` in a chart-data body, found out from status codes.
//!
//! The `client_id` is what `POST /api/v1/chart/data/stop` (PR #44552, on main) stops a
//! synchronous query by. Every released Superset (6.1.0, 7.0) has no such endpoint and reads the
//! chart-data body with a schema that refuses a field it does not know (a `400`: the query is
//! not run). So, once per chart-data URL, before its first query is sent, the guard asks the
//! stop endpoint to stop a `client_id` nobody has: a `404` or `405` is a server without the
//! endpoint (a real 6.1.0 answers `405`: its `GET /api/v1/chart/data/<cache_key>` takes the
//! path), so no query carries one; any other answer, a server with it: every query carries one; the queries that
//! come meanwhile wait for that answer (one round trip, once). No answer: the queries go
//! without one, and the next asks again. Where the endpoint is there but a body carrying a
//! `client_id` is answered `400`, the same body is sent once more without it: answered then,
//! the server refuses the field and no query carries one again; a `400` then too is the query's
//! own. A `2xx` to a body carrying one settles that the server takes it.

use std::collections::BTreeMap;

/// What is known of one chart-data URL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Known {
    /// Nothing yet: the next query asks the stop endpoint first.
    #[default]
    Unknown,
    /// The stop endpoint is being asked: queries wait for its answer.
    Probing,
    /// The stop endpoint is there: queries carry a `client_id`.
    Likely,
    /// A body carrying one was answered: queries carry one.
    Taken,
    /// No stop endpoint, or the field refused: no query carries one.
    Refused,
}

/// What the guard knows of each chart-data URL.
#[derive(Debug, Default)]
pub struct ClientIds(BTreeMap<String, Known>);

/// How a query to a URL is sent now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// With a `client_id`.
    Carry,
    /// Without one.
    Without,
    /// Ask the stop endpoint first (its answer goes to [`ClientIds::probed`]).
    Probe,
    /// Wait for the stop endpoint's answer to another query's question, then decide again.
    AwaitProbe,
}

/// What to do after a carried `client_id`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterAnswer {
    /// Read the answer.
    Keep,
    /// Send the same body again without the `client_id` (its answer goes to
    /// [`ClientIds::resent`]).
    SendWithout,
}

impl ClientIds {
    fn known(&self, url: &str) -> Known {
        self.0.get(url).copied().unwrap_or_default()
    }

    fn set(&mut self, url: &str, known: Known) {
        self.0.insert(url.to_owned(), known);
    }

    /// How a query to `url` is sent now.
    pub fn decide(&mut self, url: &str) -> Decision {
        match self.known(url) {
            Known::Unknown => {
                self.set(url, Known::Probing);
                Decision::Probe
            }
            Known::Probing => Decision::AwaitProbe,
            Known::Likely | Known::Taken => Decision::Carry,
            Known::Refused => Decision::Without,
        }
    }

    /// The stop endpoint answered `status` to the question (`None`: no answer).
    pub fn probed(&mut self, url: &str, status: Option<u16>) {
        let known = match status {
            Some(404 | 405) => Known::Refused,
            Some(_) => Known::Likely,
            None => Known::Unknown,
        };
        self.set(url, known);
    }

    /// Whether the question to `url` is still out.
    pub fn probing(&self, url: &str) -> bool {
        self.known(url) == Known::Probing
    }

    /// The server answered `status` to a body of `url` carrying a `client_id`.
    pub fn answered(&mut self, url: &str, status: u16) -> AfterAnswer {
        match (self.known(url), status) {
            (Known::Likely, 200..=299) => {
                self.set(url, Known::Taken);
                AfterAnswer::Keep
            }
            (Known::Likely, 400) => AfterAnswer::SendWithout,
            _ => AfterAnswer::Keep,
        }
    }

    /// The same body, without its `client_id`, was answered `status`.
    pub fn resent(&mut self, url: &str, status: u16) {
        if self.known(url) == Known::Likely && status != 400 {
            self.set(url, Known::Refused);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "/api/v1/chart/data";

    #[test]
    fn the_stop_endpoint_is_asked_once_and_the_others_wait_for_its_answer() {
        let mut ids = ClientIds::default();
        assert_eq!(ids.decide(URL), Decision::Probe);
        assert!(ids.probing(URL));
        assert_eq!(ids.decide(URL), Decision::AwaitProbe);
        // 6.1.0 (a 405) and 7.0: no endpoint, no client_id, ever.
        ids.probed(URL, Some(405));
        assert!(!ids.probing(URL));
        assert_eq!(ids.decide(URL), Decision::Without);
        assert_eq!(ids.answered(URL, 400), AfterAnswer::Keep);
        assert_eq!(ids.decide(URL), Decision::Without);
    }

    #[test]
    fn a_404_is_no_endpoint_too() {
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, Some(404));
        assert_eq!(ids.decide(URL), Decision::Without);
    }

    #[test]
    fn any_other_answer_means_the_endpoint_and_a_2xx_settles_it() {
        for status in [200, 400, 401, 403, 500] {
            let mut ids = ClientIds::default();
            assert_eq!(ids.decide(URL), Decision::Probe);
            ids.probed(URL, Some(status));
            assert_eq!(ids.decide(URL), Decision::Carry, "{status}");
        }
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, Some(200));
        assert_eq!(ids.answered(URL, 202), AfterAnswer::Keep);
        // Known to take it: a 400 now is the query's own.
        assert_eq!(ids.answered(URL, 400), AfterAnswer::Keep);
        assert_eq!(ids.decide(URL), Decision::Carry);
    }

    #[test]
    fn a_400_for_the_field_alone_stops_it_for_good_and_a_400_for_the_query_does_not() {
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, Some(200));
        assert_eq!(ids.answered(URL, 400), AfterAnswer::SendWithout);
        // Without it, a 400 again: the query was bad; nothing learned.
        ids.resent(URL, 400);
        assert_eq!(ids.decide(URL), Decision::Carry);
        assert_eq!(ids.answered(URL, 400), AfterAnswer::SendWithout);
        // Without it, answered: the field was what the server refused.
        ids.resent(URL, 200);
        assert_eq!(ids.decide(URL), Decision::Without);
    }

    #[test]
    fn no_answer_lets_the_next_query_ask_and_each_url_is_its_own() {
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, None);
        assert_eq!(ids.decide(URL), Decision::Probe);
        assert_eq!(ids.decide("/other/chart/data"), Decision::Probe);
        ids.probed("/other/chart/data", Some(200));
        assert_eq!(ids.decide("/other/chart/data"), Decision::Carry);
        assert_eq!(ids.decide(URL), Decision::AwaitProbe);
    }
}
