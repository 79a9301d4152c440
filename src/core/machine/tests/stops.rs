//! Stopping queries: by their signal, in storms, at a logout, at the page's end; what each
//! server can do decides how.

use super::queries::{fail_first, with_probe};
use super::*;
use crate::core::chart::StopResult;
use crate::core::query::{QueryReason, QueryResult};

/// A query on a guard whose server has the stop endpoint, its request out; its signal.
fn running(p: &mut Page, g: GuardId) -> (PromiseId, SignalId, ReqId) {
    let signal = p.signal();
    let promise = p.query(g, Some(signal));
    let req = p.open_to(CHART).unwrap();
    (promise, signal, req)
}

#[test]
fn a_stop_that_overtook_its_request_is_sent_again_until_it_finds_the_query() {
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({}), "POST, OPTIONS");
    fail_first(&mut p, first);
    let (promise, signal, req) = running(&mut p, g);
    // Nothing is known of the server yet: the request stays open for a late 202.
    p.handle(Event::Aborted(signal));
    assert!(p.open.contains(&req), "kept for its answer");
    let stops = p.to(Method::Post, STOP);
    assert_eq!(stops.len(), 1);
    assert!(stops[0].keepalive);
    // The stop reached the server before the chart request did: nothing to stop yet.
    p.answer(
        stops[0].req,
        400,
        Some(json!({"message": "No running query"})),
    );
    assert!(
        p.outcome(promise).is_none(),
        "not settled as not_running while it may run"
    );
    p.advance(CONFIRM);
    let stops = p.to(Method::Post, STOP);
    assert_eq!(stops.len(), 2, "sent again while its request is unanswered");
    p.answer(stops[1].req, 200, Some(json!({"message": "OK"})));
    let (outcome, _) = p.query_outcome(promise);
    assert_eq!(
        (outcome.outcome, outcome.stop),
        (QueryResult::Aborted, Some(StopResult::Stopped))
    );
    // The stopped request answers (the stop's 400): it ends, and the server is known synchronous.
    p.answer(
        req,
        400,
        Some(json!({"errors": [{"message": "The query was canceled"}]})),
    );
    assert!(!p.open.contains(&req));
    // From now on a stopped request of that server is ended at once, before its stop.
    let (_, signal, req) = running(&mut p, g);
    p.handle(Event::Aborted(signal));
    let ended = p.ended.iter().position(|(r, _)| *r == req).unwrap();
    assert!(!p.open.contains(&req), "ended at once");
    let stop = p.to(Method::Post, STOP).len();
    assert_eq!(stop, 3);
    assert!(p
        .sent
        .iter()
        .position(|r| r.url == STOP && r.method == Method::Post)
        .is_some());
    let _ = ended;
}

#[test]
fn a_stop_that_finds_nothing_after_its_request_answered_is_not_running() {
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({}), "POST");
    fail_first(&mut p, first);
    let (promise, signal, req) = running(&mut p, g);
    p.handle(Event::Aborted(signal));
    let stop = p.open_to(STOP).unwrap();
    // The query had ended on the server: its answer is in, and the stop finds nothing.
    p.answer(req, 200, Some(json!({"result": []})));
    p.answer(stop, 400, Some(json!({"message": "No running query"})));
    let (outcome, _) = p.query_outcome(promise);
    assert_eq!(outcome.stop, Some(StopResult::NotRunning));
    p.advance(10_000);
    assert_eq!(p.to(Method::Post, STOP).len(), 1, "not sent again");
    assert!(p.quiet());
}

#[test]
fn a_storm_of_supersedes_leaves_every_stopped_query_stopped_and_nothing_running() {
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({}), "POST");
    fail_first(&mut p, first);
    // 50 supersedes: each query's signal aborts as the next starts.
    let mut last = None;
    let mut promises = Vec::new();
    for _ in 0..50 {
        let (promise, signal, _) = running(&mut p, g);
        if let Some(previous) = last.replace(signal) {
            p.handle(Event::Aborted(previous));
        }
        promises.push(promise);
        p.advance(6);
    }
    // Every stop finds its query (a server that stopped each one).
    while let Some(stop) = p.open_to(STOP) {
        p.answer(stop, 200, Some(json!({})));
        p.advance(1);
    }
    for promise in &promises[..49] {
        let (outcome, _) = p.query_outcome(*promise);
        assert_eq!(outcome.stop, Some(StopResult::Stopped), "{outcome:?}");
    }
    // Their requests answer (stopped on the server).
    let charts: Vec<ReqId> = p
        .to(Method::Post, CHART)
        .iter()
        .map(|r| r.req)
        .filter(|r| p.open.contains(r))
        .collect();
    assert_eq!(charts.len(), 50, "the kept ones, and the last");
    let (last, kept) = charts.split_last().unwrap();
    for req in kept {
        p.answer(*req, 400, Some(json!({"errors": []})));
    }
    p.answer(*last, 200, Some(json!({"result": []})));
    assert_eq!(p.query_outcome(promises[49]).0.outcome, QueryResult::Done);
    assert!(p.quiet(), "{:?} {:?}", p.open, p.timers);
}

