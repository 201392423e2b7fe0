//! `vault-seed gen`: print one fresh value. The one place a value is printed, on purpose.

use std::io::Write;

use secrecy::ExposeSecret;

use crate::cli::{GenArgs, GlobalArgs};
use crate::exit::Exit;
use crate::generate::{Generator, ParamError, Params, Syntax};
use crate::report::{self, Style};

pub(super) fn run(g: &GlobalArgs, a: &GenArgs) -> Exit {
    let style = Style::stderr(g.color);
    let generator = match build(a) {
        Ok(gen) => gen,
        Err(errors) => {
            for e in errors {
                report::error(&style, &e.message, Some(&e.help));
            }
            return Exit::Usage;
        }
    };
    match generator.generate() {
        Ok(value) => {
            let mut out = std::io::stdout().lock();
            let written = if g.output == report::Format::Json {
                // Built by hand so the value passes through no serializer that could keep a copy.
                writeln!(
                    out,
                    "{{\"generator\":\"{}\",\"value\":{}}}",
                    generator.name(),
                    serde_json::Value::String(value.expose_secret().to_string())
                )
            } else {
                writeln!(out, "{}", value.expose_secret())
            };
            match written {
                Ok(()) => Exit::Success,
                Err(e) => {
                    report::error(&style, &format!("cannot write to stdout: {e}"), None);
                    Exit::Failure
                }
            }
        }
        Err(e) => {
            report::error(&style, &e.to_string(), None);
            Exit::Failure
        }
    }
}

fn build(a: &GenArgs) -> Result<Generator, Vec<ParamError>> {
    let params = Params {
        name: &a.generator,
        bytes: a.bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
        length: a.length.map(|l| i64::try_from(l).unwrap_or(i64::MAX)),
        classes: (!a.classes.is_empty()).then_some(a.classes.as_slice()),
        marker: a.marker.as_deref(),
    };
    Generator::from_params(&params, Syntax::Flag)
}
