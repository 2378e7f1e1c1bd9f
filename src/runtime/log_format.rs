//! The log line's two costly parts done cheaper, with the same text: the timestamp
//! ([`CachedSecondTime`]) and the escaping of the message ([`EscapedMessageFields`]).
//!
//! Why: the one info line per `tools/call` (issue 7) cost about 8,400 instructions per call,
//! a ninth of a small call (callgrind, BENCHMARKS.md "Round two"): 2,400 to turn the clock
//! into a date and time, and 4,400 in tracing-subscriber's escaping of terminal control
//! characters, which hands the message to the output one character at a time. Here the date
//! and time to the second are formatted once per second, and the message is escaped in runs:
//! a piece with nothing to escape is written whole.

use std::cell::Cell;
use std::fmt::{self, Write};

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{RecordFields, VisitOutput};
use tracing_subscriber::fmt::format::{DefaultVisitor, FormatFields, Writer};
use tracing_subscriber::fmt::time::FormatTime;

/// The timer of the log: UTC, `2026-12-02T02:13:46.123456Z`, the text of tracing-subscriber's
/// `SystemTime` timer, with everything up to the seconds formatted once per second (per
/// thread).
#[derive(Clone, Copy, Default)]
pub struct CachedSecondTime;

/// `YYYY-MM-DDTHH:MM:SS.` of one second since the Unix epoch.
type SecondText = [u8; 20];

thread_local! {
    /// The last second formatted on this thread and its text (`u64::MAX`: none yet).
    static LAST_SECOND: Cell<(u64, SecondText)> = const { Cell::new((u64::MAX, [0; 20])) };
}

impl FormatTime for CachedSecondTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .filter(|d| d.as_secs() < YEAR_10000_SECS);
        let Some(since_epoch) = since_epoch else {
            // Before 1970 or after 9999: tracing-subscriber's own text for such clocks.
            return tracing_subscriber::fmt::time::SystemTime.format_time(w);
        };
        let secs = since_epoch.as_secs();
        let (last, mut text) = LAST_SECOND.with(Cell::get);
        if last != secs {
            text = second_text(secs);
            LAST_SECOND.with(|c| c.set((secs, text)));
        }
        let mut micros = [b'0', b'0', b'0', b'0', b'0', b'0', b'Z'];
        put_digits(&mut micros[..6], u64::from(since_epoch.subsec_micros()));
        // Both are ASCII digits and punctuation.
        w.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)?;
        w.write_str(std::str::from_utf8(&micros).map_err(|_| fmt::Error)?)
    }
}

/// 10000-01-01T00:00:00Z in seconds since the epoch: the first second whose year has five
/// digits.
const YEAR_10000_SECS: u64 = 253_402_300_800;

/// `YYYY-MM-DDTHH:MM:SS.` of `secs` seconds since the epoch (UTC, before year 10000).
fn second_text(secs: u64) -> SecondText {
    // humantime writes RFC 3339 with the proleptic Gregorian calendar (`…SSZ`); its first 19
    // characters are the ones this second shares with every other instant in it.
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let whole = humantime::format_rfc3339_seconds(at).to_string();
    let mut text = *b"0000-00-00T00:00:00.";
    text[..19].copy_from_slice(&whole.as_bytes()[..19]);
    text
}

