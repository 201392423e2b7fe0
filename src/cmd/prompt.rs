//! A hidden prompt on the controlling terminal, for `set`.
//!
//! Echo goes off before the first prompt is printed and stays off until the last answer is read,
//! and what was typed before it went off is discarded (the terminal echoed that as it was typed,
//! as any terminal does). rpassword, used before, printed its prompt first and turned echo off
//! after, so a value typed or pasted the moment the prompt appeared could show on the screen.
//!
//! The terminal is read byte by byte, without canonical mode or signals, so that Ctrl-C cancels
//! through this code and the terminal's settings are always put back.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};

use rustix::termios::{self, LocalModes, OptionalActions, SpecialCodeIndex, Termios};
use secrecy::SecretString;
use zeroize::Zeroizing;

/// Longest answer accepted, in bytes.
const MAX_ANSWER: usize = 64 * 1024;

/// The controlling terminal with echo off; its settings come back on drop.
pub(super) struct HiddenTty {
    tty: File,
    saved: Termios,
    /// A stop signal puts the settings back too, before the run ends ([`crate::base::stop`]).
    _on_stop: Option<crate::base::stop::Registered>,
}

impl HiddenTty {
    /// Open `/dev/tty`, turn echo off and discard typeahead.
    pub(super) fn open() -> io::Result<HiddenTty> {
        let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
        let saved = termios::tcgetattr(&tty)?;
        let mut quiet = saved.clone();
        quiet
            .local_modes
            .remove(LocalModes::ECHO | LocalModes::ICANON | LocalModes::ISIG);
        quiet.special_codes[SpecialCodeIndex::VMIN] = 1;
        quiet.special_codes[SpecialCodeIndex::VTIME] = 0;
        // `Flush`: the change waits for pending output and drops input not yet read.
        let on_stop = tty.try_clone().ok().map(|again| {
            let saved = saved.clone();
            crate::base::stop::on_stop(move || {
                let _ = termios::tcsetattr(&again, OptionalActions::Now, &saved);
            })
        });
        termios::tcsetattr(&tty, OptionalActions::Flush, &quiet)?;
        Ok(HiddenTty {
            tty,
            saved,
            _on_stop: on_stop,
        })
    }

    /// Print `prompt`, read one line without echo. Backspace and Ctrl-U edit; Ctrl-C cancels
    /// (`Interrupted`); Ctrl-D on an empty line ends input (`UnexpectedEof`).
    pub(super) fn read(&self, prompt: &str) -> io::Result<SecretString> {
        let mut out = &self.tty;
        out.write_all(prompt.as_bytes())?;
        out.flush()?;
        let mut line = Zeroizing::new(Vec::with_capacity(64));
        let mut byte = Zeroizing::new([0u8; 1]);
        loop {
            if (&self.tty).read(&mut byte[..])? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the terminal closed",
                ));
            }
            match byte[0] {
                b'\r' | b'\n' => break,
                0x03 => {
                    out.write_all(b"\n")?;
                    return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
                }
                0x04 if line.is_empty() => {
                    out.write_all(b"\n")?;
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "end of input"));
                }
                // Backspace: drop the last character (all bytes of a multi-byte one).
                0x7f | 0x08 => {
                    while let Some(b) = line.pop() {
                        if b & 0xC0 != 0x80 {
                            break;
                        }
                    }
                }
                0x15 => line.clear(),
                b => {
                    if line.len() >= MAX_ANSWER {
                        out.write_all(b"\n")?;
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("longer than {MAX_ANSWER} bytes"),
                        ));
                    }
                    line.push(b);
                }
            }
        }
        out.write_all(b"\n")?;
        let bytes = std::mem::take(&mut *line);
        match String::from_utf8(bytes) {
            Ok(text) => Ok(SecretString::from(text)),
            Err(e) => {
                // The bytes are the value: wipe them before reporting.
                drop(Zeroizing::new(e.into_bytes()));
                Err(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
            }
        }
    }
}

impl Drop for HiddenTty {
    fn drop(&mut self) {
        // Nothing better to do if it fails: the terminal is going away.
        let _ = termios::tcsetattr(&self.tty, OptionalActions::Now, &self.saved);
    }
}
