//! Transcripts: one JSON object per line for each `tools/call`, written when the call ends;
//! reading them back; and replay, which recomputes every envelope from its recorded raw outcome.
//! The record type and the replay comparison are pure and live in the core
//! ([`envelope_core::record`], re-exported here, and [`envelope_core::replay`]); this module
//! holds the writer thread, the file I/O and replay over a config.
//!
//! Format (version [`FORMAT_VERSION`]; issue 4 of the project): see [`CallRecord`]. Keys listed
//! in `[transcript] redact_keys` are stored as `"[redacted]"` at any depth, case-insensitively, in
//! the arguments and in the call's events (elicitation answers, sampling requests); the config's
//! `env` values are never written by the proxy itself. The raw outcome is kept exactly as the
//! server sent it, so whatever a tool prints (its environment included) is recorded. The file is created
//! with mode 0600 and each line is written with one `write` on a file opened for appending, so a
//! crash never leaves a broken line in the middle; a reader tolerates a broken last line and
//! says so.
//!
//! The file is opened before the proxy serves anything ([`TranscriptWriter::open`]): a path
//! that cannot be recorded to (a directory, a symlink, a FIFO or anything but a regular file, a
//! missing directory, no permission) is an error naming the path and why ([`OpenError`]), so a
//! user who asked for a transcript never runs without one unknowingly. A file others can read
//! is tightened to 0600 ([`crate::private_file`]).
//!
//! From then on, recording never slows or breaks a call: records go to a writer thread through
//! a bounded channel (a full one drops records, counted and logged); if a write fails later
//! (the disk is full), that is logged once and calls go on.
//!
//! Call records are numbered here ([`TranscriptWriter::record`]): each record queued takes the
//! next `seq` (0, 1, 2, … in this proxy run), so the numbers of a transcript have no gap except
//! where records were dropped because the queue was full (logged).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;
use tracing::warn;

use crate::config::{Config, MediaMode};
use crate::envelope::Envelope;
use crate::outcome::Outcome;
use crate::settings::{RecordedBudget, ToolSettings};

pub use envelope_core::record::*;
pub use envelope_core::replay::ReplayResult;

/// Appends records to a transcript file from a background thread.
#[derive(Debug, Clone)]
pub struct TranscriptWriter {
    tx: std_mpsc::SyncSender<WriterMsg>,
    redact_keys: Vec<String>,
    /// Records dropped because the queue was full.
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The `seq` the next call record gets; held while the record is queued, so that the
    /// records are queued (and written) in the order of their numbers.
    next_seq: std::sync::Arc<std::sync::Mutex<u64>>,
}

/// Why no transcript can be recorded at a path, found when it is opened: the path and the
/// reason, e.g. `cannot record the transcript at "/data/calls.jsonl": its directory "/data"
/// does not exist`.
#[derive(Debug, thiserror::Error)]
#[error("cannot record the transcript at {path:?}: {why}")]
pub struct OpenError {
    /// The path given (`--transcript`, `[transcript] path`).
    pub path: PathBuf,
    /// Why, as a phrase: it is a directory, its directory does not exist, permission denied,
    /// a symlink, a FIFO, ….
    pub why: String,
}

/// Why `path` could not be opened for appending, given the error `err` the open got: a
/// directory, a missing or non-directory parent, no permission, or the error's own text (a
/// symlink, a FIFO, anything but a regular file: [`crate::private_file`]).
fn why_unwritable(path: &Path, err: &std::io::Error) -> String {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return format!(
            "it is a directory, not a file; give a file's path, such as {:?}",
            path.join("calls.jsonl")
        );
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    match (err.kind(), dir) {
        (std::io::ErrorKind::NotFound, Some(dir)) => {
            format!("its directory {dir:?} does not exist; create it or change the path")
        }
        (std::io::ErrorKind::PermissionDenied, _) => {
            "permission denied: this user may not write the file or create it there".to_owned()
        }
        _ if err.raw_os_error() == Some(libc::ENOTDIR) => {
            "a part of the path that should be a directory is not one".to_owned()
        }
        _ => err.to_string(),
    }
}

