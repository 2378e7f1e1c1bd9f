//! Newline-delimited framing with a maximum line length, as a tokio-util codec.
//!
//! Source: MCP specification 2025-06-18, "Transports: stdio": one JSON-RPC message per line,
//! UTF-8, no embedded newlines. A line longer than the maximum is read and dropped (only its
//! first [`TOO_LONG_HEAD_BYTES`] bytes are kept, to find its id for the error answer), so a
//! peer can never make us hold more than the maximum (plus one read buffer) of a line.
//!
//! [`LineCodec`] is the `Decoder`/`Encoder`; [`LineReader`] reads frames from any `AsyncRead`
//! through `FramedRead`; [`write_lines`] writes a queue of lines, one flush per burst.

use std::future::Future;
use std::io;

use bytes::{Buf, BufMut, BytesMut};
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{Decoder, Encoder, FramedRead};

/// How much of an over-long line is kept (bytes), to find its id for the error answer.
pub const TOO_LONG_HEAD_BYTES: usize = 4096;

/// Read buffer of a [`LineReader`] and write buffer of [`write_lines`] (bytes).
pub const IO_BUFFER_BYTES: usize = 256 * 1024;

/// One frame read from a newline-delimited stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A whole line without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the maximum: it was read and discarded, keeping only its first
    /// [`TOO_LONG_HEAD_BYTES`] bytes. `len` is its full length in bytes.
    TooLong {
        /// Full length of the line in bytes (without the newline).
        len: usize,
        /// Its first bytes.
        head: Vec<u8>,
    },
}

/// The line codec: decodes [`Frame`]s (empty lines skipped, a trailing `\r` dropped, lines
/// over `max_line_bytes` bytes become [`Frame::TooLong`]); encodes a message as its bytes and
/// one `\n`. All partial state lives in the codec, so a cancelled read loses nothing.
#[derive(Debug)]
pub struct LineCodec {
    max_line_bytes: usize,
    /// The current line so far (or its head while discarding).
    buf: Vec<u8>,
    /// Bytes of the current line read so far, kept or discarded.
    line_len: usize,
    /// Whether the current line has gone over the maximum.
    discarding: bool,
}

impl LineCodec {
    /// A codec whose lines may be at most `max_line_bytes` bytes long (without the newline).
    pub fn new(max_line_bytes: usize) -> LineCodec {
        LineCodec {
            max_line_bytes,
            buf: Vec::new(),
            line_len: 0,
            discarding: false,
        }
    }

    /// Ends the current line: `None` for an empty line.
    fn finish_frame(&mut self) -> Option<Frame> {
        let len = std::mem::take(&mut self.line_len);
        if std::mem::take(&mut self.discarding) {
            return Some(Frame::TooLong {
                len,
                head: std::mem::take(&mut self.buf),
            });
        }
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        (!line.is_empty()).then_some(Frame::Line(line))
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = io::Error;

    /// Takes every byte of `src` (up to the first complete line): the line so far moves into
    /// the codec, so the read buffer stays small however long a line is.
    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<Frame>> {
        while !src.is_empty() {
            let newline = memchr::memchr(b'\n', src);
            let chunk = &src[..newline.unwrap_or(src.len())];
            let new_len = self.line_len + chunk.len();
            if !self.discarding && new_len > self.max_line_bytes {
                self.discarding = true;
                self.buf.truncate(TOO_LONG_HEAD_BYTES);
            }
            if self.discarding {
                let room = TOO_LONG_HEAD_BYTES.saturating_sub(self.buf.len());
                self.buf.extend_from_slice(&chunk[..room.min(chunk.len())]);
            } else {
                self.buf.extend_from_slice(chunk);
            }
            self.line_len = new_len;
            let consumed = chunk.len() + usize::from(newline.is_some());
            src.advance(consumed);
            if newline.is_some() {
                if let Some(frame) = self.finish_frame() {
                    return Ok(Some(frame));
                }
            }
        }
        Ok(None)
    }

    /// A last line without a trailing newline is a frame too.
    fn decode_eof(&mut self, src: &mut BytesMut) -> io::Result<Option<Frame>> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None => Ok(self.finish_frame()),
        }
    }
}

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

/// Reads newline-delimited frames from any `AsyncRead` with [`LineCodec`].
///
/// Cancel safety: all partial state lives in the reader, so dropping a pending
/// [`LineReader::next_frame`] future loses nothing.
pub struct LineReader<R> {
    frames: FramedRead<R, LineCodec>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max_line_bytes` bytes become [`Frame::TooLong`].
    pub fn new(inner: R, max_line_bytes: usize) -> Self {
        let codec = LineCodec::new(max_line_bytes);
        LineReader {
            frames: FramedRead::with_capacity(inner, codec, IO_BUFFER_BYTES),
        }
    }

    /// The next frame; `Ok(None)` at a clean end of stream. A last line without a trailing
    /// newline is returned as a frame. Errors are the underlying reader's.
    pub async fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        self.frames.next().await.transpose()
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
    let mut codec = LineCodec::new(usize::MAX);
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

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(7, input), max);
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame().await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_strips_cr_and_skips_blank() {
        let got = frames(b"{\"a\":1}\r\n\n\nsecond line here\nlast", 100).await;
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
