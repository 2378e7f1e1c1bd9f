//! A call that failed because a request of its server to the client failed (the client did not
//! declare the capability it needs, or answered with an error): the outcome says so
//! ([`Outcome::InputFailed`]: `unavailable`, naming the capability), whether the server passed
//! the failure on as a JSON-RPC error or as a tool error (`isError`), so that the envelope
//! blames neither the server nor the tool for what the client cannot do.

use serde_json::Value;

use super::calls::CallOutcome;
use super::Core;
use crate::downstream::ResultBody;
use crate::outcome::errors::{input_failure, input_failure_in_result};
use crate::outcome::Outcome;

impl Core {
    /// The outcome of call `key`'s success response `body`: as it came (its text, unparsed,
    /// or its parsed result) unless a request of its server to the client failed during the
    /// call (rare), when the result is parsed (here, on the runtime's thread: a rare path) and
    /// read for that failure ([`input_failure_in_result`]). Not async: the call's future keeps
    /// no state for it (see `answer_request` in src/proxy/dispatch.rs).
    pub(super) fn result_outcome(&self, key: u64, body: ResultBody) -> CallOutcome {
        let Some(input) = self.calls.input_error(key) else {
            return match body {
                ResultBody::Raw(raw) => CallOutcome::Raw(raw),
                ResultBody::Value(result) => CallOutcome::Outcome(Outcome::Result { result }),
            };
        };
        let parsed = match body {
            ResultBody::Raw(raw) => raw.parse(),
            ResultBody::Value(result) => Ok(Ok(result)),
        };
        let result = match parsed {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => return CallOutcome::Outcome(Outcome::RpcError { error }),
            Err(e) => {
                let detail = e.to_string();
                return CallOutcome::Outcome(Outcome::InvalidResponse { detail });
            }
        };
        let failed = input_failure_in_result(&input.method, &input.error, input.by_client, &result);
        CallOutcome::Outcome(failed.unwrap_or(Outcome::Result { result }))
    }

    /// The outcome of call `key`'s JSON-RPC `error`: [`Outcome::InputFailed`] when it repeats
    /// the error a request of the server to the client got during the call
    /// ([`input_failure`]), else [`Outcome::RpcError`].
    pub(super) fn rpc_error_outcome(&self, key: u64, error: Value) -> Outcome {
        let failed = self
            .calls
            .input_error(key)
            .and_then(|input| input_failure(&input.method, &input.error, input.by_client, &error));
        failed.unwrap_or(Outcome::RpcError { error })
    }
}