/// Writes `n` as decimal digits right-aligned into `out`, zero-padded (the leading digits of a
/// number too large for `out` are dropped).
fn put_digits(out: &mut [u8], mut n: u64) {
    for d in out.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// The field formatter of the log: tracing-subscriber's default (`DefaultFields`) for every
/// field but the message, which it writes as the default does (`{:?}` of the message, with
/// terminal control characters escaped when the writer asks for it) in runs instead of one
/// character at a time.
#[derive(Clone, Copy, Default)]
pub struct EscapedMessageFields;

impl<'writer> FormatFields<'writer> for EscapedMessageFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = FieldsVisitor {
            writer,
            written: false,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

/// Writes the fields of one event or span: the message itself, the others through a
/// `DefaultVisitor` each.
struct FieldsVisitor<'writer> {
    writer: Writer<'writer>,
    /// A field was written (the next one is preceded by a space).
    written: bool,
    result: fmt::Result,
}

impl FieldsVisitor<'_> {
    fn message(&mut self, value: &dyn fmt::Debug) {
        if self.written {
            self.result = self.writer.write_char(' ');
        }
        self.written = true;
        if self.result.is_ok() {
            self.result = if self.writer.sanitizes_ansi_escapes() {
                write!(Escaping(&mut self.writer), "{value:?}")
            } else {
                write!(self.writer, "{value:?}")
            };
        }
    }

    /// A field other than the message and an error, written as `DefaultVisitor` writes it
    /// (`name=` in italics and dimmed with colours, then `{value:?}`), but with the value's
    /// control characters escaped: a `%value` field (its `Display` text) is not quoted, so a
    /// request id or tool name with a newline in it would otherwise forge a log line.
    fn field(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let name = field.name();
        if name.starts_with("log.") {
            return; // the default leaves out the `log.` fields of records from the `log` crate
        }
        let name = name.strip_prefix("r#").unwrap_or(name);
        if self.written {
            self.result = self.writer.write_char(' ');
        }
        self.written = true;
        if self.result.is_ok() {
            // nu-ansi-term's italic and dimmed, as the default writes them.
            self.result = if self.writer.has_ansi_escapes() {
                write!(self.writer, "\x1b[3m{name}\x1b[0m\x1b[2m=\x1b[0m")
            } else {
                write!(self.writer, "{name}=")
            };
        }
        if self.result.is_ok() {
            self.result = write!(Escaping(&mut self.writer), "{value:?}");
        }
    }

    fn other(&mut self, record: impl FnOnce(&mut DefaultVisitor<'_>), field: &Field) {
        let mut inner = DefaultVisitor::new(self.writer.by_ref(), !self.written);
        record(&mut inner);
        self.result = inner.finish();
        // The default visitor leaves out the `log.` fields of records from the `log` crate.
        self.written |= !field.name().starts_with("log.");
    }
}

impl Visit for FieldsVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        if field.name() == "message" {
            self.message(&format_args!("{value}"));
        } else {
            self.field(field, &value);
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if self.result.is_ok() {
            self.other(|v| v.record_error(field, value), field);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        if field.name() == "message" {
            self.message(value);
        } else {
            self.field(field, value);
        }
    }
}

/// Escapes what tracing-subscriber's escaping escapes (ESC, BEL, BS, FF, DEL as `\x1b`-style
/// text; the C1 controls U+0080–U+009F as `\u{80}`-style text), the same way, and the other
/// C0 controls too (`\n`, `\r`, `\t`, else `\x01`-style), so that no text in a log line can
/// end it and forge the next one; writes each run of other characters in one piece.
struct Escaping<'a, W: Write>(&'a mut W);

/// The bytes that start something [`Escaping`] escapes: the C0 controls, DEL, and 0xC2, the
/// first byte of U+0080–U+00BF in UTF-8.
const STARTS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[0x7f] = true;
    t[0xc2] = true;
    t
};

impl<W: Write> Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let bytes = s.as_bytes();
        let mut clean_from = 0;
        let mut i = 0;
        while let Some(at) = bytes[i..]
            .iter()
            .position(|&b| STARTS_ESCAPE[usize::from(b)])
        {
            i += at;
            match bytes[i] {
                // U+0080..=U+009F: 0xC2 followed by 0x80..=0x9F (the code point's low byte).
                0xc2 if matches!(bytes.get(i + 1), Some(0x80..=0x9f)) => {
                    self.0.write_str(&s[clean_from..i])?;
                    write!(self.0, "\\u{{{:x}}}", bytes[i + 1])?;
                    i += 2;
                    clean_from = i;
                }
                0xc2 => i += 1,
                b @ (b'\n' | b'\r' | b'\t') => {
                    self.0.write_str(&s[clean_from..i])?;
                    self.0.write_str(match b {
                        b'\n' => "\\n",
                        b'\r' => "\\r",
                        _ => "\\t",
                    })?;
                    i += 1;
                    clean_from = i;
                }
                b => {
                    self.0.write_str(&s[clean_from..i])?;
                    write!(self.0, "\\x{b:02x}")?;
                    i += 1;
                    clean_from = i;
                }
            }
        }
        self.0.write_str(&s[clean_from..])
    }
}

#[cfg(test)]
mod tests;