#[test]
fn a_server_that_can_stop_nothing_has_its_superseded_requests_ended_at_once() {
    // Superset 6.1.0 with the flag off: no stop endpoint, answers synchronously.
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({}), "GET, HEAD, OPTIONS");
    p.answer(p.open_to(CHART).unwrap(), 200, Some(json!({"result": []})));
    assert_eq!(p.query_outcome(first).0.outcome, QueryResult::Done);
    let (promise, signal, req) = running(&mut p, g);
    p.handle(Event::Aborted(signal));
    assert!(p.ended.contains(&(req, false)), "ended at once");
    let (outcome, _) = p.query_outcome(promise);
    assert_eq!(outcome.stop, Some(StopResult::Unsupported));
    assert!(p.to(Method::Post, STOP).is_empty());
    assert!(p.quiet());
}

#[test]
fn a_late_202_is_watched_for_the_timeout_and_its_job_cancelled_as_the_sender() {
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({"timeoutMs": 8000}), "GET, OPTIONS");
    fail_first(&mut p, first);
    let (promise, signal, req) = running(&mut p, g);
    p.handle(Event::Aborted(signal));
    assert!(p.query_outcome(promise).0.outcome == QueryResult::Aborted);
    // A fetch that ignores its signal: the 202 comes 2.9 s later.
    p.advance(2_900);
    assert!(p.open.contains(&req));
    p.answer(req, 202, Some(job_meta(JOB)));
    let cancels = p.to(Method::Post, CANCEL);
    assert_eq!(cancels.len(), 1, "{:?}", p.sent);
    assert!(cancels[0].keepalive);
    assert!(p.m.job(g, JOB).unwrap().is_none(), "nothing recorded");
}

#[test]
fn a_late_answer_is_watched_no_longer_than_the_timeout() {
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({"timeoutMs": 8000}), "GET, OPTIONS");
    fail_first(&mut p, first);
    let (_, signal, req) = running(&mut p, g);
    p.advance(100);
    p.handle(Event::Aborted(signal));
    p.advance(8_000);
    assert!(!p.open.contains(&req), "ended at its timeout");
    assert!(p.quiet());
}

#[test]
fn cancel_on_close_false_sends_nothing_at_the_pages_end() {
    for (guard_option, query_option) in [
        (json!({"cancelOnClose": false}), json!({})),
        (json!({}), json!({"cancelOnClose": false})),
    ] {
        let mut p = Page::new();
        let (g, first) = with_probe(&mut p, guard_option.clone(), "POST");
        let second = p.query_with(g, None, query_option.clone());
        let before = p.sent.len();
        p.handle(Event::PageHide { persisted: false });
        let stops = p.to(Method::Post, STOP);
        if guard_option.get("cancelOnClose").is_some() {
            assert!(stops.is_empty(), "{guard_option}: {stops:?}");
            assert_eq!(p.sent.len(), before);
        } else {
            assert_eq!(stops.len(), 1, "only the first: {stops:?}");
            let (outcome, _) = p.query_outcome(first);
            assert_eq!(outcome.stop, Some(StopResult::Sent));
        }
        let (outcome, _) = p.query_outcome(second);
        assert_eq!(outcome.reason, Some(QueryReason::PageEnd));
        assert!(p.outcome(first).is_some());
    }
}

#[test]
fn the_pages_end_sends_the_stop_of_a_query_whose_stop_waits_to_be_sent_again() {
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({}), "POST");
    fail_first(&mut p, first);
    let (_, signal, _) = running(&mut p, g);
    p.handle(Event::Aborted(signal));
    p.answer(p.open_to(STOP).unwrap(), 400, Some(json!({})));
    assert_eq!(p.to(Method::Post, STOP).len(), 1);
    p.handle(Event::PageHide { persisted: false });
    let stops = p.to(Method::Post, STOP);
    assert_eq!(stops.len(), 2, "with keepalive, now");
    assert!(stops[1].keepalive);
}

