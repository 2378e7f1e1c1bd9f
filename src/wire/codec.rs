//! Newline-delimited framing with a maximum line length.
//!
//! Source: MCP specification 2025-06-18, "Transports: stdio": one JSON-RPC message per line,
//! UTF-8, no embedded newlines. A line longer than the maximum is reported as soon as that
//! many bytes of it have arrived, newline or not (only its first [`TOO_LONG_HEAD_BYTES`] bytes
//! are kept, to find its id for the error answer), and the rest of it is dropped up to the next
//! newline, so a peer can never make us hold more than the maximum (plus one read buffer) of a
//! line, nor make a request wait for a newline that never comes.
//!
//! [`LineReader`] reads frames from any `AsyncRead` (a long line is read straight into the
//! buffer it is returned in); [`write_lines`] writes a queue of lines with [`LineCodec`] (a
//! tokio-util `Encoder`), one flush per burst.

use std::future::Future;
use std::io;

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::Encoder;

/// How much of an over-long line is kept (bytes), to find its id for the error answer.
pub const TOO_LONG_HEAD_BYTES: usize = 4096;

/// The least a [`LineReader`] reads at once, and the write buffer of [`write_lines`] (bytes).
pub const IO_BUFFER_BYTES: usize = 256 * 1024;

/// One frame read from a newline-delimited stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A whole line without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the maximum, reported as soon as more than the maximum of it has been
    /// read (its newline may not have come yet); only its first [`TOO_LONG_HEAD_BYTES`] bytes
    /// are kept, and the reader drops the rest of it up to the next newline without a frame.
    TooLong {
        /// Its length in bytes when it was found too long (the full length, without the
        /// newline, when the newline was already read; otherwise a lower bound).
        len: usize,
        /// Its first bytes.
        head: Vec<u8>,
    },
}

/// The line encoder of [`write_lines`]: a message as its bytes and one `\n`.
#[derive(Debug, Default)]
pub struct LineCodec;

impl Encoder<&[u8]> for LineCodec {
    type Error = io::Error;

    /// Appends `message` and a `\n` (unless it already ends with one). A message must not
    /// contain a newline elsewhere (serialized JSON never does).
    fn encode(&mut self, message: &[u8], dst: &mut BytesMut) -> io::Result<()> {
        let body = message.strip_suffix(b"\n").unwrap_or(message);
        debug_assert!(
            memchr::memchr(b'\n', body).is_none(),
            "a newline inside a message"
        );
        dst.reserve(body.len() + 1);
        dst.put_slice(body);
        dst.put_u8(b'\n');
        Ok(())
    }
}

