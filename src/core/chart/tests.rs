use super::*;
use crate::core::names::assert_names;
use serde_json::json;

#[test]
fn named_as_their_typescript_declaration() {
    assert_names!(StopResult);
}

#[test]
fn each_chart_data_answer_means_what_superset_says() {
    assert!(matches!(
        classify_chart(200, true, Some(&json!({"result": []}))),
        ChartAnswer::Result
    ));
    let tasks = json!({"task_ids": ["0b9cbf8a-0c71-4a3e-9a35-5a0b3d1b4c01"], "cursor": "c"});
    assert!(matches!(
        classify_chart(202, true, Some(&tasks)),
        ChartAnswer::Accepted(WaitInput::Tasks(_))
    ));
    let job = json!({"channel_id": "c", "job_id": "j", "user_id": "1", "status": "pending",
                     "errors": [], "result_url": null});
    assert!(matches!(
        classify_chart(202, true, Some(&job)),
        ChartAnswer::Accepted(WaitInput::Job(_))
    ));
    for (status, json, body) in [
        (202, true, json!({"x": 1})),
        (202, true, json!(["a"])),
        (202, false, tasks.clone()),
        (200, false, json!(null)),
    ] {
        assert!(
            matches!(
                classify_chart(status, json, Some(&body)),
                ChartAnswer::Failed { .. }
            ),
            "{status} {body}"
        );
    }
    assert!(matches!(
        classify_chart(401, true, None),
        ChartAnswer::Unauthenticated
    ));
    assert!(matches!(
        classify_chart(403, false, None),
        ChartAnswer::Forbidden
    ));
    let body = json!({"errors": [{"message": "relation \"x\" does not exist",
                                  "error_type": "GENERIC_DB_ENGINE_ERROR"}]});
    let ChartAnswer::Failed {
        http_status,
        errors,
        message,
    } = classify_chart(400, true, Some(&body))
    else {
        panic!("a failure");
    };
    assert_eq!(http_status, Some(400));
    assert_eq!(errors[0]["error_type"], "GENERIC_DB_ENGINE_ERROR");
    assert!(
        message.contains("does not exist") && message.contains("400"),
        "{message}"
    );
    let ChartAnswer::Failed { errors, .. } =
        classify_chart(500, true, Some(&json!({"message": "x".repeat(5000)})))
    else {
        panic!("a failure");
    };
    assert_eq!(
        errors[0]["message"].as_str().unwrap().len(),
        MAX_MESSAGE_CHARS
    );
    let many = json!({"errors": vec![json!({"message": "m"}); 100]});
    assert_eq!(errors_of(Some(&many)).len(), MAX_ERRORS);
}

#[test]
fn the_options_are_an_object_of_known_keys_and_url_a_path_of_this_site() {
    use crate::core::quiet::Json;
    let read = |v: Value| QuerySettings::read(Json(&v));
    let d = read(json!(null)).unwrap();
    assert_eq!(d.url, DEFAULT_CHART_DATA_URL);
    assert_eq!(d.wait.cancel_on_close, None, "the guard's");
    let given =
        read(json!({"url": "/chart/data", "staleTimeoutMs": 5, "cancelOnClose": false})).unwrap();
    assert_eq!(
        (given.url.as_str(), given.wait.stale_ms),
        ("/chart/data", 5)
    );
    assert_eq!(given.wait.cancel_on_close, Some(false));
    for (bad, says) in [
        (json!({"url": "https://evil.test/x"}), "`url`"),
        (json!({"url": 5}), "`url`"),
        (json!({"staleTimeoutMs": 0}), "`staleTimeoutMs`"),
        (json!({"urll": "/x"}), "unknown option `urll` of query"),
        (json!([1]), "must be an object"),
    ] {
        let e = read(bad.clone()).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn a_stop_answer_is_read_by_its_status_and_a_404_or_405_is_a_superset_without_it() {
    assert_eq!(classify_stop(200), StopResult::Stopped);
    assert_eq!(classify_stop(400), StopResult::NotRunning);
    assert_eq!(classify_stop(401), StopResult::Refused);
    assert_eq!(classify_stop(403), StopResult::Refused);
    assert_eq!(classify_stop(404), StopResult::Unsupported);
    assert_eq!(classify_stop(405), StopResult::Unsupported);
    assert_eq!(classify_stop(500), StopResult::Failed);
    assert_eq!(stop_body("sjg-abc"), r#"{"client_id":"sjg-abc"}"#);
}

#[test]
fn client_ids_and_urls_are_held_to_their_rules() {
    let mut n = 0.0;
    let id = make_client_id(|| {
        n = (n + 0.37) % 1.0;
        n
    });
    assert!(
        is_client_id(&id) && id.starts_with("sjg-") && id.len() == 20,
        "{id}"
    );
    assert!(!is_client_id("") && !is_client_id("a b") && !is_client_id(&"a".repeat(65)));
    for good in ["/api/v1/chart/data", "/api/v1/chart/data/qc-1?x=1"] {
        assert!(is_same_origin_path(good), "{good}");
    }
    for bad in [
        "https://evil.test/x",
        "//evil.test/x",
        "/\\evil.test",
        "api/v1",
        "/a b",
        "/a\nb",
        "",
    ] {
        assert!(!is_same_origin_path(bad), "{bad}");
    }
    assert!(!is_same_origin_path(&format!("/{}", "a".repeat(2048))));
}

#[test]
fn only_a_result_of_the_chart_data_endpoint_is_a_result_url() {
    let chart = "/api/v1/chart/data";
    assert!(is_result_url(
        "/api/v1/chart/data/qc-ecd766dd461f294e1bcdaa321e0e8463",
        chart
    ));
    assert!(is_result_url(
        "/proxy/chart/data/qc_1",
        "/proxy/chart/data?x=1"
    ));
    for bad in [
        "/logout/",
        "/api/v1/chart/data",
        "/api/v1/chart/data/",
        "/api/v1/chart/data/qc-1/../../../logout/",
        "/api/v1/chart/data/qc-1?format=csv",
        "/api/v1/chart/datax/qc-1",
        "/api/v1/me/",
        "https://evil.test/api/v1/chart/data/qc-1",
        "//evil.test/api/v1/chart/data/qc-1",
    ] {
        assert!(!is_result_url(bad, chart), "{bad}");
    }
    assert!(!is_result_url(
        &format!("{chart}/{}", "a".repeat(129)),
        chart
    ));
}
