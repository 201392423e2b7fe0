//! Reading a small file named on the command line (a credential, a token): only a regular file,
//! opened so that it cannot block (a FIFO with no writer would hang the run for good, a device
//! such as `/dev/zero` would never end), and at most a cap of bytes, into memory that is wiped.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use zeroize::Zeroizing;

/// Why a small file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SmallFileError {
    /// It could not be opened or read.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// It is not a regular file.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// It is larger than the cap.
    #[error("it is larger than {} KiB", .0 / 1024)]
    TooLarge(u64),
}

/// The bytes of the regular file at `path` (symbolic links followed, as Kubernetes' projected
/// volumes need), at most `cap` of them.
pub fn read_small(path: &Path, cap: u64) -> Result<Zeroizing<Vec<u8>>, SmallFileError> {
    // Non-blocking open: opening a FIFO for reading returns at once instead of waiting for a
    // writer; the type is then checked on what was opened, so nothing swapped in between counts.
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    if let Some(what) = not_regular(file.metadata()?.file_type()) {
        return Err(SmallFileError::NotRegular(what));
    }
    let mut bytes = Zeroizing::new(Vec::new());
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(SmallFileError::TooLarge(cap));
    }
    Ok(bytes)
}

/// What a file that is not a regular file is, in words (`a FIFO (named pipe)`); `None` for a
/// regular file.
pub fn not_regular(kind: FileType) -> Option<&'static str> {
    Some(if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a file"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_directory_and_a_device_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = read_small(&fifo, 64).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a FIFO (named pipe), not a regular file"
        );
        let e = read_small(dir.path(), 64).unwrap_err();
        assert_eq!(e.to_string(), "it is a directory, not a regular file");
        let e = read_small(Path::new("/dev/zero"), 64).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a character device, not a regular file"
        );
        let file = dir.path().join("token");
        std::fs::write(&file, "s.abc\n").unwrap();
        assert_eq!(&read_small(&file, 64).unwrap()[..], b"s.abc\n");
        let e = read_small(&file, 3).unwrap_err();
        assert!(matches!(e, SmallFileError::TooLarge(3)), "{e}");
    }
}