/// Most records waiting for the writer thread; more are dropped (and counted, with one
/// warning), so a file that cannot keep up never makes the proxy's memory grow.
pub const MAX_QUEUED_RECORDS: usize = 1024;

enum WriterMsg {
    /// A record, and for a large success result the whole response line it came in.
    Record(Box<CallRecord>, Option<String>),
    /// A whole line (without its newline) of another kind, e.g. a [`ToolListRecord`].
    Line(Vec<u8>),
    Flush(std_mpsc::Sender<()>),
}

impl std::fmt::Debug for WriterMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriterMsg")
    }
}

impl TranscriptWriter {
    /// Opens `path` for appending (created with mode 0600 if missing; a symlink, a FIFO or
    /// anything but a regular file refused: [`crate::private_file::open_for_append`]) and
    /// starts the writer thread. `Err` names the path and why it cannot be recorded to; a
    /// write that fails later is logged once, never returned.
    pub fn open(path: PathBuf, redact_keys: Vec<String>) -> Result<TranscriptWriter, OpenError> {
        let (file, loose) = crate::private_file::open_for_append(&path).map_err(|e| OpenError {
            why: why_unwritable(&path, &e),
            path: path.clone(),
        })?;
        if let Some(mode) = loose {
            warn!(path = %path.display(), mode = format!("{mode:o}"), "the transcript could be read by others; its mode is now 0600");
        }
        let (tx, rx) = std_mpsc::sync_channel::<WriterMsg>(MAX_QUEUED_RECORDS);
        std::thread::Builder::new()
            .name("transcript".into())
            .spawn(move || write_loop(&path, file, rx))
            .expect("spawning the transcript thread");
        Ok(TranscriptWriter {
            tx,
            redact_keys,
            dropped: Default::default(),
            next_seq: Default::default(),
        })
    }

    /// Queues a message without waiting; a full queue drops it (see [`MAX_QUEUED_RECORDS`]).
    fn enqueue(&self, msg: WriterMsg) {
        if let Err(std_mpsc::TrySendError::Full(_)) = self.tx.try_send(msg) {
            let before = self
                .dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if before == 0 {
                warn!("the transcript writer is behind ({MAX_QUEUED_RECORDS} records queued); records are dropped until it catches up");
            }
        }
    }

    /// How many records were dropped because the queue was full.
    #[cfg(test)]
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The keys whose argument values are redacted.
    pub fn redact_keys(&self) -> &[String] {
        &self.redact_keys
    }

    /// Queues a call record, numbered: its `seq` is set to the next number of this writer
    /// (the one it had is ignored), taken as it is queued, so records are numbered in the
    /// order they are made (the order the calls end) and no number is left unused; a record
    /// dropped because the queue is full still takes its number (the gap shows the loss).
    /// Never blocks on the file.
    pub fn record(&self, record: CallRecord) {
        self.enqueue_numbered(record, None);
    }

    /// Queues a record whose outcome is the `result` of `response_line`, a whole JSON-RPC
    /// success response as received (a large one, which the proxy never parses into a tree):
    /// the writer thread finds the `result` text and records it verbatim as
    /// `outcome.result`. The record's own `outcome` field is ignored. If the line holds no
    /// valid `result` the outcome is recorded as `invalid_response`. Numbered as by
    /// [`TranscriptWriter::record`].
    pub fn record_response_line(&self, record: CallRecord, response_line: String) {
        self.enqueue_numbered(record, Some(response_line));
    }

    /// Sets `record.seq` to the next number and queues it, both under one lock.
    fn enqueue_numbered(&self, mut record: CallRecord, response_line: Option<String>) {
        let mut next = self.next_seq.lock().unwrap();
        record.seq = *next;
        *next += 1;
        self.enqueue(WriterMsg::Record(Box::new(record), response_line));
    }

