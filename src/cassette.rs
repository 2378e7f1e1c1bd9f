//! Cassettes: a recorded transcript served again as if its servers were there (pure: the
//! transcript in, tool lists and recorded outcomes out; `serve --cassette` wires it in).
//!
//! * Tools: each server's last recorded tool list ([`crate::transcript::ToolListRecord`]). A
//!   transcript written before tool lists were recorded offers each tool it has calls of, as
//!   `{"name": <server_tool>, "inputSchema": {"type": "object"}}`.
//! * Matching a `tools/call`: the server and the server's tool name (after the proxy's routing,
//!   so prefixes may change between recording and playback) and the arguments as canonical
//!   JSON (object keys sorted at every depth), leaving out the configured ignored keys at any
//!   depth. A recorded value `"[redacted]"` matches any value. Calls that match the same
//!   recording are answered with its outcomes in recorded order; each outcome is used once.
//! * A call recorded as cancelled by its client (`{"kind":"cancelled"}`) has no answer to play
//!   and is left out (its tool is still offered).
//! * An unmatched call is answered by [`Miss`], which names the closest recorded call: of the
//!   same tool the one whose canonical arguments are most alike (by a character diff ratio),
//!   else the recorded call of the most alike tool name.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde_json::{Map, Value};

use crate::outcome::Outcome;
use crate::settings::ToolSettings;
use crate::transcript::{Transcript, REDACTED};

/// One recorded call: its canonical arguments and the outcomes still to be played, in order.
#[derive(Debug, Clone)]
struct Recorded {
    /// The arguments as recorded, with ignored keys removed (for matching and for messages).
    arguments: Value,
    outcomes: VecDeque<Outcome>,
    /// How many outcomes were recorded (for the message once they are used up).
    recorded: usize,
}

/// A transcript ready to be served: tool lists per server and recorded outcomes per call.
#[derive(Debug, Clone, Default)]
pub struct Cassette {
    /// `(server, tools)` in the order servers first appear in the transcript.
    tool_lists: Vec<(String, Vec<Value>)>,
    /// Server -> the `tool_prefix` its last recorded tool list was named under.
    prefixes: HashMap<String, String>,
    /// `(server, server tool)` -> the distinct recorded calls, in first-recorded order.
    calls: HashMap<(String, String), Vec<Recorded>>,
    /// `(server, server tool)` -> the settings of its last recorded call.
    settings: HashMap<(String, String), ToolSettings>,
    ignored_keys: Vec<String>,
}

/// Why a call found no recorded answer, for a `not_found` error envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// One sentence for the model and the user, naming the closest recorded call if any.
    pub message: String,
}

/// The JSON text of `value` with object keys sorted at every depth and `ignored` keys (exact,
/// at any depth) left out.
#[cfg(test)]
pub fn canonical_json(value: &Value, ignored: &[String]) -> String {
    canonical(value, ignored).to_string()
}

fn canonical(value: &Value, ignored: &[String]) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> = map
                .iter()
                .filter(|(k, _)| !ignored.contains(k))
                .map(|(k, v)| (k, canonical(v, ignored)))
                .collect();
            let mut out = Map::new();
            for (k, v) in sorted {
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| canonical(v, ignored)).collect()),
        other => other.clone(),
    }
}

/// Whether `called` matches `recorded`: equal, where a recorded `"[redacted]"` matches anything.
fn matches(recorded: &Value, called: &Value) -> bool {
    match (recorded, called) {
        (Value::String(s), _) if s == REDACTED => true,
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| matches(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| matches(v, w))
        }
        (a, b) => a == b,
    }
}

/// How alike two strings are, 0.0 to 1.0 (a character diff ratio).
fn likeness(a: &str, b: &str) -> f32 {
    similar::TextDiff::from_chars(a, b).ratio()
}

