//! Log lines written in bursts: the lines logged on the runtime thread are held and written in
//! one `write` when the thread is about to wait for I/O (the runtime's park hook), instead of
//! one `write` per line. Under load (many calls in flight) a call's info line no longer costs
//! a system call of its own; a quiet proxy writes each line as soon as its work is done, since
//! the thread parks right after.
//!
//! Lines at `WARN` and above, and lines logged on other threads (the blocking pool, the
//! transcript writer), are written at once, after what is held, so the order of the lines of
//! the runtime thread is kept. What is held is also written when it passes [`HOLD_MAX_BYTES`],
//! and by [`flush`] (called when the process ends).

use std::cell::Cell;
use std::io::{self, Write};
use std::sync::{Mutex, OnceLock};

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// Held bytes that make the next line write everything at once.
pub const HOLD_MAX_BYTES: usize = 64 * 1024;

/// Where the lines go (stderr or the log file) and what is held for it.
struct Lines {
    sink: Mutex<Box<dyn Write + Send>>,
    held: Mutex<Vec<u8>>,
}

static LINES: OnceLock<Lines> = OnceLock::new();

thread_local! {
    /// Set on the thread that runs the runtime's tasks ([`hold_on_this_thread`]).
    static HOLDS: Cell<bool> = const { Cell::new(false) };
}

/// The `MakeWriter` of the log: every line goes to the sink given to [`LogWriter::new`] (the
/// first one given, for the whole process), held or at once as the module says.
#[derive(Clone, Copy)]
pub struct LogWriter;

impl LogWriter {
    /// Sends the log to `sink` (stderr or the log file). Only the first call sets the sink.
    pub fn new(sink: Box<dyn Write + Send>) -> LogWriter {
        let _ = LINES.get_or_init(|| Lines {
            sink: Mutex::new(sink),
            held: Mutex::new(Vec::with_capacity(HOLD_MAX_BYTES)),
        });
        LogWriter
    }
}

/// Lines logged on the calling thread from now on are held until [`flush`] (the runtime's
/// park hook). Call it on the thread that runs the runtime.
pub fn hold_on_this_thread() {
    HOLDS.with(|h| h.set(true));
}

/// Writes what is held. Errors writing the log are ignored (there is nowhere to report them).
pub fn flush() {
    if let Some(lines) = LINES.get() {
        lines.flush_held();
    }
}

impl Lines {
    fn flush_held(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if !held.is_empty() {
            let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
            let _ = sink.write_all(&held);
            let _ = sink.flush();
            held.clear();
        }
    }
}

/// One line being written: held, or written at once.
pub struct LineWriter {
    hold: bool,
}

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(lines) = LINES.get() else {
            return Ok(buf.len());
        };
        if self.hold {
            let full = {
                let mut held = lines.held.lock().unwrap_or_else(|e| e.into_inner());
                held.extend_from_slice(buf);
                held.len() >= HOLD_MAX_BYTES
            };
            if full {
                lines.flush_held();
            }
            return Ok(buf.len());
        }
        lines.flush_held();
        let mut sink = lines.sink.lock().unwrap_or_else(|e| e.into_inner());
        sink.write_all(buf)?;
        sink.flush()?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl LineWriter {
    /// The writer of one line at `level`: held on the runtime thread below `WARN`.
    fn at(level: Level) -> LineWriter {
        LineWriter {
            hold: level > Level::WARN && HOLDS.with(Cell::get),
        }
    }
}

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter::at(Level::INFO)
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> LineWriter {
        LineWriter::at(*meta.level())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A sink that counts its writes and keeps what was written.
    #[derive(Clone, Default)]
    struct Recorded(Arc<Mutex<(usize, Vec<u8>)>>);

    impl Write for Recorded {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut r = self.0.lock().unwrap();
            r.0 += 1;
            r.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn held_lines_go_out_in_one_write_in_order_and_warnings_at_once() {
        let sink = Recorded::default();
        let writer = LogWriter::new(Box::new(sink.clone()));
        // Another thread than the runtime's: written at once.
        std::thread::spawn(move || writer.make_writer().write_all(b"other\n").unwrap())
            .join()
            .unwrap();
        assert_eq!(sink.0.lock().unwrap().0, 1);
        hold_on_this_thread();
        for line in [&b"one\n"[..], b"two\n"] {
            writer.make_writer().write_all(line).unwrap();
        }
        assert_eq!(sink.0.lock().unwrap().0, 1, "held until the flush");
        LineWriter::at(Level::WARN).write_all(b"warn\n").unwrap();
        writer.make_writer().write_all(b"three\n").unwrap();
        flush();
        let r = sink.0.lock().unwrap();
        assert_eq!(r.1, b"other\none\ntwo\nwarn\nthree\n");
        assert_eq!(r.0, 4, "other; one+two; warn; three");
    }
}
