//! The shapes of a client's prompt and completion params that the proxy forwards without
//! otherwise reading them, checked before they are sent: a server that chokes on a wrong
//! shape may never answer, and the request would wait for its timeout. Pure.
//!
//! Source: MCP 2025-11-25 schema (the same in 2026-07-28): `GetPromptRequest.params.arguments`
//! is `{ [key: string]: string }`; `CompleteRequest.params.argument` is `{ name: string;
//! value: string }` (required) and `context.arguments` is `{ [key: string]: string }`.

use jsonrpc_core::ErrorCode;
use serde_json::Value;

use crate::jsonrpc;

/// The -32602 error for `prompts/get` params whose `arguments` (when present) is not an object
/// of strings, naming the member; else `None`.
pub fn prompt_params_error(params: &Value) -> Option<Value> {
    string_map_error(params.get("arguments"), "arguments")
}

/// The -32602 error for `completion/complete` params whose `argument` is not an object with a
/// string `name` and a string `value`, or whose `context.arguments` (when present) is not an
/// object of strings; else `None`.
pub fn completion_params_error(params: &Value) -> Option<Value> {
    let argument = params.get("argument");
    let named = |key: &str| {
        argument
            .and_then(|a| a.get(key))
            .is_some_and(Value::is_string)
    };
    if !(named("name") && named("value")) {
        return Some(invalid(
            "`argument` must be an object with a string `name` and a string `value`",
        ));
    }
    let context = params.get("context");
    if context.is_some_and(|c| !c.is_object()) {
        return Some(invalid("`context` must be an object"));
    }
    string_map_error(
        context.and_then(|c| c.get("arguments")),
        "context.arguments",
    )
}

/// The -32602 error when `value` is present and not an object whose values are all strings.
fn string_map_error(value: Option<&Value>, name: &str) -> Option<Value> {
    let map = value?;
    let ok = map
        .as_object()
        .is_some_and(|m| m.values().all(Value::is_string));
    (!ok).then(|| invalid(&format!("`{name}` must be an object of strings")))
}

fn invalid(message: &str) -> Value {
    jsonrpc::error_object(ErrorCode::InvalidParams, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(err: Option<Value>, what: &str) {
        let err = err.unwrap_or_else(|| panic!("{what} accepted"));
        assert_eq!(err["code"], -32602);
        assert!(err["message"].as_str().unwrap().contains(what), "{err}");
    }

    #[test]
    fn prompt_arguments_are_an_object_of_strings() {
        names(
            prompt_params_error(&json!({"name": "p", "arguments": {"a": 1}})),
            "arguments",
        );
        names(
            prompt_params_error(&json!({"name": "p", "arguments": "a=1"})),
            "arguments",
        );
        names(
            prompt_params_error(&json!({"name": "p", "arguments": null})),
            "arguments",
        );
        assert_eq!(prompt_params_error(&json!({"name": "p"})), None);
        assert_eq!(prompt_params_error(&json!({"arguments": {"a": "1"}})), None);
    }

    #[test]
    fn a_completion_names_its_argument_with_strings() {
        let r = json!({"type": "ref/prompt", "name": "p"});
        let arg = json!({"name": "a", "value": "x"});
        names(completion_params_error(&json!({"ref": r})), "argument");
        let wrong = json!({"ref": r, "argument": {"name": "a", "value": 3}});
        names(completion_params_error(&wrong), "argument");
        let wrong = json!({"ref": r, "argument": arg, "context": {"arguments": {"b": [1]}}});
        names(completion_params_error(&wrong), "context.arguments");
        let wrong = json!({"ref": r, "argument": arg, "context": 5});
        names(completion_params_error(&wrong), "context");
        let fine = json!({"ref": r, "argument": arg, "context": {"arguments": {"b": "y"}}});
        assert_eq!(completion_params_error(&fine), None);
        assert_eq!(
            completion_params_error(&json!({"ref": r, "argument": arg})),
            None
        );
    }
}
