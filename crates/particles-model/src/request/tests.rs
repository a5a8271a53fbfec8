//! The request's validation against verdicts recorded from the reference
//! (pydantic 2.14, linkedparticles-core 1.214.1). The differential fuzz in this
//! crate's `tests/it/fuzz` covers far more inputs; these pin the shapes.

use serde_json::{json, Value};

use super::*;

fn now() -> Timestamp {
    Timestamp::parse("2026-06-01T00:00:00+00:00").unwrap()
}

fn errors(body: Value) -> Value {
    match QueryRequest::from_json(&body, now()) {
        Ok(request) => panic!("{body} validated: {request:?}"),
        Err(errors) => serde_json::to_value(&errors).unwrap(),
    }
}

fn valid(body: Value) -> ValidRequest {
    QueryRequest::from_json(&body, now()).unwrap_or_else(|e| panic!("{body}: {e}"))
}

#[test]
fn dump_is_the_references_model_dump() {
    let request = valid(json!({"question": "When did Alice move?", "as_of": "2026-01-01"}));
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        r#"{"question":"When did Alice move?","min_confidence":0.0,"uncertainty_nature":null,"assertion_modality":null,"recency_window_days":null,"audience":"GENERAL","top_k":40,"subject_id":null,"tags":[],"include_ancestors":false,"include_document_meta":false,"include_non_asserted":false,"include_agreement":false,"include_contestedness":false,"as_of":"2026-01-01T00:00:00Z","window":null,"observer_project":null,"grounded":null,"predicate":null,"object_eq":null,"object_gt":null,"object_lt":null,"object_contains":null,"count":false,"group_by":null,"min_effective_confidence":null,"list_predicates":false,"list_vocabulary":false}"#
    );
}

#[test]
fn lax_coercions() {
    assert_eq!(valid(json!({"question": "q", "top_k": "5"})).top_k, 5);
    assert_eq!(valid(json!({"question": "q", "top_k": 5.0})).top_k, 5);
    assert_eq!(valid(json!({"question": "q", "top_k": true})).top_k, 1);
    assert_eq!(valid(json!({"question": "q", "top_k": "5.0"})).top_k, 5);
    assert_eq!(
        valid(json!({"question": "q", "min_confidence": "0.5"})).min_confidence,
        0.5
    );
    assert_eq!(
        valid(json!({"question": "q", "min_confidence": true})).min_confidence,
        1.0
    );
    assert!(valid(json!({"question": "q", "include_ancestors": "yes"})).include_ancestors);
    assert!(valid(json!({"question": "q", "include_ancestors": 1.0})).include_ancestors);
    assert_eq!(
        valid(json!({"question": "q", "recency_window_days": "3"})).recency_window_days,
        Some(3)
    );
    // Unknown fields are ignored.
    assert_eq!(valid(json!({"question": "q", "unknown": 1})).top_k, 40);
    // A naive as_of becomes UTC; a window's naive ends too.
    assert_eq!(
        valid(json!({"question": "q", "as_of": "2020-01-01 10:00"}))
            .as_of
            .unwrap()
            .to_string(),
        "2020-01-01T10:00:00Z"
    );
    let window = valid(json!({"window": {"start": "2020-01-01"}}))
        .window
        .unwrap();
    assert_eq!(window.start.unwrap().to_string(), "2020-01-01T00:00:00Z");
}

#[test]
fn field_errors_in_pydantic_shape() {
    assert_eq!(
        errors(json!({"question": "q", "top_k": 5.5})),
        json!([{"type": "int_from_float", "loc": ["top_k"], "msg": "Input should be a valid integer, got a number with a fractional part", "input": 5.5}])
    );
    assert_eq!(
        errors(json!({"question": "q", "top_k": 0, "min_confidence": 5})),
        json!([
            {"type": "less_than_equal", "loc": ["min_confidence"], "msg": "Input should be less than or equal to 1", "input": 5, "ctx": {"le": 1.0}},
            {"type": "greater_than_equal", "loc": ["top_k"], "msg": "Input should be greater than or equal to 1", "input": 0, "ctx": {"ge": 1}}
        ])
    );
    assert_eq!(
        errors(json!({"question": "q", "min_confidence": "nan"})),
        json!([{"type": "less_than_equal", "loc": ["min_confidence"], "msg": "Input should be less than or equal to 1", "input": "nan", "ctx": {"le": 1.0}}])
    );
    assert_eq!(
        errors(json!({"question": ""})),
        json!([{"type": "string_too_short", "loc": ["question"], "msg": "String should have at least 1 character", "input": "", "ctx": {"min_length": 1}}])
    );
    assert_eq!(
        errors(json!({"question": "q", "audience": "expert"})),
        json!([{"type": "enum", "loc": ["audience"], "msg": "Input should be 'EXPERT', 'GENERAL' or 'REGULATORY'", "input": "expert", "ctx": {"expected": "'EXPERT', 'GENERAL' or 'REGULATORY'"}}])
    );
    assert_eq!(
        errors(json!({"question": "q", "tags": [1]})),
        json!([{"type": "string_type", "loc": ["tags", 0], "msg": "Input should be a valid string", "input": 1}])
    );
    assert_eq!(
        errors(json!({"window": "x"})),
        json!([{"type": "model_type", "loc": ["window"], "msg": "Input should be a valid dictionary or instance of TimeWindow", "input": "x", "ctx": {"class_name": "TimeWindow"}}])
    );
    assert_eq!(
        errors(json!({"window": {"start": "2020-01-01", "end": "2019-01-01"}})),
        json!([{"type": "value_error", "loc": ["window"], "msg": "Value error, a time window's start must not be after its end", "input": {"start": "2020-01-01", "end": "2019-01-01"}, "ctx": {"error": {}}}])
    );
    assert_eq!(
        errors(json!({"question": "q", "as_of": "garbage"}))[0]["type"],
        "datetime_from_date_parsing"
    );
    assert_eq!(
        errors(json!({"question": "q", "group_by": "SUBJECT"}))[0]["type"],
        "enum"
    );
    assert_eq!(
        errors(json!({"question": "q", "tags": null}))[0]["type"],
        "list_type"
    );
    assert_eq!(
        errors(json!({"question": "q", "top_k": null}))[0]["type"],
        "int_type"
    );
    assert_eq!(errors(json!({"question": 5}))[0]["type"], "string_type");
}

