//! `vault-seed gen`: print one fresh value. The one place a value is printed, on purpose.

use std::io::Write;

use secrecy::ExposeSecret;

use crate::cli::{GenArgs, GlobalArgs};
use crate::exit::Exit;
use crate::generate::{
    CharClass, CharClasses, Generator, DEFAULT_BYTES, DEFAULT_MARKER, DEFAULT_PASSWORD_LENGTH,
    GENERATOR_NAMES, MAX_BYTES, MIN_BYTES, PASSWORD_LENGTHS,
};
use crate::report::{self, Style};

pub(super) fn run(g: &GlobalArgs, a: &GenArgs) -> Exit {
    let style = Style::stderr(g.color);
    let generator = match build(a) {
        Ok(gen) => gen,
        Err((msg, help)) => {
            report::error(&style, &msg, Some(&help));
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

type Problem = (String, String);

fn build(a: &GenArgs) -> Result<Generator, Problem> {
    let name = a.generator.as_str();
    let reject = |flag: &str, takes: &str| -> Result<(), Problem> {
        Err((
            format!("generator `{name}` does not take `--{flag}`"),
            takes.to_string(),
        ))
    };
    if a.bytes.is_some() && !matches!(name, "hex" | "base64" | "base64url") {
        reject(
            "bytes",
            "only `hex`, `base64` and `base64url` take `--bytes`",
        )?;
    }
    if (a.length.is_some() || !a.classes.is_empty()) && name != "password" {
        reject(
            "length/--classes",
            "only `password` takes `--length` and `--classes`",
        )?;
    }
    if a.marker.is_some() && name != "placeholder" {
        reject("marker", "only `placeholder` takes `--marker`")?;
    }
    let bytes = match a.bytes {
        None => DEFAULT_BYTES,
        Some(n) if (MIN_BYTES..=MAX_BYTES).contains(&n) => n,
        Some(n) => {
            return Err((
                format!("`--bytes {n}` is out of range"),
                format!("between {MIN_BYTES} and {MAX_BYTES}"),
            ))
        }
    };
    Ok(match name {
        "hex" => Generator::Hex { bytes },
        "hex32" => Generator::Hex { bytes: 32 },
        "fernet" => Generator::Fernet,
        "masterkey" => Generator::Masterkey,
        "placeholder" => Generator::Placeholder {
            marker: a.marker.clone().unwrap_or_else(|| DEFAULT_MARKER.into()),
        },
        "base64" | "base64url" => Generator::Base64 {
            bytes,
            url_safe: name == "base64url",
        },
        "password" => {
            let length = a.length.unwrap_or(DEFAULT_PASSWORD_LENGTH);
            if !PASSWORD_LENGTHS.contains(&length) {
                return Err((
                    format!("`--length {length}` is out of range"),
                    format!(
                        "between {} and {}",
                        PASSWORD_LENGTHS.start(),
                        PASSWORD_LENGTHS.end()
                    ),
                ));
            }
            let classes = if a.classes.is_empty() {
                CharClasses::default()
            } else {
                let mut parsed = Vec::new();
                for c in &a.classes {
                    parsed.push(CharClass::from_name(c.trim()).ok_or_else(|| {
                        (
                            format!("unknown character class `{c}`"),
                            "one of `lower`, `upper`, `digit`, `symbol`".to_string(),
                        )
                    })?);
                }
                CharClasses::new(parsed).unwrap_or_default()
            };
            Generator::Password { length, classes }
        }
        "uuid" => Generator::Uuid,
        other => {
            return Err((
                format!("unknown generator `{other}`"),
                format!("one of {}", GENERATOR_NAMES.join(", ")),
            ))
        }
    })
}
