//! Opening a file that others must not read: one that records may be appended to (the
//! transcript, `--transcript`, and the log file, `--log-file`: [`open_for_append`]), and one
//! written whole (`install`'s backups and records of a client's config, which hold its tokens:
//! [`create_private`]).
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
    let (file, mode) = open_regular(OpenOptions::new().create(true).append(true), path)?;
    if mode & 0o077 == 0 {
        return Ok((file, None));
    }
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok((file, Some(mode)))
}

/// Creates `path`, or empties the regular file there, for writing, with mode 0600 from the
/// start (a file created and then narrowed can be opened by others in between); an existing
/// file's mode is made 0600 too. A symlink as the last component is refused (`O_NOFOLLOW`), as
/// is anything but a regular file.
pub fn create_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    let (file, mode) = open_regular(options.write(true).create(true).truncate(true), path)?;
    if mode != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Opens `path` with `options`, a new file with mode 0600, refusing a symlink as the last
/// component and anything but a regular file, without blocking on a FIFO; returns the file
/// (blocking again) and its permission bits.
fn open_regular(options: &mut OpenOptions, path: &Path) -> io::Result<(File, u32)> {
    let file = options
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
    Ok((file, meta.permissions().mode() & 0o777))
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

    /// A file written whole (an install's backup): created 0600, an existing file emptied and
    /// made 0600, a symlink refused.
    #[test]
    fn a_private_file_is_created_0600_and_links_are_refused() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let fresh = dir.path().join("backup.orig");
        create_private(&fresh).unwrap().write_all(b"token").unwrap();
        assert_eq!(mode(&fresh), 0o600);
        let loose = dir.path().join("loose.orig");
        std::fs::write(&loose, "old text").unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
        create_private(&loose).unwrap().write_all(b"new").unwrap();
        assert_eq!(mode(&loose), 0o600);
        assert_eq!(std::fs::read_to_string(&loose).unwrap(), "new");
        let link = dir.path().join("link.orig");
        std::os::unix::fs::symlink(&loose, &link).unwrap();
        let err = create_private(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }
}