#[test]
fn a_logouts_stopped_settles_at_once_when_nothing_was_sent_and_when_answered_otherwise() {
    let mut p = Page::new();
    let g = p.signed_in(json!({}));
    let stopped = p.promise();
    p.m.logout(g, stopped).unwrap();
    p.pump();
    assert_eq!(
        p.outcome(stopped),
        Some(&Settled::Nothing),
        "nothing to wait for"
    );

    let mut p = Page::new();
    let (g, promise) = with_probe(&mut p, json!({}), "POST");
    let stopped = p.promise();
    p.m.logout(g, stopped).unwrap();
    p.pump();
    let (outcome, _) = p.query_outcome(promise);
    assert_eq!(
        (outcome.reason, outcome.stop),
        (Some(QueryReason::Logout), Some(StopResult::Sent))
    );
    let stop = p.open_to(STOP).unwrap();
    assert!(
        p.outcome(stopped).is_none(),
        "waits for the stop and the late answer"
    );
    p.answer(stop, 200, Some(json!({})));
    p.answer(p.open_to(CHART).unwrap(), 400, Some(json!({})));
    assert_eq!(p.outcome(stopped), Some(&Settled::Nothing));
}

#[test]
fn free_stops_its_guards_queries() {
    let mut p = Page::new();
    let (g, promise) = with_probe(&mut p, json!({}), "POST");
    p.m.free(g);
    p.pump();
    assert_eq!(p.to(Method::Post, STOP).len(), 1);
    p.answer(p.open_to(STOP).unwrap(), 200, Some(json!({})));
    let (outcome, _) = p.query_outcome(promise);
    assert_eq!(outcome.stop, Some(StopResult::Stopped));
}

const CONFIRM: u64 = crate::core::machine::stop_requests::CONFIRM_MS;

#[test]
fn over_six_connections_a_query_superseded_before_it_left_is_dropped_with_nothing_sent() {
    let mut p = Page::new();
    p.m.set_protocol(Some("http/1.1"));
    let (g, first) = with_probe(&mut p, json!({}), "POST");
    fail_first(&mut p, first);
    let mut running: Vec<(PromiseId, SignalId)> = Vec::new();
    for _ in 0..20 {
        let signal = p.signal();
        running.push((p.query(g, Some(signal)), signal));
    }
    // One connection is left for the stops: five chart requests out, fifteen waiting.
    let out = p.to(Method::Post, CHART).len() - 1;
    assert_eq!(out, 5, "{:?}", p.sent);
    for (_, signal) in &running {
        p.handle(Event::Aborted(*signal));
    }
    // One connection is free: the stops leave one at a time, before anything else waiting.
    assert_eq!(
        p.to(Method::Post, STOP).len(),
        1,
        "a stop only for what left"
    );
    assert_eq!(p.to(Method::Post, CHART).len() - 1, 5, "nothing more left");
    for (promise, _) in &running[5..] {
        assert_eq!(p.query_outcome(*promise).0.stop, Some(StopResult::NotSent));
    }
    // A new filter's queries go as the stopped ones free their connections.
    let next: Vec<PromiseId> = (0..3).map(|_| p.query(g, None)).collect();
    assert_eq!(
        p.to(Method::Post, CHART).len() - 1,
        5,
        "every connection is busy"
    );
    while let Some(stop) = p.open_to(STOP) {
        p.answer(stop, 200, Some(json!({})));
        // A freed connection is handed on once the app's task has run.
        p.advance(0);
    }
    assert_eq!(p.to(Method::Post, STOP).len(), 5, "each in turn");
    let kept: Vec<ReqId> = p
        .to(Method::Post, CHART)
        .iter()
        .map(|r| r.req)
        .filter(|r| p.open.contains(r))
        .take(5)
        .collect();
    for req in kept {
        p.answer(req, 400, Some(json!({"errors": []})));
    }
    assert_eq!(
        p.to(Method::Post, CHART).len() - 1,
        5,
        "not within the app's task"
    );
    p.advance(0);
    assert_eq!(p.to(Method::Post, CHART).len() - 1, 8, "the new ones went");
    let _ = next;
}

#[test]
fn debug_storm() {
    let mut p = Page::new();
    p.m.set_protocol(Some("http/1.1"));
    let (g, first) = with_probe(&mut p, json!({}), "POST");
    fail_first(&mut p, first);
    let mut signals: Vec<SignalId> = Vec::new();
    for _ in 0..51 {
        for s in signals.drain(..) {
            p.handle(Event::Aborted(s));
        }
        for _ in 0..4 {
            let s = p.signal();
            p.query(g, Some(s));
            signals.push(s);
        }
        p.advance(6);
    }
    eprintln!(
        "charts {} stops {}",
        p.to(Method::Post, CHART).len(),
        p.to(Method::Post, STOP).len()
    );
}