    /// Queues a [`ToolListRecord`] of `server`'s `tools`, stamped now.
    pub fn record_tools(&self, server: &str, tool_prefix: &str, tools: &[Value]) {
        let record = ToolListRecord {
            v: FORMAT_VERSION,
            kind: TOOL_LIST_KIND.to_owned(),
            recorded_at: rfc3339_utc_millis(SystemTime::now()),
            server: server.to_owned(),
            tool_prefix: tool_prefix.to_owned(),
            tools: tools.to_vec(),
        };
        let line = serde_json::to_vec(&record).expect("tool lists always serialize");
        self.enqueue(WriterMsg::Line(line));
    }

    /// Waits (up to 5 s) until every queued record has been written; returns at once when the
    /// queue is full.
    pub fn flush(&self) {
        let (tx, rx) = std_mpsc::channel();
        if self.tx.try_send(WriterMsg::Flush(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(5));
        }
    }
}

/// The `result` member of a JSON-RPC response line, unparsed (one pass over the line; `None`
/// unless the line is a valid JSON object with a `result`).
pub(crate) fn result_of_response(line: &str) -> Option<&serde_json::value::RawValue> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    struct ResultMember;
    impl<'de> Visitor<'de> for ResultMember {
        type Value = Option<&'de serde_json::value::RawValue>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON-RPC response")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut result = None;
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "result" && result.is_none() {
                    result = Some(map.next_value()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(result)
        }
    }
    let mut de = serde_json::Deserializer::from_str(line);
    let result = (&mut de).deserialize_map(ResultMember).ok()??;
    de.end().ok()?;
    Some(result)
}

/// The record serialized with `outcome` = `{"kind":"result","result":<the line's result as
/// received>}`; same keys in the same order as [`CallRecord`]'s own serialization (a test
/// checks they agree).
fn record_line_with_raw_result(record: &CallRecord, response_line: &str) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(untagged)]
    enum OutcomeOut<'a> {
        Raw {
            kind: &'static str,
            result: &'a serde_json::value::RawValue,
        },
        Parsed(&'a Outcome),
    }
    #[derive(Serialize)]
    struct RecordOut<'a> {
        v: u32,
        started_at: &'a str,
        seq: u64,
        call_id: &'a str,
        tool: &'a str,
        server: &'a str,
        server_tool: &'a str,
        arguments: &'a Value,
        char_budget: usize,
        #[serde(flatten)]
        budget: &'a RecordedBudget,
        timeout_ms: u64,
        media: MediaMode,
        outcome: OutcomeOut<'a>,
        envelope: &'a Envelope,
        duration_ms: u64,
        #[serde(skip_serializing_if = "<[Value]>::is_empty")]
        events: &'a [Value],
    }
    let invalid = Outcome::InvalidResponse {
        detail: "the recorded result was not valid JSON".into(),
    };
    let outcome = match result_of_response(response_line) {
        Some(result) => OutcomeOut::Raw {
            kind: "result",
            result,
        },
        None => OutcomeOut::Parsed(&invalid),
    };
    let r = record;
    serde_json::to_vec(&RecordOut {
        v: r.v,
        started_at: &r.started_at,
        seq: r.seq,
        call_id: &r.call_id,
        tool: &r.tool,
        server: &r.server,
        server_tool: &r.server_tool,
        arguments: &r.arguments,
        char_budget: r.char_budget,
        budget: &r.budget,
        timeout_ms: r.timeout_ms,
        media: r.media,
        outcome,
        envelope: &r.envelope,
        duration_ms: r.duration_ms,
        events: &r.events,
    })
    .expect("records always serialize")
}