impl Cassette {
    /// Builds a cassette from a transcript read back; `ignored_keys` are argument keys left out
    /// of matching (for example a request id or a timestamp the agent sends each run).
    pub fn new(transcript: &Transcript, ignored_keys: Vec<String>) -> Cassette {
        let mut c = Cassette {
            ignored_keys,
            ..Cassette::default()
        };
        for list in &transcript.tool_lists {
            c.prefixes
                .insert(list.server.clone(), list.tool_prefix.clone());
            match c.tool_lists.iter_mut().find(|(s, _)| *s == list.server) {
                Some((_, tools)) => tools.clone_from(&list.tools),
                None => c.tool_lists.push((list.server.clone(), list.tools.clone())),
            }
        }
        for record in &transcript.records {
            if record.server.is_empty() {
                continue; // a call of a tool no server had: nothing to offer
            }
            c.ensure_tool(&record.server, &record.server_tool);
            if record.outcome == Outcome::Cancelled {
                continue; // no answer to play: the client cancelled the call
            }
            if matches!(record.outcome, Outcome::Refused { .. }) {
                continue; // the proxy's own refusal, not the server's answer to these arguments
            }
            let arguments = canonical(&record.arguments, &c.ignored_keys);
            let key = (record.server.clone(), record.server_tool.clone());
            let timeout = std::time::Duration::from_millis(record.timeout_ms);
            let settings = record
                .budget
                .settings(record.char_budget, timeout, record.media);
            c.settings.insert(key.clone(), settings);
            let calls = c.calls.entry(key).or_default();
            let outcome = record.outcome.clone();
            match calls.iter_mut().find(|r| r.arguments == arguments) {
                Some(r) => {
                    r.outcomes.push_back(outcome);
                    r.recorded += 1;
                }
                None => calls.push(Recorded {
                    arguments,
                    outcomes: VecDeque::from([outcome]),
                    recorded: 1,
                }),
            }
        }
        c
    }

    /// Offers `tool` of `server` if no recorded tool list has it (older transcripts).
    fn ensure_tool(&mut self, server: &str, tool: &str) {
        let stub = || serde_json::json!({"name": tool, "inputSchema": {"type": "object"}});
        match self.tool_lists.iter_mut().find(|(s, _)| s == server) {
            Some((_, tools)) => {
                if !tools
                    .iter()
                    .any(|t| t.get("name").and_then(Value::as_str) == Some(tool))
                {
                    tools.push(stub());
                }
            }
            None => self.tool_lists.push((server.to_owned(), vec![stub()])),
        }
    }

    /// The servers the cassette has tools of, in first-seen order.
    #[cfg(test)]
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.tool_lists.iter().map(|(s, _)| s.as_str())
    }

    /// The tool definitions of `server` (`None` for a server the cassette does not know).
    #[cfg(test)]
    pub fn tools(&self, server: &str) -> Option<&[Value]> {
        self.tool_lists
            .iter()
            .find(|(s, _)| s == server)
            .map(|(_, t)| t.as_slice())
    }

    /// The next recorded outcome for a call of `tool` on `server` with `arguments`, or why
    /// there is none. `shown` is the tool name the client used, for the message.
    pub fn answer(
        &mut self,
        server: &str,
        tool: &str,
        shown: &str,
        arguments: &Value,
    ) -> Result<Outcome, Miss> {
        let called = canonical(arguments, &self.ignored_keys);
        let key = (server.to_owned(), tool.to_owned());
        let recorded = self.calls.get_mut(&key);
        if let Some(calls) = recorded {
            // The first recording that matches and has an outcome left; else the first match.
            let mut matching = calls.iter_mut().filter(|r| matches(&r.arguments, &called));
            let first = matching.next();
            let hit = match first {
                Some(r) if r.outcomes.is_empty() => {
                    matching.find(|r| !r.outcomes.is_empty()).ok_or(r.recorded)
                }
                Some(r) => Ok(r),
                None => Err(0),
            };
            match hit {
                Ok(r) => return Ok(r.outcomes.pop_front().expect("an outcome is left")),
                Err(used) if used > 0 => {
                    return Err(Miss {
                        message: format!(
                            "no recorded answer left for {shown} {}: the cassette's {used} answer(s) to this call were already played",
                            called
                        ),
                    })
                }
                Err(_) => {}
            }
        }
        Err(self.miss(server, tool, shown, &called))
    }

    /// The message for a call nothing recorded matches, naming the closest recorded call.
    fn miss(&self, server: &str, tool: &str, shown: &str, called: &Value) -> Miss {
        let called_text = called.to_string();
        let same_tool = self.calls.get(&(server.to_owned(), tool.to_owned()));
        let closest = match same_tool {
            Some(calls) => calls
                .iter()
                .map(|r| {
                    let text = r.arguments.to_string();
                    (likeness(&text, &called_text), format!("{shown} {text}"))
                })
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, c)| c),
            None => self
                .calls
                .iter()
                .filter_map(|((_, t), calls)| Some((t, calls.first()?)))
                .map(|(t, r)| (likeness(t, tool), format!("{t} {}", r.arguments)))
                .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
                .map(|(_, c)| c),
        };
        let message = match closest {
            Some(c) => format!(
                "the cassette has no recorded call of {shown} {called_text}; the closest recorded call is {c}"
            ),
            None => format!("the cassette has no recorded call of {shown} {called_text}; it has no recorded calls"),
        };
        Miss { message }
    }
}

#[cfg(test)]
mod tests;

