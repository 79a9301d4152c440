//! Whether a server takes a `client_id` in a chart-data body, found out from status codes.
//!
//! The `client_id` is what `POST /api/v1/chart/data/stop` (PR #44552, on main) stops a
//! synchronous query by. Every released Superset (6.1.0, 7.0) has no such endpoint and reads the
//! chart-data body with a schema that refuses a field it does not know (a `400`: the query is
//! not run). So, once per chart-data URL, before its first query is sent, the guard asks which
//! methods the stop URL takes (`OPTIONS`, answered by Flask for every route without a login,
//! CSRF token or error in the page's console): a `2xx` whose `Allow` lists `POST` is a server
//! with the endpoint (every query carries a `client_id`); one whose `Allow` does not (6.1.0
//! answers `GET, HEAD, OPTIONS`: its `GET /api/v1/chart/data/<cache_key>` takes the path), a
//! `404` or a `405` are servers without it (no query carries one); any other answer counts as
//! one with it. The queries that come meanwhile wait for that answer (one round trip, once);
//! the question is the guard's, not a query's: a query stopped meanwhile does not end it. No
//! answer: the queries go without, and the next asks again. Where the endpoint is there but a
//! body carrying a `client_id` is answered `400`, the same body is sent once more without it:
//! answered then, perhaps the server refuses the field, and the next query tells (a `400` of
//! one moment, a CSRF token not there yet, does not end the stops for the page): refused twice
//! so, no query carries one again; a `400` again without it is the query's own. A `2xx` to a
//! body carrying one settles that the server takes it.

use super::by_url::ByUrl;
use super::chart::no_stop_endpoint;

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
    /// A body carrying one was refused once where the same body without it was answered: the
    /// next query carries one again, to tell a refused field from a 400 of that moment's (a
    /// CSRF token not there yet); refused twice, it is the field.
    Doubted,
    /// A body carrying one was answered: queries carry one.
    Taken,
    /// No stop endpoint, or the field refused: no query carries one.
    Refused,
}

/// What the guard knows of each chart-data URL.
#[derive(Debug, Default)]
pub struct ClientIds(ByUrl<Known>);

/// How a query to a URL is sent now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// With a `client_id`.
    Carry,
    /// Without one.
    Without,
    /// Ask the stop URL first (its answer goes to [`ClientIds::probed`]).
    Probe,
    /// Wait for the stop endpoint's answer to another query's question, then decide again.
    AwaitProbe,
}