/// The writer thread: writes each queued line to `file` (the transcript at `path`, opened by
/// [`TranscriptWriter::open`]); the first failed write is logged, and writing goes on.
fn write_loop(path: &Path, mut f: std::fs::File, rx: std_mpsc::Receiver<WriterMsg>) {
    let mut failed_once = false;
    for msg in rx {
        match msg {
            WriterMsg::Flush(done) => {
                let _ = done.send(());
            }
            WriterMsg::Line(mut line) => {
                line.push(b'\n');
                if let Err(e) = f.write_all(&line) {
                    if !failed_once {
                        warn!(path = %path.display(), error = %e, "writing the transcript failed; calls go on");
                        failed_once = true;
                    }
                }
            }
            WriterMsg::Record(record, raw) => {
                let mut line = match &raw {
                    None => serde_json::to_vec(&record).expect("records always serialize"),
                    Some(response) => record_line_with_raw_result(&record, response),
                };
                line.push(b'\n');
                if let Err(e) = f.write_all(&line) {
                    if !failed_once {
                        warn!(path = %path.display(), error = %e, "writing the transcript failed; calls go on");
                        failed_once = true;
                    }
                }
                // A large record (a big result recorded exactly) is freed here, after the
                // session's own release ran: give the memory back now.
                let large = line.len() >= crate::downstream::LARGE_MESSAGE_BYTES;
                drop((line, record, raw));
                if large {
                    crate::downstream::trim_heap();
                }
            }
        }
    }
}

/// A transcript read back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    /// The call records in file order.
    pub records: Vec<CallRecord>,
    /// The tool-list records in file order (none in transcripts written before they were
    /// recorded).
    pub tool_lists: Vec<ToolListRecord>,
    /// A warning when the last line was broken and skipped (e.g. the proxy was killed while
    /// writing it).
    pub broken_last_line: Option<String>,
}

/// Why a transcript cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("{path}: cannot read")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line other than the last is not a valid record.
    #[error("{path}:{line}: not a transcript record: {message}")]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The checks a call record's JSON object must pass before it is read as a [`CallRecord`]:
/// the format version this build reads, and `arguments` (when present) an object, except in
/// the record of a call the proxy refused (outcome `refused`), which holds the arguments as the
/// client sent them, refused perhaps for being no object. The error is the message for the
/// line.
fn check_call_shape(obj: &serde_json::Map<String, Value>) -> Result<(), String> {
    match obj.get("v").and_then(Value::as_u64) {
        Some(v) if v == u64::from(FORMAT_VERSION) => {}
        other => {
            let found = other.map_or("no `v`".to_owned(), |v| format!("version {v}"));
            return Err(format!(
                "unsupported transcript format ({found}; this mcp-envelope reads version {FORMAT_VERSION})"
            ));
        }
    }
    let kind = obj.get("outcome").and_then(|o| o.get("kind"));
    let refused = kind.and_then(Value::as_str) == Some("refused");
    let what = match obj.get("arguments") {
        None | Some(Value::Object(_)) => return Ok(()),
        Some(_) if refused => return Ok(()),
        Some(Value::Array(_)) => "an array",
        Some(Value::String(_)) => "a string",
        Some(Value::Number(_)) => "a number",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Null) => "null",
    };
    Err(format!("`arguments` must be an object, not {what}"))
}

