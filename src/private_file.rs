//! Opening a file that records may be appended to and that others must not read: the
//! transcript (`--transcript`) and the log file (`--log-file`).
//!
//! - A symlink as the last component of the path is refused (`O_NOFOLLOW`): records must not
//!   be appended to whatever file a link points at (a link planted in a shared directory such
//!   as `/tmp` would otherwise redirect them).
//! - Only a regular file is used: a FIFO or a device is refused (a FIFO nobody reads would
//!   block the writer, and the records would pile up in memory). The open does not block
//!   (`O_NONBLOCK`, cleared afterwards).
//! - A new file gets mode 0600; an existing file that others may read or write is tightened to
//!   0600, and the caller is told the mode it had (to warn about it).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Opens `path` for appending as described in the module doc. Returns the file and, when its
/// mode let others read or write it, that mode (it is 0600 now); `Err` says why not.
pub fn open_for_append(path: &Path) -> io::Result<(File, Option<u32>)> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => {
                io::Error::other("the path is a symbolic link, which is not followed")
            }
            Some(libc::ENXIO) => io::Error::other(
                "the path is a FIFO with no reader; only a regular file is written",
            ),
            _ => e,
        })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    clear_nonblocking(&file)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return Ok((file, None));
    }
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok((file, Some(mode)))
}

fn clear_nonblocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; it passes no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_fifos_are_refused_and_loose_modes_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.jsonl");
        std::fs::write(&target, "").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = open_for_append(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");

        let fifo = dir.path().join("fifo.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = open_for_append(&fifo).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");

        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(open_for_append(&target).unwrap().1, Some(0o644));
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let fresh = dir.path().join("new.jsonl");
        assert_eq!(open_for_append(&fresh).unwrap().1, None);
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
