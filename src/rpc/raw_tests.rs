//! Requests whose answer is wanted unparsed whatever its size ([`Peer::request_by`] with `raw`): a small
//! successful answer to one comes back as text, while every other request's small answer is
//! still parsed, and an error answer is parsed as usual.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::body::ResultBody;
use super::peer::{dispatch_line, Handler, Peer};
use crate::transport::Outbox;
use crate::wire::jsonrpc;

/// A handler for a test that gets no request or notification.
struct Nothing(Mutex<usize>);

impl Handler for Nothing {
    fn notification(&self, _: String, _: Option<Value>) -> Option<oneshot::Receiver<()>> {
        *self.0.lock().unwrap() += 1;
        None
    }

    fn request(&self, _: Value, _: String, _: Option<Value>) {
        *self.0.lock().unwrap() += 1;
    }
}

const TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn only_the_raw_request_gets_its_small_answer_unparsed() {
    let (outbox, mut out) = Outbox::channel();
    let peer = Peer::new("t", outbox);
    let handler = Nothing(Mutex::new(0));
    let (mut a, mut b, mut c) = (|_| {}, |_| {}, |_| {});
    let list = |id: u64| jsonrpc::request_line(&id, "tools/list", None);
    let page = peer.request_by(list, TIMEOUT, &mut a, true);
    let call = peer.request("tools/call", None, TIMEOUT, &mut b);
    let refused = peer.request_by(list, TIMEOUT, &mut c, true);
    let page_line = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}"#;
    let answers = async {
        for _ in 0..3 {
            out.recv().await.unwrap();
        }
        // A notification between the answers is still dispatched as one.
        let lines = [
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#,
            page_line,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#,
        ];
        for line in lines {
            dispatch_line(&peer, &handler, line.as_bytes().to_vec(), None).await;
        }
    };
    let (page, call, refused, ()) = tokio::join!(page, call, refused, answers);
    match page.unwrap().unwrap() {
        ResultBody::Raw(raw) => assert_eq!(raw.as_str(), page_line),
        other => panic!("the page was parsed: {other:?}"),
    }
    assert_eq!(
        call.unwrap().unwrap(),
        ResultBody::Value(json!({"content": []}))
    );
    assert_eq!(
        refused.unwrap(),
        Err(json!({"code": -32601, "message": "no"}))
    );
    assert_eq!(*handler.0.lock().unwrap(), 1);
    // Once no raw request waits, a small answer is parsed again.
    let mut d = |_| {};
    let ping = peer.request("ping", None, TIMEOUT, &mut d);
    let answer = async {
        out.recv().await.unwrap();
        let line = br#"{"jsonrpc":"2.0","id":4,"result":{}}"#.to_vec();
        dispatch_line(&peer, &handler, line, None).await;
    };
    let (ping, ()) = tokio::join!(ping, answer);
    assert_eq!(ping.unwrap().unwrap(), ResultBody::Value(json!({})));
}
