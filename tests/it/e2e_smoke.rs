//! A first end-to-end check of the raw client helper against the fixture server.
use crate::common;
use common::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn fixture_rows_are_enveloped_and_children_are_reaped() {
    let (_dir, config) = write_config(&format!(
        "[defaults]\nchar_budget = 40\n{}",
        fixture_server("fx", &[], "")
    ));
    let mut p = RawProxy::start(&config, &[]);
    let init = p.initialize("2025-06-18");
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
    let kids = children_of(p.pid());
    assert_eq!(kids.len(), 1, "one fixture child");
    let resp = p.call(json!(7), "rows", json!({"n": 5}), Duration::from_secs(20));
    let env = envelope_of(&resp);
    assert_eq!(env["call_id"], "7");
    assert_eq!(env["status"], "truncated");
    assert_eq!(env["content"], "i=0,name=row-0; i=1,name=row-1");
    assert_eq!(env["omitted"], 3);
    let status = p.close(Duration::from_secs(10));
    assert!(status.success());
    assert!(wait_gone(&kids, Duration::from_secs(5)).is_empty());
}