/// A cassette being served: the recorded answers, and what to do with a call it has none for.
#[derive(Debug)]
pub struct Playback {
    cassette: std::sync::Mutex<Cassette>,
    /// `record-missing`: the real servers are started and an unmatched call is forwarded to
    /// them (and recorded); otherwise (`strict`) no server is started and it is `not_found`.
    pub record_missing: bool,
    /// Whether a tool the cassette has calls of is mapped with the settings of its last
    /// recorded call ([`Playback::settings`]) rather than the config's.
    recorded_settings: bool,
    /// Whether the session's transcript is the cassette file itself (`record-missing` without
    /// another `--transcript`): then only what the cassette lacks is appended to it
    /// ([`Playback::records_into_itself`]).
    records_into_itself: bool,
}

impl Playback {
    /// Serves `cassette`; see [`Playback::record_missing`].
    pub fn new(cassette: Cassette, record_missing: bool) -> Playback {
        Playback {
            cassette: std::sync::Mutex::new(cassette),
            record_missing,
            recorded_settings: false,
            records_into_itself: false,
        }
    }

    /// This playback, told that the session records into the cassette file itself: a call the
    /// cassette answered, or a tool list it already holds, is not appended again (so a session
    /// run twice leaves the cassette as it was).
    pub fn recording_into_itself(mut self) -> Playback {
        self.records_into_itself = true;
        self
    }

    /// Whether the transcript is the cassette itself ([`Playback::recording_into_itself`]).
    pub fn records_into_itself(&self) -> bool {
        self.records_into_itself
    }

    /// Whether the cassette holds a tool list of `server` equal to `tools` (as exposed, the
    /// JSON a tool-list record holds), with `prefix` as the server's recorded `tool_prefix`:
    /// such a list need not be recorded again.
    pub fn holds_tool_list(&self, server: &str, prefix: &str, tools: &[Value]) -> bool {
        let cassette = self.cassette.lock().unwrap();
        let recorded_prefix = cassette.prefixes.get(server).map_or("", String::as_str);
        recorded_prefix == prefix
            && cassette
                .tool_lists
                .iter()
                .any(|(s, recorded)| s == server && recorded.as_slice() == tools)
    }

    /// This playback, mapping each tool the cassette has calls of with the settings of its
    /// last recorded call (budgets, `text_rows`, `long_rows`, media, timeout), as `replay` does
    /// without `--config`: `serve --cassette` when no `--config` is given.
    pub fn with_recorded_settings(mut self) -> Playback {
        self.recorded_settings = true;
        self
    }

    /// The recorded settings of `tool` of `server` when this playback uses them
    /// ([`Playback::with_recorded_settings`]) and the cassette has calls of that tool.
    pub fn settings(&self, server: &str, tool: &str) -> Option<ToolSettings> {
        if !self.recorded_settings {
            return None;
        }
        let key = (server.to_owned(), tool.to_owned());
        self.cassette.lock().unwrap().settings.get(&key).copied()
    }

    /// The `tool_prefix` `server`'s tools were named under when its list was recorded (`""`
    /// when none was, or the transcript predates recorded prefixes): the prefix of a server
    /// the config does not name, so the cassette offers the names the session gave.
    pub fn prefix(&self, server: &str) -> String {
        let cassette = self.cassette.lock().unwrap();
        cassette.prefixes.get(server).cloned().unwrap_or_default()
    }

    /// The recorded tool lists, `(server, tools)`, each with only its well-formed tools (a
    /// hand-edited cassette is checked like a live server's list: one bad tool must not make a
    /// client reject every tool).
    pub fn tool_lists(&self) -> Vec<(String, Vec<crate::server_tool::ServerTool>)> {
        let lists = self.cassette.lock().unwrap().tool_lists.clone();
        lists
            .into_iter()
            .map(|(server, tools)| {
                let texts = tools.iter().map(Value::to_string);
                let (tools, warnings) = crate::tool_validation::admit(&server, texts);
                for w in warnings {
                    tracing::warn!("cassette: {w}");
                }
                (server, tools)
            })
            .collect()
    }

    /// The outcome to answer a call with: the next recorded one; for a call the cassette has
    /// no answer for, [`Outcome::NotRecorded`] in strict mode and `None` (go to the server)
    /// with `record-missing`.
    pub fn answer(
        &self,
        server: &str,
        tool: &str,
        shown: &str,
        arguments: &Value,
    ) -> Option<Outcome> {
        let answer = self
            .cassette
            .lock()
            .unwrap()
            .answer(server, tool, shown, arguments);
        match answer {
            Ok(outcome) => Some(outcome),
            Err(_) if self.record_missing => None,
            Err(miss) => Some(Outcome::NotRecorded {
                detail: miss.message,
            }),
        }
    }
}
