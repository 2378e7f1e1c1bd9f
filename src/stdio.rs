//! The proxy's own stdin and stdout as non-blocking, reactor-driven streams.
//!
//! `tokio::io::stdin()` / `stdout()` do every read and write on tokio's blocking thread pool:
//! each message the client sends or receives then costs a hand-off to another thread and back
//! (two context switches), which was most of the latency the proxy added to a small call
//! (issue 6; see BENCHMARKS.md). When stdin / stdout are pipes or sockets — which is how every
//! MCP client starts a stdio server (MCP specification, "Transports: stdio") — this module
//! instead puts a duplicate of the descriptor in non-blocking mode and registers it with the
//! tokio reactor (epoll), so reads and writes happen on the task that needs them.
//!
//! Anything else (a terminal, a regular file, `/dev/null`) cannot be polled by epoll or must not
//! be made non-blocking (a terminal is shared with the shell), so it falls back to tokio's
//! blocking-pool streams. [`RestoreGuard`] puts the descriptors' original
//! flags back, since `O_NONBLOCK` is shared by every descriptor of the same open file.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// The client-facing byte streams: `input` reads our stdin, `output` writes our stdout.
pub struct Stdio {
    /// Stdin, non-blocking when it is a pipe or socket.
    pub input: Pin<Box<dyn AsyncRead + Send>>,
    /// Stdout, non-blocking when it is a pipe or socket.
    pub output: Pin<Box<dyn AsyncWrite + Send>>,
    /// Whether stdin and stdout are both driven by the reactor (pipes or sockets).
    pub reactor_driven: bool,
}

/// Opens fd 0 and fd 1 as async streams, and a guard that restores their original file status
/// flags when dropped (keep it alive until the streams are no longer used). Must be called
/// inside a tokio runtime with I/O enabled. Errors: a `fcntl` failure or the reactor refusing
/// the descriptor.
pub fn open() -> io::Result<(Stdio, RestoreGuard)> {
    let mut guard = RestoreGuard {
        restore: Vec::new(),
    };
    let input: Pin<Box<dyn AsyncRead + Send>> = match nonblocking_dup(0, &mut guard.restore)? {
        Some(fd) => Box::pin(pipe::Receiver::from_owned_fd_unchecked(fd)?),
        None => Box::pin(tokio::io::stdin()),
    };
    let output: Pin<Box<dyn AsyncWrite + Send>> = match nonblocking_dup(1, &mut guard.restore)? {
        Some(fd) => Box::pin(pipe::Sender::from_owned_fd_unchecked(fd)?),
        None => Box::pin(tokio::io::stdout()),
    };
    let reactor_driven = guard.restore.len() == 2;
    Ok((
        Stdio {
            input,
            output,
            reactor_driven,
        },
        guard,
    ))
}

/// Restores stdin's and stdout's original file status flags (`O_NONBLOCK` off again) when
/// dropped: the flag belongs to the open file, which the process that started us may share.
pub struct RestoreGuard {
    /// `(fd, original flags)` of the descriptors switched to non-blocking.
    restore: Vec<(RawFd, libc::c_int)>,
}

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        for (fd, flags) in self.restore.drain(..) {
            // SAFETY: fcntl(F_SETFL) on a descriptor number; it touches no memory of ours.
            unsafe {
                libc::fcntl(fd, libc::F_SETFL, flags);
            }
        }
    }
}

/// A non-blocking duplicate of `fd` when it is a pipe (FIFO) or a socket; `None` for any other
/// kind of file. Records the original flags in `restore`.
fn nonblocking_dup(
    fd: RawFd,
    restore: &mut Vec<(RawFd, libc::c_int)>,
) -> io::Result<Option<OwnedFd>> {
    // SAFETY: fd 0 and 1 stay open for the whole process; the borrow lasts only this call.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let Ok(owned) = borrowed.try_clone_to_owned() else {
        return Ok(None); // closed or invalid: let tokio's stream report it
    };
    let file = File::from(owned);
    let kind = file.metadata()?.file_type();
    {
        use std::os::unix::fs::FileTypeExt;
        if !(kind.is_fifo() || kind.is_socket()) {
            return Ok(None);
        }
    }
    // SAFETY: fcntl on a descriptor we own; no memory is passed.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: as above.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    restore.push((fd, flags));
    Ok(Some(OwnedFd::from(file)))
}
