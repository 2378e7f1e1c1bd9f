//! The envelope's JSON Schema (every tool's `outputSchema`, MCP 2025-11-25 "Tools: Output
//! Schema": a client validates `structuredContent` against it), checked with a real JSON Schema
//! validator (`jsonschema`, draft 2020-12): every envelope of the shared vectors and of the
//! golden transcript validates, and the schema admits exactly what the longer schema advertised
//! until 2026-12-01 admitted, over those envelopes and many wrong variants of each.

use mcp_envelope::envelope::Envelope;
use serde_json::{json, Value};

/// The schema as advertised before it was shortened (`status` had `"type": "string"` beside
/// its `enum`): the reference the current one must agree with.
fn schema_before() -> Value {
    json!({
        "type": "object",
        "properties": {
            "call_id": {"type": "string"},
            "tool": {"type": "string"},
            "status": {"type": "string", "enum": ["ok", "truncated", "error"]},
            "content": {"type": "string"},
            "omitted": {"type": "integer", "minimum": 0},
            "retryable": {"type": "boolean"}
        },
        "required": ["call_id", "tool", "status", "content", "omitted", "retryable"],
        "additionalProperties": false
    })
}

/// Every envelope the repository holds as a reference: the `expected` of each shared vector
/// and the `envelope` of each golden transcript record.
fn reference_envelopes() -> Vec<Value> {
    let vectors = include_str!("../vectors/envelope.jsonl");
    let golden = include_str!("../golden/real_servers.jsonl");
    let lines = |text: &'static str, key: &'static str| {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(move |l| serde_json::from_str::<Value>(l).unwrap()[key].clone())
    };
    let all: Vec<Value> = lines(vectors, "expected")
        .chain(lines(golden, "envelope"))
        .collect();
    assert!(
        all.len() >= 80,
        "the vectors and golden records: {}",
        all.len()
    );
    assert!(all.iter().all(Value::is_object));
    all
}

/// Values put in place of each member: every JSON type, the status words, edge numbers.
fn probes() -> Vec<Value> {
    json!([null, true, false, 0, 1, -1, 1.5, 1.0, -0.0, 1e300, -1e300, "", "x", "ok",
           "truncated", "error", "OK", [], ["ok"], {}, {"a": 1}])
    .as_array()
    .unwrap()
    .clone()
}

/// Wrong (and some right) variants of `envelope`: each member removed, each member replaced by
/// each probe, one member added, the members renamed.
fn variants(envelope: &Value) -> Vec<Value> {
    let object = envelope.as_object().unwrap();
    let mut out = Vec::new();
    for key in object.keys() {
        let mut less = object.clone();
        less.remove(key);
        out.push(Value::Object(less));
        for probe in probes() {
            let mut changed = object.clone();
            changed.insert(key.clone(), probe);
            out.push(Value::Object(changed));
        }
        let mut renamed = object.clone();
        let value = renamed.remove(key).unwrap();
        renamed.insert(key.to_uppercase(), value);
        out.push(Value::Object(renamed));
    }
    let mut more = object.clone();
    more.insert("extra".into(), json!(1));
    out.push(Value::Object(more));
    out
}

#[test]
fn every_reference_envelope_validates() {
    let validator = jsonschema::validator_for(&Envelope::json_schema()).unwrap();
    for envelope in reference_envelopes() {
        let errors: Vec<String> = validator
            .iter_errors(&envelope)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{envelope}: {errors:?}");
    }
}

#[test]
fn the_schema_admits_exactly_what_the_longer_one_admitted() {
    let now = jsonschema::validator_for(&Envelope::json_schema()).unwrap();
    let before = jsonschema::validator_for(&schema_before()).unwrap();
    let mut instances: Vec<Value> = probes();
    for envelope in reference_envelopes() {
        instances.extend(variants(&envelope));
        instances.push(envelope);
    }
    let (mut admitted, mut rejected) = (0, 0);
    for instance in &instances {
        let verdict = before.is_valid(instance);
        assert_eq!(now.is_valid(instance), verdict, "{instance}");
        if verdict {
            admitted += 1;
        } else {
            rejected += 1;
        }
    }
    // Both kinds were tried, many times over.
    assert!(
        admitted > 1_000 && rejected > 5_000,
        "{admitted} / {rejected}"
    );
}

#[test]
fn the_schema_stays_short() {
    let text = Envelope::json_schema().to_string();
    assert!(!text.contains("\"type\":\"string\",\"enum\""), "{text}");
    assert!(text.len() <= 330, "{text}");
}