/// Parses transcript text (pure). Blank lines are skipped; a broken last line is tolerated and
/// reported in [`Transcript::broken_last_line`]; any other bad line is an error naming it.
pub fn parse_transcript(text: &str, path: &Path) -> Result<Transcript, ReadError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .collect();
    let mut records = Vec::with_capacity(lines.len());
    let mut tool_lists = Vec::new();
    let mut broken_last_line = None;
    let mut seen: std::collections::HashMap<(u64, String), usize> = Default::default();
    let last = lines.len();
    let bad = |line: usize, message: String| ReadError::BadLine {
        path: path.to_owned(),
        line,
        message,
    };
    for (n, (line_no, line)) in lines.into_iter().enumerate() {
        if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) {
            if obj.get("kind").and_then(Value::as_str) == Some(TOOL_LIST_KIND) {
                let list = serde_json::from_str::<ToolListRecord>(line)
                    .map_err(|e| bad(line_no, format!("not a tool-list record: {e}")))?;
                tool_lists.push(list);
                continue;
            }
            check_call_shape(&obj).map_err(|message| bad(line_no, message))?;
        }
        match serde_json::from_str::<CallRecord>(line) {
            Ok(r) => {
                // The same call (start order, start time and id) twice: a file appended twice.
                let key = (r.seq, format!("{} {}", r.started_at, r.call_id));
                if let Some(first) = seen.insert(key, line_no) {
                    return Err(bad(
                        line_no,
                        format!(
                            "duplicate call record: line {first} already holds call seq {} started at {}",
                            r.seq, r.started_at
                        ),
                    ));
                }
                records.push(r);
            }
            // Only a line cut short (the proxy killed while writing it) is forgiven: any other
            // fault of a last line (a wrong type, a missing member, a byte order mark) is an
            // error as it is on any other line, or a damaged file would replay green.
            Err(e) if n + 1 == last && e.is_eof() => {
                broken_last_line = Some(format!(
                    "{}:{line_no}: the last line is incomplete and was skipped ({e})",
                    path.display()
                ));
            }
            Err(e) => {
                return Err(ReadError::BadLine {
                    path: path.to_owned(),
                    line: line_no,
                    message: e.to_string(),
                })
            }
        }
    }
    Ok(Transcript {
        records,
        tool_lists,
        broken_last_line,
    })
}

/// Reads a transcript file; see [`parse_transcript`].
/// A file whose last character was cut short (the proxy killed in the middle of writing a
/// multi-byte character) reads as text up to it, so that its last line is reported as cut
/// short; any other invalid UTF-8 is an error.
pub fn read_transcript(path: &Path) -> Result<Transcript, ReadError> {
    let io_error = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io_error)?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        // `error_len` is `None` only for a sequence the end of the input cut short.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid up to there")
        }
        Err(e) => {
            let source = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
            return Err(io_error(source));
        }
    };
    parse_transcript(text, path)
}

/// The config's settings for a record's server and tool, when a config is given (replay then
/// uses them instead of the recorded ones).
fn current(record: &CallRecord, config: Option<&Config>) -> Option<ToolSettings> {
    config.map(|c| c.tool_settings(&record.server, &record.server_tool))
}

/// Replays every record (see [`envelope_core::replay::recompute_after`]).
pub fn replay(transcript: &Transcript, config: Option<&Config>) -> Vec<ReplayResult> {
    envelope_core::replay::replay(&transcript.records, |r| current(r, config))
}

/// `replay --update`: sets each record's envelope to the recomputed one and its settings to
/// those it was recomputed with, so a later replay without `--config` agrees.
pub fn apply_update(
    records: &mut [CallRecord],
    results: Vec<ReplayResult>,
    config: Option<&Config>,
) {
    envelope_core::replay::apply_update(records, results, |r| current(r, config));
}

/// Replaces the transcript at `path` with `transcript` (its tool lists, then its call records),
/// atomically (a temporary file in the same
/// folder, then a rename) and keeping the file's permission bits (0600 when it had none). A
/// symlink is followed: the file it points to is replaced.
pub fn rewrite(path: &Path, transcript: &Transcript) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // Replace the file a symlink points to, not the link.
    let path = &std::fs::canonicalize(path)?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    // Tool lists first (their order among themselves kept), then the calls in order.
    let mut text = String::new();
    for list in &transcript.tool_lists {
        text.push_str(&serde_json::to_string(list).expect("tool lists always serialize"));
        text.push('\n');
    }
    text.push_str(&to_text(&transcript.records));
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Serializes records back to transcript text (used by `replay --update`).
pub fn to_text(records: &[CallRecord]) -> String {
    let mut out = String::new();
    for r in records {
        out.push_str(&serde_json::to_string(r).expect("records always serialize"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
