//! A server's stderr: read as bytes, split into lines, decoded lossily, kept short.
//!
//! Whatever a server writes to stderr must never stop the proxy from reading it: a reader that
//! gave up (on a byte that is not UTF-8, say) would close the pipe, and the server's next write
//! would fail (Python: `BrokenPipeError`; a shell: SIGPIPE) and take it down. So the reader
//! takes bytes, decodes each line with U+FFFD for invalid sequences, and keeps at most
//! [`MAX_LINE_BYTES`] of a line: a progress bar redrawn with `\r` and never ended by `\n`
//! cannot grow the proxy's memory. A `\r` not followed by `\n` starts the line over, as on a
//! terminal, so the last state of a progress bar is what is kept.
//!
//! Every line passes through the server's [`crate::redact::Redactor`] before it is logged or
//! kept for error messages.

use tokio::io::AsyncReadExt;

/// The longest part of one stderr line kept (bytes); the rest of the line is dropped and the
/// kept part ends with `…`.
pub const MAX_LINE_BYTES: usize = 2048;

/// Splits a byte stream into lines ending at `\n` (a `\r\n` counts as one end). Pure; holds at
/// most [`MAX_LINE_BYTES`] of the current line.
#[derive(Debug, Default)]
pub struct LineSplitter {
    current: Vec<u8>,
    /// Bytes of the current line dropped for length.
    cut: bool,
    /// A `\r` was the last byte seen: a following `\n` ends the line, anything else restarts it.
    carriage_return: bool,
}

impl LineSplitter {
    /// Feeds `bytes`; calls `line` with every line completed by them (decoded lossily, without
    /// its line end; empty lines are skipped).
    pub fn push(&mut self, bytes: &[u8], line: &mut dyn FnMut(String)) {
        for &b in bytes {
            if std::mem::take(&mut self.carriage_return) && b != b'\n' {
                self.current.clear();
                self.cut = false;
            }
            match b {
                b'\n' => {
                    if let Some(text) = self.take() {
                        line(text);
                    }
                }
                b'\r' => self.carriage_return = true,
                _ if self.current.len() < MAX_LINE_BYTES => self.current.push(b),
                _ => self.cut = true,
            }
        }
    }

    /// The unterminated rest at the end of the stream, if any.
    pub fn finish(&mut self) -> Option<String> {
        self.take()
    }

    fn take(&mut self) -> Option<String> {
        let bytes = std::mem::take(&mut self.current);
        let cut = std::mem::take(&mut self.cut);
        if bytes.is_empty() {
            return None;
        }
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if cut {
            // The cut may have split a character: a trailing U+FFFD is that half.
            if text.ends_with('\u{FFFD}') {
                text.pop();
            }
            text.push('…');
        }
        Some(text)
    }
}

/// Reads `stderr` to its end, calling `line` with each line (see [`LineSplitter`]); a read
/// error ends it like the end of the stream.
pub async fn read_lines<R>(mut stderr: R, line: &mut (dyn FnMut(String) + Send))
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut splitter = LineSplitter::default();
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => splitter.push(&buf[..n], line),
        }
    }
    if let Some(rest) = splitter.finish() {
        line(rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]]) -> Vec<String> {
        let mut s = LineSplitter::default();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut |l| out.push(l));
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(
            lines(&[b"bad \xff\xfe byte\nnext\n"]),
            ["bad \u{FFFD}\u{FFFD} byte", "next"]
        );
    }

    #[test]
    fn crlf_ends_a_line_and_a_lone_cr_restarts_it() {
        assert_eq!(lines(&[b"a\r\nb\r", b"\nc"]), ["a", "b", "c"]);
        assert_eq!(lines(&[b"10%\r20%\r", b"30%\n"]), ["30%"]);
        assert_eq!(lines(&[b"\n\n\r\n"]), Vec::<String>::new());
    }

    #[test]
    fn a_progress_bar_without_newline_stays_bounded() {
        let mut s = LineSplitter::default();
        let mut out = Vec::new();
        let chunk = [b'#'; 10_000];
        for _ in 0..1000 {
            s.push(&chunk, &mut |l| out.push(l));
            assert!(s.current.len() <= MAX_LINE_BYTES);
        }
        assert!(out.is_empty());
        let rest = s.finish().unwrap();
        assert_eq!(rest.chars().count(), MAX_LINE_BYTES + 1);
        assert!(rest.ends_with('…'));
    }

    #[test]
    fn a_cut_inside_a_character_leaves_no_half() {
        let mut text = vec![b'a'; MAX_LINE_BYTES - 1];
        text.extend("é and more".as_bytes());
        text.push(b'\n');
        let got = lines(&[&text]);
        assert_eq!(got[0], format!("{}…", "a".repeat(MAX_LINE_BYTES - 1)));
    }
}
