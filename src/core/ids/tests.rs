//! The tests of `src/core/ids.rs`.
#![cfg(test)]

use super::*;
use serde_json::json;

fn user(v: serde_json::Value) -> Result<Option<String>, String> {
    MaybeUser::deserialize(&v)
        .map(|u| u.0.map(String::from))
        .map_err(|e| e.to_string())
}

#[test]
fn user_ids_compare_as_strings() {
    assert_eq!(user(json!(1)), Ok(Some("1".into())));
    assert_eq!(user(json!("1")), Ok(Some("1".into())));
    assert_eq!(user(json!(7.0)), Ok(Some("7".into())));
    assert_eq!(user(json!(-3)), Ok(Some("-3".into())));
    assert_eq!(user(json!(-3.0)), Ok(Some("-3".into())));
    assert_eq!(user(json!(3.0)), Ok(Some("3".into())));
    assert_eq!(user(json!(-0.0)), Ok(Some("0".into())));
    assert_eq!(user(json!(null)), Ok(None));
    assert!(user(json!(1.5)).is_err());
    assert!(user(json!(1e300)).is_err());
    assert!(user(json!("")).is_err());
    assert!(user(json!("a\u{85}b")).is_err(), "C1 control");
    assert!(user(json!(true)).is_err());
    assert!(user(json!({"id": 1})).is_err());
    // A whole number JS holds exactly, either side of 0, and no larger one (`2 ** 60` from
    // JS arrives as 1152921504606847000, a rounding of it).
    let safe = MAX_SAFE_INTEGER;
    assert_eq!(user(json!(safe)), Ok(Some(safe.to_string())));
    assert_eq!(user(json!(-(safe as i64))), Ok(Some(format!("-{safe}"))));
    assert!(user(json!(safe + 1)).is_err());
    assert!(user(json!(-(safe as i64) - 1)).is_err());
    assert!(user(json!(1_152_921_504_606_847_000u64)).is_err());
    assert!(user(json!(u64::MAX)).is_err());
}

#[test]
fn ids_are_bounded_and_free_of_control_characters() {
    assert!(is_valid_id("10a0bd9a-03c8-4737-9345-f4234ba86512"));
    assert!(
        is_valid_id(&"é".repeat(MAX_ID_LEN)),
        "characters, not bytes"
    );
    assert!(!is_valid_id(&"x".repeat(MAX_ID_LEN + 1)));
    assert!(!is_valid_id(""));
    for c in ['\n', '\0', '\u{7f}', '\u{9f}'] {
        assert!(!is_valid_id(&format!("a{c}b")), "{c:?}");
    }
    assert!(RESERVED_IDS.iter().all(|id| is_reserved_id(id)));
    for bad in [".", "..", "\u{FFFD}", "a\u{FFFD}b"] {
        assert!(!is_valid_id(bad), "{bad:?}");
    }
    for fine in ["...", ".a", "a..b", "./x"] {
        assert!(is_valid_id(fine), "{fine:?}");
    }
}

#[test]
fn quotes_are_short() {
    assert_eq!(quote("abc"), "abc");
    let long = "é".repeat(100_000);
    let quoted = quote(&long);
    assert_eq!(quoted.chars().count(), 65);
    assert!(quoted.ends_with('…'));
}

#[test]
fn whole_numbers_are_the_ones_a_js_number_holds_exactly() {
    assert_eq!(exact_whole(1_796_228_787_559.0), Some(1_796_228_787_559));
    assert_eq!(exact_whole(0.0), Some(0));
    assert_eq!(exact_whole(MAX_SAFE_INTEGER as f64), Some(MAX_SAFE_INTEGER));
    for v in [1.5, -1.0, 9.1e15, f64::NAN, f64::INFINITY] {
        assert_eq!(exact_whole(v), None, "{v}");
    }
}

#[test]
fn task_ids_are_uuids_and_tab_ids_follow_supersets_pattern() {
    let id = "10a0bd9a-03c8-4737-9345-f4234ba86512";
    assert_eq!(canonical_uuid(id).as_deref(), Some(id));
    assert_eq!(
        canonical_uuid("10A0BD9A-03C8-4737-9345-F4234BA86512").as_deref(),
        Some(id)
    );
    for bad in [
        "",
        "job-1",
        "10a0bd9a03c847379345f4234ba86512",
        "10a0bd9a-03c8-4737-9345-f4234ba8651",
        "10a0bd9a-03c8-4737-9345-f4234ba865123",
        "10a0bd9g-03c8-4737-9345-f4234ba86512",
        "10a0bd9a-03c8-4737-9345-f4234ba86512-",
        "../0bd9a-03c8-4737-9345-f4234ba86512",
        "10a0bd9a-03c8-4737-9345-f4234ba8651\u{ff11}",
    ] {
        assert_eq!(canonical_uuid(bad), None, "{bad}");
    }
    for good in ["a", "tab_1-X", &"z".repeat(64)] {
        assert!(is_tab_id(good), "{good}");
    }
    for bad in ["", "a b", "tab/1", "é", &"z".repeat(65)] {
        assert!(!is_tab_id(bad), "{bad}");
    }
}