/// Reads newline-delimited frames from any `AsyncRead`: empty lines skipped, a trailing `\r`
/// dropped, lines over `max_line_bytes` bytes reported as [`Frame::TooLong`].
///
/// Bytes are read straight into the buffer a line is returned in: a line larger than the rest
/// of what was read with it is handed over without a copy (a 50 MB answer is never copied
/// after the kernel wrote it), and a read takes whatever the buffer has room for (at least
/// [`IO_BUFFER_BYTES`]), so a long line costs few reads. Short lines are copied out of the
/// buffer, each into a `Vec` of its own size. The newline is searched for once per byte.
///
/// Cancel safety: all partial state lives in the reader and the only await is one read, so
/// dropping a pending [`LineReader::next_frame`] future loses nothing.
pub struct LineReader<R> {
    inner: R,
    max_line_bytes: usize,
    /// Bytes read and not yet returned: the current line starts at `start`.
    buf: Vec<u8>,
    start: usize,
    /// `buf[start..scanned]` holds no newline.
    scanned: usize,
    /// Whether the current line was reported too long and is being dropped up to its newline.
    discarding: bool,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max_line_bytes` bytes become [`Frame::TooLong`].
    pub fn new(inner: R, max_line_bytes: usize) -> Self {
        LineReader {
            inner,
            max_line_bytes,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            discarding: false,
            eof: false,
        }
    }

    /// The next frame; `Ok(None)` at a clean end of stream. A last line without a trailing
    /// newline is returned as a frame. Errors are the underlying reader's.
    pub async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + i;
                if let Some(frame) = self.take_line(end, end + 1) {
                    return Ok(Some(frame));
                }
                continue;
            }
            self.scanned = self.buf.len();
            if let Some(frame) = self.bound_the_line() {
                return Ok(Some(frame));
            }
            if self.eof {
                let end = self.buf.len();
                return Ok(self.take_line(end, end));
            }
            self.make_room();
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                self.eof = true;
            }
        }
    }

    /// Ends the line `buf[start..end]` (the next one starts at `next`): `None` for an empty line
    /// or one of JSON whitespace alone.
    fn take_line(&mut self, end: usize, next: usize) -> Option<Frame> {
        let start = std::mem::replace(&mut self.start, next);
        self.scanned = next;
        let len = end - start;
        if std::mem::take(&mut self.discarding) {
            return None; // the rest of a line already reported too long
        }
        if len > self.max_line_bytes {
            let head = self.buf[start..start + len.min(TOO_LONG_HEAD_BYTES)].to_vec();
            return Some(Frame::TooLong { len, head });
        }
        let body = end - usize::from(len > 0 && self.buf[end - 1] == b'\r');
        let line = if start == 0 && body >= self.buf.capacity() / 2 && body > self.buf.len() - next
        {
            // The line is most of the buffer: hand the buffer over, keep what follows it.
            let rest = self.buf[next..].to_vec();
            self.start = 0;
            self.scanned = 0;
            let mut line = std::mem::replace(&mut self.buf, rest);
            line.truncate(body);
            line
        } else {
            self.buf[start..body].to_vec()
        };
        // A line of JSON whitespace alone (RFC 8259 §2: space, tab, CR) holds no message.
        let blank = line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'));
        (!blank).then_some(Frame::Line(line))
    }

    /// A line over the maximum with no newline yet: reported at once as [`Frame::TooLong`]
    /// (its head kept), then dropped as it arrives up to its newline, so a peer never makes us
    /// hold more than the maximum and one read of a line, nor wait for its newline.
    fn bound_the_line(&mut self) -> Option<Frame> {
        let len = self.buf.len() - self.start;
        let mut frame = None;
        if !self.discarding && len > self.max_line_bytes {
            let head = self.buf[self.start..self.start + TOO_LONG_HEAD_BYTES.min(len)].to_vec();
            frame = Some(Frame::TooLong { len, head });
            self.discarding = true;
        }
        if self.discarding {
            self.buf.truncate(self.start);
            self.scanned = self.start;
        }
        frame
    }

    /// Moves the unfinished line to the front and makes room for one read.
    fn make_room(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.buf.is_empty() && self.buf.capacity() > 4 * IO_BUFFER_BYTES {
            self.buf = Vec::new(); // after a dropped over-long line
        }
        self.buf.reserve(IO_BUFFER_BYTES);
    }
}

/// Writes queued lines (each framed by [`LineCodec`]) to `output` in queue order, batching
/// whatever is queued and flushing once per batch, so a burst costs one flush. Ends, after a
/// final flush and shutdown of `output`, when every sender is gone or `close` resolves; a write
/// error ends it at once and is returned. A line longer than the write buffer is written as it
/// is (not copied), and the buffer never grows past its size.
pub async fn write_lines<W, C>(
    mut output: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    close: C,
) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
    C: Future<Output = ()>,
{
    let mut codec = LineCodec;
    let mut out = BytesMut::with_capacity(IO_BUFFER_BYTES);
    tokio::pin!(close);
    loop {
        let line = tokio::select! {
            biased;
            _ = &mut close => break,
            line = rx.recv() => match line { Some(l) => l, None => break },
        };
        put_line(&mut codec, &mut out, &mut output, &line).await?;
        while let Ok(line) = rx.try_recv() {
            put_line(&mut codec, &mut out, &mut output, &line).await?;
        }
        output.write_all(&out).await?;
        out.clear();
        output.flush().await?;
    }
    output.write_all(&out).await?;
    output.flush().await?;
    output.shutdown().await
}

/// Adds one line to the batch in `out`; a line that does not fit is written directly after
/// what is batched (with its newline), so large messages are never copied.
async fn put_line<W: AsyncWrite + Unpin>(
    codec: &mut LineCodec,
    out: &mut BytesMut,
    output: &mut W,
    line: &[u8],
) -> io::Result<()> {
    if out.len() + line.len() < IO_BUFFER_BYTES {
        return codec.encode(line, out);
    }
    output.write_all(out).await?;
    out.clear();
    output.write_all(line).await?;
    if line.last() != Some(&b'\n') {
        output.write_all(b"\n").await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(7, input), max);
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame().await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_strips_cr_and_skips_blank_and_whitespace_lines() {
        let got = frames(b"{\"a\":1}\r\n\n \t \r\nsecond line here\nlast", 100).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(b"second line here".to_vec()),
                Frame::Line(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn over_long_line_is_reported_and_the_next_one_read() {
        let long = format!("{{\"id\":7,\"x\":\"{}\"}}", "y".repeat(50));
        let input = format!("{long}\nok\n");
        let got = frames(input.as_bytes(), 20).await;
        assert_eq!(got.len(), 2);
        match &got[0] {
            Frame::TooLong { len, head } => {
                assert_eq!(*len, long.len());
                assert_eq!(
                    crate::wire::jsonrpc::id_from_head(head),
                    Some(serde_json::json!(7))
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(got[1], Frame::Line(b"ok".to_vec()));
    }

    #[tokio::test]
    async fn line_of_exactly_max_is_accepted() {
        let got = frames(b"12345\n123456\n", 5).await;
        assert_eq!(got[0], Frame::Line(b"12345".to_vec()));
        assert!(matches!(got[1], Frame::TooLong { len: 6, .. }));
    }

    #[tokio::test]
    async fn a_line_larger_than_a_read_arrives_whole_between_short_ones() {
        let big: Vec<u8> = (0..3 * IO_BUFFER_BYTES + 17)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let mut input = b"one\n".to_vec();
        input.extend_from_slice(&big);
        input.extend_from_slice(b"\r\ntwo\nthree");
        let mut reader = LineReader::new(&input[..], usize::MAX);
        let mut got = Vec::new();
        while let Some(f) = reader.next_frame().await.unwrap() {
            got.push(f);
        }
        let want = [b"one".to_vec(), big, b"two".to_vec(), b"three".to_vec()];
        assert_eq!(got, want.map(Frame::Line).to_vec());
    }

    #[tokio::test]
    async fn many_short_lines_in_one_read_come_out_one_by_one() {
        let input: Vec<u8> = (0..5000)
            .flat_map(|i| format!("{{\"id\":{i}}}\n").into_bytes())
            .collect();
        let mut reader = LineReader::new(&input[..], 100);
        for i in 0..5000 {
            let want = format!("{{\"id\":{i}}}").into_bytes();
            assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::Line(want)));
        }
        assert_eq!(reader.next_frame().await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_over_long_line_over_many_reads_is_reported_once_and_dropped() {
        let long = format!(
            "{{\"id\":\"k\",\"x\":\"{}\"}}",
            "y".repeat(2 * IO_BUFFER_BYTES)
        );
        let input = format!("{long}\nnext\n{long}");
        let got = frames(input.as_bytes(), 1000).await;
        assert_eq!(got.len(), 3);
        for f in [&got[0], &got[2]] {
            match f {
                Frame::TooLong { len, head } => {
                    // Reported when the first read past the maximum came, not at its end.
                    assert!(*len > 1000 && *len <= long.len(), "{len}");
                    assert_eq!(head.len(), TOO_LONG_HEAD_BYTES);
                    assert_eq!(
                        crate::wire::jsonrpc::id_from_head(head),
                        Some(serde_json::json!("k"))
                    );
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got[1], Frame::Line(b"next".to_vec()));
    }

    #[tokio::test]
    async fn an_over_long_line_is_reported_before_its_newline_comes() {
        let (mut tx, rx) = tokio::io::duplex(1 << 16);
        let mut reader = LineReader::new(rx, 100);
        tx.write_all(br#"{"jsonrpc":"2.0","id":42,"result":{"x":""#)
            .await
            .unwrap();
        tx.write_all(&[b'y'; 500]).await.unwrap();
        // No newline and the writer still open: the old reader waited here for ever.
        let guard = Duration::from_secs(60);
        let first = tokio::time::timeout(guard, reader.next_frame()).await;
        match first.expect("reported without its newline").unwrap() {
            Some(Frame::TooLong { len, head }) => {
                assert!(len > 100, "{len}");
                let id = crate::wire::jsonrpc::id_from_head(&head);
                assert_eq!(id, Some(serde_json::json!(42)));
            }
            other => panic!("{other:?}"),
        }
        // The rest of the line is dropped without a frame; the next line is read.
        tx.write_all(&[b'y'; 300]).await.unwrap();
        tx.write_all(b"\"}}\nok\n").await.unwrap();
        let next = reader.next_frame().await.unwrap();
        assert_eq!(next, Some(Frame::Line(b"ok".to_vec())));
    }

    #[tokio::test]
    async fn a_cancelled_read_loses_no_bytes() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut reader = LineReader::new(rx, 1000);
        tx.write_all(b"{\"a\":").await.unwrap();
        // The read is pending (no newline yet) when the future is dropped.
        let pending = tokio::time::timeout(Duration::from_millis(20), reader.next_frame()).await;
        assert!(pending.is_err());
        tx.write_all(b"1}\n").await.unwrap();
        let got = reader.next_frame().await.unwrap();
        assert_eq!(got, Some(Frame::Line(b"{\"a\":1}".to_vec())));
    }

    #[tokio::test]
    async fn written_lines_end_in_one_newline_in_queue_order() {
        let (tx, rx) = mpsc::channel(8);
        let big = vec![b'x'; IO_BUFFER_BYTES + 10];
        for line in [b"a\n".to_vec(), b"b".to_vec(), big.clone(), b"c\n".to_vec()] {
            tx.send(line).await.unwrap();
        }
        drop(tx);
        let mut out = Vec::new();
        write_lines(&mut out, rx, std::future::pending())
            .await
            .unwrap();
        let mut want = b"a\nb\n".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"\nc\n");
        assert_eq!(out, want);
    }
}