/// The stop URL's answer to the question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Its status, and its `Allow` header if it has one.
    Answered { status: u16, allow: Option<String> },
    /// No answer (a network failure, its timeout).
    NoAnswer,
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
            Known::Likely | Known::Doubted | Known::Taken => Decision::Carry,
            Known::Refused => Decision::Without,
        }
    }

    /// The stop URL answered the question: whether it has no stop endpoint.
    pub fn probed(&mut self, url: &str, probe: &Probe) -> bool {
        let known = match probe {
            Probe::Answered { status, .. } if no_stop_endpoint(*status) => Known::Refused,
            Probe::Answered {
                status: 200..=299,
                allow: Some(allow),
            } => {
                let post = allow
                    .split(',')
                    .any(|m| m.trim().eq_ignore_ascii_case("POST"));
                if post {
                    Known::Likely
                } else {
                    Known::Refused
                }
            }
            Probe::Answered { .. } => Known::Likely,
            Probe::NoAnswer => Known::Unknown,
        };
        self.set(url, known);
        known == Known::Refused
    }

    /// A stop to `url`'s server found no stop endpoint: its queries carry no `client_id`.
    pub fn refuse(&mut self, url: &str) {
        self.set(url, Known::Refused);
    }

    /// Whether a query to `url` carries a `client_id` now (the server's stop endpoint is
    /// there, as far as is known).
    pub fn carries(&self, url: &str) -> bool {
        matches!(
            self.known(url),
            Known::Likely | Known::Doubted | Known::Taken
        )
    }

    /// Whether the question to `url` is still out.
    pub fn probing(&self, url: &str) -> bool {
        self.known(url) == Known::Probing
    }

    /// The server answered `status` to a body of `url` carrying a `client_id`.
    pub fn answered(&mut self, url: &str, status: u16) -> AfterAnswer {
        match (self.known(url), status) {
            (Known::Likely | Known::Doubted, 200..=299) => {
                self.set(url, Known::Taken);
                AfterAnswer::Keep
            }
            (Known::Likely | Known::Doubted, 400) => AfterAnswer::SendWithout,
            _ => AfterAnswer::Keep,
        }
    }

    /// The same body, without its `client_id`, was answered `status`.
    pub fn resent(&mut self, url: &str, status: u16) {
        if status == 400 {
            return;
        }
        match self.known(url) {
            Known::Likely => self.set(url, Known::Doubted),
            Known::Doubted => self.set(url, Known::Refused),
            _ => {}
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
        // 6.1.0: its Allow names no POST; no endpoint, no client_id, ever.
        assert!(ids.probed(URL, &allow(200, "OPTIONS, HEAD, GET")));
        assert!(!ids.probing(URL));
        assert_eq!(ids.decide(URL), Decision::Without);
        assert_eq!(ids.answered(URL, 400), AfterAnswer::Keep);
        assert_eq!(ids.decide(URL), Decision::Without);
    }

    fn allow(status: u16, allow: &str) -> Probe {
        Probe::Answered {
            status,
            allow: Some(allow.to_owned()),
        }
    }

    fn status(status: u16) -> Probe {
        Probe::Answered {
            status,
            allow: None,
        }
    }

    #[test]
    fn a_404_or_405_is_no_endpoint_too_and_a_post_in_allow_is_one() {
        for no in [status(404), status(405), allow(204, "GET")] {
            let mut ids = ClientIds::default();
            ids.decide(URL);
            assert!(ids.probed(URL, &no));
            assert_eq!(ids.decide(URL), Decision::Without, "{no:?}");
        }
        let mut ids = ClientIds::default();
        ids.decide(URL);
        assert!(!ids.probed(URL, &allow(200, "OPTIONS, post")));
        assert_eq!(ids.decide(URL), Decision::Carry);
    }

    #[test]
    fn any_other_answer_means_the_endpoint_and_a_2xx_settles_it() {
        for answer in [
            status(200),
            status(400),
            status(401),
            status(403),
            status(500),
        ] {
            let mut ids = ClientIds::default();
            assert_eq!(ids.decide(URL), Decision::Probe);
            ids.probed(URL, &answer);
            assert_eq!(ids.decide(URL), Decision::Carry, "{answer:?}");
        }
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, &status(200));
        assert_eq!(ids.answered(URL, 202), AfterAnswer::Keep);
        // Known to take it: a 400 now is the query's own.
        assert_eq!(ids.answered(URL, 400), AfterAnswer::Keep);
        assert_eq!(ids.decide(URL), Decision::Carry);
    }

    #[test]
    fn a_400_for_the_field_alone_stops_it_for_good_and_a_400_for_the_query_does_not() {
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, &allow(200, "POST"));
        assert_eq!(ids.answered(URL, 400), AfterAnswer::SendWithout);
        // Without it, a 400 again: the query was bad; nothing learned.
        ids.resent(URL, 400);
        assert_eq!(ids.decide(URL), Decision::Carry);
        assert_eq!(ids.answered(URL, 400), AfterAnswer::SendWithout);
        // Without it, answered: perhaps the field; the next query tells.
        ids.resent(URL, 200);
        assert_eq!(ids.decide(URL), Decision::Carry);
        assert_eq!(ids.answered(URL, 400), AfterAnswer::SendWithout);
        // Refused again with it and answered without: the field was what the server refused.
        ids.resent(URL, 200);
        assert_eq!(ids.decide(URL), Decision::Without);
    }

    #[test]
    fn a_400_of_one_moment_does_not_stop_the_client_id_for_the_page() {
        // A helper's finding: a first query before the app had its CSRF token was answered
        // 400, and the same body without the client_id, sent once the token had come, 200.
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, &allow(200, "POST, OPTIONS"));
        assert_eq!(ids.answered(URL, 400), AfterAnswer::SendWithout);
        ids.resent(URL, 200);
        // The next query carries it, is answered, and settles that the server takes it.
        assert_eq!(ids.decide(URL), Decision::Carry);
        assert_eq!(ids.answered(URL, 200), AfterAnswer::Keep);
        assert_eq!(ids.answered(URL, 400), AfterAnswer::Keep);
        assert_eq!(ids.decide(URL), Decision::Carry);
    }

    #[test]
    fn no_answer_lets_the_next_query_ask_and_each_url_is_its_own() {
        let mut ids = ClientIds::default();
        ids.decide(URL);
        ids.probed(URL, &Probe::NoAnswer);
        assert_eq!(ids.decide(URL), Decision::Probe);
        assert_eq!(ids.decide("/other/chart/data"), Decision::Probe);
        ids.probed("/other/chart/data", &status(200));
        assert_eq!(ids.decide("/other/chart/data"), Decision::Carry);
        assert_eq!(ids.decide(URL), Decision::AwaitProbe);
    }
}
