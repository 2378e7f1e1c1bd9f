//! The byte relay, **for benchmarks only** (`scripts/bench`): the physical floor of any stdio
//! proxy. It spawns a server and copies bytes, unparsed, from its own stdin to the server's stdin
//! and from the server's stdout to its own stdout. Nothing is framed, parsed or buffered beyond
//! one `read` at a time.
//!
//! ```text
//! bench_relay COMMAND [ARGS...]
//! ```
//!
//! One thread per direction, each a loop of one blocking `read` (one wake-up) and one `write_all`
//! (one `write` for a message that fits the pipe). The server's stdout pipe is enlarged to 1 MiB
//! (`F_SETPIPE_SZ`), as mcp-envelope does for its servers, so a large answer crosses it in the
//! same number of reads. The server's stderr is inherited. The relay exits with the server's
//! exit code once the server has exited and its output has been copied; end of input on stdin
//! closes the server's stdin.
//!
//! Build: `cargo build --release --example bench_relay`.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::thread;

/// Bytes read at a time: the enlarged pipe's size.
const CHUNK: usize = 1 << 20;

/// Copies `from` to `to` until end of input or an error; one `read`, then one `write_all`.
fn copy(mut from: impl Read, mut to: impl Write) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

fn main() {
    let cmd: Vec<String> = std::env::args().skip(1).collect();
    if cmd.is_empty() {
        eprintln!("usage: bench_relay COMMAND [ARGS...]");
        std::process::exit(2);
    }
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            eprintln!("bench_relay: cannot start {}: {e}", cmd[0]);
            std::process::exit(2)
        });
    let to_server = child.stdin.take().expect("piped stdin");
    let from_server = child.stdout.take().expect("piped stdout");
    // SAFETY: fcntl(F_SETPIPE_SZ) on a descriptor we own; it passes no memory.
    unsafe {
        libc::fcntl(
            from_server.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            CHUNK as libc::c_int,
        )
    };
    // std's Stdin/Stdout would add a lock and a line buffer; the raw descriptors are used as files.
    let (stdin, stdout) = raw_stdio();
    let up = thread::spawn(move || copy(stdin, to_server));
    let down = thread::spawn(move || copy(from_server, stdout));
    let status = child.wait().map(|s| s.code().unwrap_or(1)).unwrap_or(1);
    let _ = down.join();
    drop(up); // still blocked on our stdin if the client keeps it open: exit regardless
    std::process::exit(status);
}

/// Descriptors 0 and 1 as unbuffered files.
fn raw_stdio() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    // SAFETY: descriptors 0 and 1 are open for the life of the process and used only here.
    unsafe { (std::fs::File::from_raw_fd(0), std::fs::File::from_raw_fd(1)) }
}
