//! A server's child process as a transport: spawned directly (never through a shell) in its
//! own process group, its stdin fed from an [`Outbox`] queue, its stdout read as lines, its
//! stderr left to the caller; stopped with stdin closed, then SIGTERM to its process group,
//! then SIGKILL.
//!
//! Source: MCP specification 2025-06-18, "Lifecycle: Shutdown" (stdio: close the server's
//! input, wait, SIGTERM, wait, SIGKILL) and "Transports: stdio".

use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use super::{Delivery, Fault, Outbox, Receive};
use crate::wire::codec::{write_lines, Frame, LineReader};
use crate::wire::jsonrpc::id_from_head;

/// Pipe capacity asked for on a server's stdout (bytes). Linux pipes hold 64 KiB by default:
/// a server writing a result of many megabytes then stops and waits for us every 64 KiB. Linux
/// grants up to `/proc/sys/fs/pipe-max-size` (1 MiB by default) to unprivileged processes.
pub const SERVER_STDOUT_PIPE_BYTES: libc::c_int = 1 << 20;

/// What to start: the program (no shell), its arguments, variables added to the inherited
/// environment, and its working directory (`None` inherits ours).
#[derive(Debug, Clone, Copy)]
pub struct Program<'a> {
    /// The program to execute.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [String],
    /// Variables added to the environment.
    pub env: &'a [(String, String)],
    /// Variables of ours it does not inherit.
    pub env_remove: &'a [String],
    /// Working directory.
    pub cwd: Option<&'a Path>,
}

/// A started child: the process, the queue to its stdin, its stdout and stderr.
pub struct Spawned {
    /// The process and its group.
    pub process: ChildProcess,
    /// Lines queued here are written to its stdin.
    pub outbox: Outbox,
    /// Its stdout (pipe enlarged to [`SERVER_STDOUT_PIPE_BYTES`] where the kernel allows).
    pub stdout: ChildStdout,
    /// Its stderr.
    pub stderr: ChildStderr,
}

/// Starts `program` with piped stdin, stdout and stderr in a new process group; a task writes
/// the outbox's lines to its stdin. Errors name the program or the working directory.
pub fn spawn(name: &str, program: Program<'_>) -> Result<Spawned, String> {
    if let Some(cwd) = program.cwd.filter(|c| !c.is_dir()) {
        return Err(format!(
            "its working directory (cwd) `{}` is not a directory",
            cwd.display()
        ));
    }
    let mut cmd = Command::new(program.program);
    for name in program.env_remove {
        cmd.env_remove(name);
    }
    cmd.args(program.args)
        .envs(
            program
                .env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if let Some(cwd) = program.cwd {
        cmd.current_dir(cwd);
    }
    die_with_the_proxy(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        let shown = crate::redact::command_shown(&program.program.to_string_lossy());
        format!("cannot start `{shown}`: {e}")
    })?;
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    enlarge_pipe(&stdout);
    let stderr = child.stderr.take().expect("piped stderr");
    let (outbox, rx) = Outbox::channel();
    let (close_tx, close_rx) = oneshot::channel();
    tokio::spawn(write_stdin(name.to_owned(), stdin, rx, close_rx));
    Ok(Spawned {
        process: ChildProcess {
            pgid: child.id().map(|p| p as i32),
            child,
            stdin_close: Some(close_tx),
        },
        outbox,
        stdout,
        stderr,
    })
}

/// A child's stdout as the receiving half of its transport: one message per line, lines over
/// `max_message_bytes` reported as [`Fault::TooLong`] for the request their head names.
pub struct StdoutLines {
    server: String,
    reader: LineReader<ChildStdout>,
}

impl StdoutLines {
    /// Reads `stdout` of server `server` with lines of at most `max_message_bytes` bytes.
    pub fn new(server: &str, stdout: ChildStdout, max_message_bytes: usize) -> StdoutLines {
        StdoutLines {
            server: server.to_owned(),
            reader: LineReader::new(stdout, max_message_bytes),
        }
    }
}

impl Receive for StdoutLines {
    async fn receive(&mut self) -> Result<Delivery, String> {
        match self.reader.next_frame().await {
            Ok(Some(Frame::Line(line))) => Ok(Delivery::Message(line)),
            Ok(Some(Frame::TooLong { len, head })) => {
                let server = &self.server;
                warn!(%server, bytes = len, "message longer than max_message_bytes rejected");
                Ok(Delivery::Fault {
                    id: id_from_head(&head),
                    fault: Fault::TooLong(len),
                })
            }
            Ok(None) => Err("closed its stdout".to_owned()),
            Err(e) => Err(format!("stdout read failed: {e}")),
        }
    }
}

