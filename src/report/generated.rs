//! `gen`'s report: the one value vault-seed prints, on purpose. It goes into a buffer that is
//! wiped once written, and through no serializer that could keep a copy.

use std::io::Write;

use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use super::{Format, Rendered, Report, View};

/// A fresh value and the generator that made it.
pub struct Generated {
    /// The generator's name.
    pub generator: String,
    /// The value.
    pub value: SecretString,
}

impl Report for Generated {
    fn render(&self, view: &View) -> Rendered<'_> {
        let mut out = Zeroizing::new(Vec::new());
        let value = self.value.expose_secret();
        // Writing into memory cannot fail.
        let _ = match view.format {
            Format::Json => {
                // JSON-escape the value by hand into the wiped buffer.
                let _ = write!(out, "{{\"generator\":");
                let _ = serde_json::to_writer(&mut *out, &self.generator);
                let _ = write!(out, ",\"value\":");
                let _ = serde_json::to_writer(&mut *out, value);
                writeln!(out, "}}")
            }
            Format::Human => writeln!(out, "{value}"),
        };
        Rendered {
            stdout: super::Body::Bytes(out),
            ok: true,
            ..Rendered::default()
        }
    }
}
