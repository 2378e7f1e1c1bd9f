//! The proxy's own stdin and stdout as non-blocking, reactor-driven streams.
//!
//! `tokio::io::stdin()` / `stdout()` do every read and write on tokio's blocking thread pool:
//! each message the client sends or receives then costs a hand-off to another thread and back
//! (issue 6; see BENCHMARKS.md). When stdin / stdout are pipes or sockets — which is how every
//! MCP client starts a stdio server (MCP specification, "Transports: stdio") — this module
//! instead puts a duplicate of the descriptor in non-blocking mode and registers it with the
//! tokio reactor (epoll), so reads and writes happen on the task that needs them.
//!
//! Anything else (a terminal, a regular file, `/dev/null`) cannot be polled by epoll or must not
//! be made non-blocking (a terminal is shared with the shell), so it falls back to tokio's
//! blocking-pool streams, and so does a pipe or socket that stderr shares (`2>&1`): the flag
//! belongs to the open file, and log lines must never meet `EAGAIN`. [`RestoreGuard`] puts the
//! descriptors' original flags back on exit.

use std::io;
use std::os::fd::{BorrowedFd, RawFd};
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
/// inside a tokio runtime with I/O enabled. Errors: a `fcntl`/`dup` failure or the reactor
/// refusing the descriptor.
///
/// A descriptor is made non-blocking only when it is a pipe or a socket that stderr does not
/// share: `O_NONBLOCK` belongs to the open file, so with `2>&1` our log lines would meet a
/// full pipe as `EAGAIN`. When stdin and stdout are one socket, both or neither are.
pub fn open() -> io::Result<(Stdio, RestoreGuard)> {
    let files = [identity(0), identity(1), identity(2)];
    let pollable = |fd: usize| {
        files[fd].is_some_and(|f| f.pollable) && files[fd].map(|f| f.id) != files[2].map(|f| f.id)
    };
    let (mut reactor_in, mut reactor_out) = (pollable(0), pollable(1));
    if files[1].is_some_and(|f| f.pollable) {
        // A `tools/list` answer of many tools is megabytes long.
        super::child::enlarge_pipe(&(1 as RawFd));
    }
    if files[0].is_some() && files[0].map(|f| f.id) == files[1].map(|f| f.id) {
        let both = reactor_in && reactor_out;
        (reactor_in, reactor_out) = (both, both);
    }
    // Every original flag is read before any is changed (stdin and stdout may be one file).
    let mut guard = RestoreGuard {
        restore: Vec::new(),
    };
    let wanted: Vec<RawFd> = [(0, reactor_in), (1, reactor_out)]
        .into_iter()
        .filter_map(|(fd, on)| on.then_some(fd))
        .collect();
    for &fd in &wanted {
        // SAFETY: fcntl(F_GETFL) on a descriptor number; no memory is passed.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        guard.restore.push((fd, flags));
    }
    let mut dups = Vec::new();
    for &(fd, flags) in &guard.restore {
        // SAFETY: as above; F_SETFL only changes the file status flags.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd 0 and 1 stay open for the whole process; the borrow lasts only this call.
        dups.push(unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?);
    }
    let mut dups = dups.into_iter();
    let input: Pin<Box<dyn AsyncRead + Send>> = if reactor_in {
        Box::pin(pipe::Receiver::from_owned_fd_unchecked(
            dups.next().expect("stdin dup"),
        )?)
    } else {
        Box::pin(tokio::io::stdin())
    };
    let output: Pin<Box<dyn AsyncWrite + Send>> = if reactor_out {
        Box::pin(pipe::Sender::from_owned_fd_unchecked(
            dups.next().expect("stdout dup"),
        )?)
    } else {
        Box::pin(tokio::io::stdout())
    };
    Ok((
        Stdio {
            input,
            output,
            reactor_driven: reactor_in && reactor_out,
        },
        guard,
    ))
}

/// Restores stdin's and stdout's original file status flags (`O_NONBLOCK` off again) when
/// dropped: the flag belongs to the open file, which the process that started us may share.
pub struct RestoreGuard {
    /// `(fd, original flags)` of the descriptors switched to non-blocking, read before any
    /// change.
    restore: Vec<(RawFd, libc::c_int)>,
}

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        for (fd, flags) in self.restore.drain(..).rev() {
            // SAFETY: fcntl(F_SETFL) on a descriptor number; it touches no memory of ours.
            unsafe {
                libc::fcntl(fd, libc::F_SETFL, flags);
            }
        }
    }
}

/// What an open descriptor refers to.
#[derive(Debug, Clone, Copy)]
struct FileIdentity {
    /// Device and inode: equal for two descriptors of one pipe or socket.
    id: (u64, u64),
    /// A pipe (FIFO) or a socket: something epoll can watch.
    pollable: bool,
}

/// `fstat` of `fd`; `None` when it is not open.
fn identity(fd: RawFd) -> Option<FileIdentity> {
    // SAFETY: fstat writes into the zeroed struct we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    let kind = st.st_mode & libc::S_IFMT;
    Some(FileIdentity {
        id: (st.st_dev as u64, st.st_ino as u64),
        pollable: kind == libc::S_IFIFO || kind == libc::S_IFSOCK,
    })
}