#[test]
fn after_a_401_to_a_stop_nothing_more_is_sent_for_the_session_not_even_at_the_pages_end() {
    let mut p = Page::new();
    let (g, _) = with_probe(&mut p, json!({}), "POST");
    let signal = p.signal();
    p.query(g, Some(signal));
    // The first query's stop is answered 401: the session is gone on the server.
    p.handle(Event::Aborted(signal));
    let sent = p.sent.len();
    let stop = p.open_to(STOP).unwrap();
    p.answer(stop, 401, None);
    p.handle(Event::PageHide { persisted: false });
    let stopped = p.promise();
    p.m.logout(g, stopped).unwrap();
    p.pump();
    assert_eq!(
        p.sent.len(),
        sent,
        "nothing after the 401: {:?}",
        &p.sent[sent..]
    );
}

#[test]
fn at_the_pages_end_and_a_logout_no_request_waiting_for_a_connection_leaves() {
    for end in ["page end", "logout", "one signal"] {
        let mut p = Page::new();
        p.m.set_protocol(Some("http/1.1"));
        // A synchronous server without the stop endpoint (6.1.0 with the flag off): every
        // connection carries chart data, and a stopped query's request is ended at once.
        let (g, first) = with_probe(&mut p, json!({}), "GET");
        let req = p.open_to(CHART).unwrap();
        p.answer(req, 200, Some(json!({"result": [{"data": []}]})));
        assert!(p.outcome(first).is_some());
        let signal = p.signal();
        let queries: Vec<PromiseId> = (0..20).map(|_| p.query(g, Some(signal))).collect();
        let before = p.to(Method::Post, CHART).len();
        assert_eq!(before - 1, 6, "six out, fourteen waiting");
        match end {
            "page end" => p.handle(Event::PageHide { persisted: false }),
            "logout" => {
                let stopped = p.promise();
                p.m.logout(g, stopped).unwrap();
                p.pump();
            }
            _ => p.handle(Event::Aborted(signal)),
        }
        assert_eq!(
            p.to(Method::Post, CHART).len(),
            before,
            "{end}: the first stopped query's connection sent none of the others"
        );
        for promise in &queries[6..] {
            assert_eq!(
                p.query_outcome(*promise).0.stop,
                Some(StopResult::NotSent),
                "{end}"
            );
        }
    }
}

#[test]
fn a_filter_change_aborting_each_charts_old_query_sends_none_of_the_old_ones_queued() {
    let mut p = Page::new();
    p.m.set_protocol(Some("http/1.1"));
    // 6.1.0 with the flag off: synchronous, no stop endpoint; every connection carries charts.
    let (g, first) = with_probe(&mut p, json!({}), "GET");
    let req = p.open_to(CHART).unwrap();
    p.answer(req, 200, Some(json!({"result": [{"data": []}]})));
    assert!(p.outcome(first).is_some());
    let old: Vec<(PromiseId, SignalId)> = (0..20)
        .map(|_| {
            let s = p.signal();
            (p.query(g, Some(s)), s)
        })
        .collect();
    let sent_old = p.to(Method::Post, CHART).len();
    // The README's pattern, chart by chart in one task: the new query, then the old one's abort.
    for (_, signal) in &old {
        p.query(g, None);
        p.handle(Event::Aborted(*signal));
    }
    p.advance(0);
    let posts = p.to(Method::Post, CHART).len();
    assert_eq!(
        posts,
        sent_old + 6,
        "six new ones, none of the old queued: {posts}"
    );
    for (promise, _) in &old[6..] {
        assert_eq!(p.query_outcome(*promise).0.stop, Some(StopResult::NotSent));
    }
}

#[test]
fn a_late_202s_cancel_answered_by_an_html_404_teaches_the_endpoint_is_absent() {
    let mut p = Page::new();
    let (g, first) = with_probe(&mut p, json!({"timeoutMs": 8000}), "GET, OPTIONS");
    fail_first(&mut p, first);
    let (_, signal, req) = running(&mut p, g);
    p.handle(Event::Aborted(signal));
    p.answer(req, 202, Some(job_meta(JOB)));
    let cancel = p.to(Method::Post, CANCEL)[0].req;
    p.answer_html(cancel, 404);
    // The next late 202: its job's cancel is not sent (6.1.0 has no such route).
    let (_, signal, req) = running(&mut p, g);
    p.handle(Event::Aborted(signal));
    p.answer(req, 202, Some(job_meta("job-2")));
    let all: Vec<&Request> = p
        .sent
        .iter()
        .filter(|r| r.url.ends_with("/cancel"))
        .collect();
    assert_eq!(all.len(), 1, "one cancel learned it: {all:?}");
}