/// A running child process and its process group.
pub struct ChildProcess {
    child: Child,
    /// The child's process group (its pid at spawn), for cleaning up what it started.
    pgid: Option<i32>,
    stdin_close: Option<oneshot::Sender<()>>,
}

impl ChildProcess {
    /// Waits for the process to exit (cancel-safe); its status, or why waiting failed.
    pub async fn exited(&mut self) -> Result<ExitStatus, String> {
        self.child
            .wait()
            .await
            .map_err(|e| format!("wait failed: {e}"))
    }

    /// Waits at most `limit` for the exit; `None` if it is still running.
    pub async fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        }
    }

    /// After the main process has exited and been reaped: SIGTERM to what is left of its
    /// process group (processes it started and did not stop). Sent at once, while the group id
    /// cannot have been reused (pids are allocated cyclically); an empty group makes kill(2)
    /// fail with ESRCH, which is ignored.
    pub fn reap_leftovers(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: kill(2) on a process group id; it touches no memory of ours.
            unsafe {
                libc::kill(-pgid, libc::SIGTERM);
            }
        }
    }

    /// SIGTERM to the process group, then SIGKILL after `grace`; reaps the child.
    pub async fn terminate(&mut self, grace: Duration) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads (it
            // was spawned with process_group(0)); it touches no memory of ours.
            unsafe {
                libc::kill(-(pid as i32), libc::SIGTERM);
            }
            if tokio::time::timeout(grace, self.child.wait()).await.is_ok() {
                return;
            }
            unsafe {
                libc::kill(-(pid as i32), libc::SIGKILL);
            }
        }
        let _ = self.child.kill().await;
    }

    /// Stops the child: stdin closed, then (after `grace`) SIGTERM to its group, then SIGKILL.
    async fn stop(&mut self, grace: Duration) {
        if let Some(tx) = self.stdin_close.take() {
            let _ = tx.send(());
        }
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(_) => self.reap_leftovers(),
            Err(_) => self.terminate(grace).await,
        }
    }
}

impl super::Close for ChildProcess {
    async fn close(&mut self, grace: Duration) {
        self.stop(grace).await;
    }
}

/// Makes the child receive SIGKILL when the proxy dies, even by SIGKILL, when nothing else
/// could stop it (Linux `prctl(PR_SET_PDEATHSIG)`; through `libc`, already a dependency, rather
/// than adding `nix` or `rustix` for one call). The signal is tied to the thread that spawned
/// the child: the proxy's runtime is one thread that lives as long as the process. A child
/// whose parent died before the call exits at once. Processes the child starts itself are
/// not covered (the setting is not inherited); those in its process group are stopped on
/// every other kind of exit.
fn die_with_the_proxy(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (prctl, getppid, _exit); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Asks for a pipe buffer of [`SERVER_STDOUT_PIPE_BYTES`] on `pipe` (a server's stdout, our
/// own stdout to the client): a multi-megabyte line then crosses in a few writes instead of
/// one wake-up of each side per 64 KiB. A refusal (not a pipe, older kernels, a lower
/// `pipe-max-size`) only costs speed and is ignored.
pub(crate) fn enlarge_pipe(pipe: &impl std::os::fd::AsRawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: fcntl(F_SETPIPE_SZ) on a descriptor we own; it passes no memory.
    unsafe {
        libc::fcntl(
            pipe.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            SERVER_STDOUT_PIPE_BYTES,
        );
    }
}

async fn write_stdin(
    server: String,
    stdin: tokio::process::ChildStdin,
    rx: mpsc::Receiver<Vec<u8>>,
    close: oneshot::Receiver<()>,
) {
    let close = async {
        let _ = close.await;
    };
    if let Err(e) = write_lines(stdin, rx, close).await {
        debug!(%server, error = %e, "writing to server stdin failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_child_does_not_inherit_the_variables_withheld_from_it() {
        let args = [
            "-c".to_owned(),
            r#"echo "${HOME-unset} ${ADDED-unset}""#.to_owned(),
        ];
        let program = Program {
            program: Path::new("sh"),
            args: &args,
            env: &[("ADDED".to_owned(), "yes".to_owned())],
            env_remove: &["HOME".to_owned()],
            cwd: None,
        };
        let mut spawned = spawn("t", program).unwrap();
        let mut out = String::new();
        spawned.stdout.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "unset yes\n");
    }
}