#[test]
fn cross_field_rules_in_order() {
    let rule = |body: Value| errors(body)[0]["msg"].as_str().unwrap().to_owned();
    assert!(rule(json!({})).starts_with("Value error, a query needs a question"));
    assert!(rule(json!({"tags": ["x"]})).starts_with("Value error, a query needs a question"));
    assert!(rule(json!({"count": true, "question": "q"}))
        .contains("aggregate modes (count / group_by)"));
    assert_eq!(
        rule(json!({"object_gt": "abc"})),
        "Value error, object comparison bound 'abc' is neither a number nor an ISO-8601 date/datetime"
    );
    assert_eq!(
        rule(json!({"question": "q", "as_of": "2999-01-01"})),
        "Value error, as_of must not be in the future: the as-of lens answers what the store believed at a past instant (got 2999-01-01T00:00:00+00:00)."
    );
    assert!(
        rule(json!({"question": "q", "min_effective_confidence": 0.5}))
            .contains("applies only to the aggregate modes")
    );
    assert!(
        rule(json!({"window": {"end": "2020-01-01"}, "list_predicates": true}))
            .contains("does not combine")
    );
    let error = &errors(json!({}))[0];
    assert_eq!(error["loc"], json!([]));
    assert_eq!(error["input"], json!({}));
    assert_eq!(error["ctx"], json!({"error": {}}));
}

#[test]
fn modes_and_typed_bounds() {
    assert_eq!(valid(json!({"question": "q"})).mode(), Mode::Semantic);
    assert_eq!(
        valid(json!({"window": {"end": "2020-01-01"}})).mode(),
        Mode::WindowListing
    );
    assert_eq!(valid(json!({"predicate": "p"})).mode(), Mode::ClaimListing);
    assert_eq!(valid(json!({"count": true})).mode(), Mode::Aggregate);
    assert_eq!(
        valid(json!({"list_predicates": true})).mode(),
        Mode::Predicates
    );
    assert_eq!(
        valid(json!({"list_vocabulary": true})).mode(),
        Mode::Vocabulary
    );
    let request = valid(
        json!({"question": "q", "object_gt": "1_000", "object_lt": "2020-01-01", "object_eq": "Paris"}),
    );
    assert_eq!(
        request.gt_bound(),
        Some(&BoundValue::Number(Decimal::parse("1000").unwrap()))
    );
    assert!(matches!(request.lt_bound(), Some(BoundValue::Instant(_))));
    assert_eq!(request.eq_bound(), None);
}

#[test]
fn built_in_code_validates_alike() {
    let now = now();
    assert!(QueryRequest::question("q").validate(now).is_ok());
    let bad = QueryRequest {
        top_k: 0,
        ..QueryRequest::question("q")
    };
    assert_eq!(
        bad.validate(now).unwrap_err().0[0].kind,
        "greater_than_equal"
    );
    let bad = QueryRequest {
        min_confidence: f64::NAN,
        ..QueryRequest::question("q")
    };
    assert!(bad.validate(now).is_err());
    assert!(QueryRequest::default().validate(now).is_err());
}

#[test]
fn envelope_fields() {
    let envelope = Envelope::from_json(
        &json!({"question": "q", "vector": [0.5, 1], "no_embedding": "no", "now": "2026-01-01"}),
    )
    .unwrap();
    assert_eq!(envelope.vector, Some(vec![0.5, 1.0]));
    assert!(!envelope.no_embedding);
    assert_eq!(envelope.now.unwrap().to_string(), "2026-01-01T00:00:00Z");
    assert!(Envelope::from_json(&json!({"vector": "x"})).is_err());
}

#[test]
fn python_reprs() {
    assert_eq!(
        python_repr("a\u{2028}b\u{ad}\u{1F600}"),
        "'a\\u2028b\\xad\u{1F600}'"
    );
    assert_eq!(python_repr("\u{0378}"), "'\\u0378'");
    assert_eq!(python_repr("abc"), "'abc'");
    assert_eq!(python_repr("it's"), "\"it's\"");
    assert_eq!(python_repr("a\nb"), "'a\\nb'");
}

#[test]
fn non_objects_and_big_integers_as_pydantic_says() {
    assert_eq!(
        errors(json!([])),
        json!([{"type": "model_type", "loc": [], "msg": "Input should be a valid dictionary or instance of QueryRequest", "input": [], "ctx": {"class_name": "QueryRequest"}}])
    );
    assert_eq!(
        errors(json!({"question": "q", "top_k": u64::MAX}))[0]["type"],
        "less_than_equal"
    );
    assert_eq!(
        errors(json!({"question": "q", "top_k": "5."}))[0]["type"],
        "int_parsing"
    );
    assert_eq!(
        errors(json!({"question": "q", "count": 0.5}))[0]["type"],
        "bool_type"
    );
    assert_eq!(
        valid(json!({"question": "q", "min_confidence": "0_.5"})).min_confidence,
        0.5
    );
}
