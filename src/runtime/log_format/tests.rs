use std::io;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

use super::*;

/// A log sink the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Logs the same events through tracing-subscriber's default fields and through
/// `EscapedMessageFields` (no timestamps) and returns both texts.
fn both_ways(ansi: bool, log: impl Fn()) -> (String, String) {
    let default = Captured::default();
    let ours = Captured::default();
    let sub = tracing_subscriber::fmt()
        .with_writer(default.clone())
        .with_ansi(ansi)
        .with_target(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(sub, &log);
    let sub = tracing_subscriber::fmt()
        .with_writer(ours.clone())
        .with_ansi(ansi)
        .with_target(false)
        .without_time()
        .fmt_fields(EscapedMessageFields)
        .finish();
    tracing::subscriber::with_default(sub, &log);
    (default.text(), ours.text())
}

#[test]
fn fields_are_written_as_the_default_writes_them_control_characters_escaped() {
    let evil =
        "red \x1b[31m bell \x07 bs \x08 ff \x0c del \x7f c1 \u{80}\u{9b}\u{9f} ok \u{a0}é \u{7f}x";
    for ansi in [false, true] {
        let (default, ours) = both_ways(ansi, || {
            tracing::info!("tools/call call_id={} tool={} status=\"{}\"", 3, evil, "ok");
            tracing::info!(server = "fx", count = 3, "started {}", evil);
            tracing::warn!(reason = %"plain", detail = ?evil, "message after fields");
            tracing::info!(only = 1_u64, flag = true);
            tracing::error!("{}", "plain");
            let err = io::Error::other("disk \x1b full");
            tracing::warn!(error = &err as &(dyn std::error::Error + 'static), "failed");
            tracing::info!(r#type = "kind", "raw name");
        });
        assert_eq!(ours, default, "ansi={ansi}");
        assert!(
            ours.contains("\\x1b[31m") && ours.contains("\\u{9b}"),
            "{ours}"
        );
    }
}

#[test]
fn untrusted_text_in_a_message_or_a_field_cannot_forge_a_log_line() {
    let forged = "a\n2026-01-01T00:00:00Z ERROR forged\r\tline \x1b[31m \x00";
    for ansi in [false, true] {
        let (_, ours) = both_ways(ansi, || {
            tracing::info!(
                "tools/call call_id={} tool={} status=\"ok\"",
                forged,
                forged
            );
            tracing::warn!(id = %forged, tool = forged, detail = ?forged, "unknown tool");
        });
        assert_eq!(ours.lines().count(), 2, "{ours}");
        assert!(!ours.contains('\r') && !ours.contains('\t') && !ours.contains('\0'));
        assert_eq!(ours.matches("a\\n2026-01-01").count(), 5, "{ours}");
        assert!(ours.contains("\\r\\tline \\x1b[31m \\x00"), "{ours}");
    }
}

#[test]
fn the_second_is_the_proleptic_gregorian_calendar() {
    assert_eq!(&second_text(0), b"1970-01-01T00:00:00.");
    assert_eq!(&second_text(59 * 86_400), b"1970-03-01T00:00:00.");
    assert_eq!(&second_text(11_016 * 86_400), b"2000-02-29T00:00:00.");
    assert_eq!(&second_text(47_541 * 86_400 - 1), b"2100-02-28T23:59:59.");
    assert_eq!(&second_text(YEAR_10000_SECS - 1), b"9999-12-31T23:59:59.");
    assert_eq!(&second_text(1_764_641_626), b"2025-12-02T02:13:46.");
}

#[test]
fn the_timestamp_is_the_default_timers_text() {
    // The two clocks are read one after the other: try again when a second began between.
    for _ in 0..10 {
        let mut default = String::new();
        tracing_subscriber::fmt::time::SystemTime
            .format_time(&mut Writer::new(&mut default))
            .unwrap();
        let mut ours = String::new();
        CachedSecondTime
            .format_time(&mut Writer::new(&mut ours))
            .unwrap();
        let mut again = String::new();
        CachedSecondTime
            .format_time(&mut Writer::new(&mut again))
            .unwrap();
        assert_eq!(ours.len(), default.len(), "{ours} {default}");
        assert!(ours.ends_with('Z') && ours.as_bytes()[19] == b'.', "{ours}");
        if ours[..20] == default[..20] && again[..20] == default[..20] {
            return;
        }
    }
    panic!("the timestamp never matched the default timer's");
}
