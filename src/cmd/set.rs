//! `vault-seed set ENV SECRET[.FIELD]`: store a value read from stdin (a PAT, a client token).

use std::io::{IsTerminal, Read};

use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use crate::cli::{GlobalArgs, SetArgs};
use crate::generate::{Generator, Validity};
use crate::replace::{self, ChangeError};
use crate::report::{self, changes::ChangeReport};
use crate::spec::Target;
use crate::vault::{FieldValue, VaultError};
use crate::verify::readers::Readers;

use super::prompt::HiddenTty;
use super::session::Session;
use super::Failure;

/// The most bytes read from stdin: a token or a PEM bundle fits, a mistaken file does not.
const MAX_VALUE_BYTES: u64 = 1 << 20;

pub(super) fn run(g: &GlobalArgs, args: &SetArgs) -> Result<ChangeReport, Failure> {
    let session = Session::open(g, &args.env, &[], &args.vault)?;
    let env = session.env.clone();
    let (t, field) = match replace::select(&session.targets, &args.target)? {
        (t, Some(f)) => (t.clone(), f.clone()),
        (t, None) => {
            return Err(Failure::usage(format!(
                "secret `{}` has several fields; say which one",
                t.name
            ))
            .help(format!(
                "e.g. `vault-seed set {env} {}.{}`",
                t.name, t.fields[0].name
            )))
        }
    };
    refuse_provided(&t, "set", &env)?;
    if let Some(d) = field.generator.derived() {
        return Err(Failure::usage(format!(
            "field `{}` of `{}` is made from other fields ({}): vault-seed makes it, never a person",
            field.name,
            t.full_path(),
            d.describe()
        ))
        .help(format!(
            "set its source instead, and it follows; `vault-seed rotate {env} {}.{} --yes` makes it again from its source",
            t.name, field.name
        )));
    }
    super::follow::refuse_fixed_followers(&session, &t, std::slice::from_ref(&field.name))?;
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let mount = session.mount_for(&t, &args.assume_kv_mount).await?;
        let current = replace::read_current(&session.vault, &mount, &t, &env).await?;
        let path = t.full_path();
        // Decide before asking for the value: never ask for what would be refused. A refusal
        // writes nothing: exit 2, as every refused request.
        let (replacing, outcome) = match current.fields.get(&field.name) {
            None => (false, "added"),
            Some(FieldValue::Text(v)) if field.validate(v) == Validity::Pending => {
                (false, "replaced-placeholder")
            }
            Some(_) if t.is_fixed(&field) => {
                let what = match t.fixed {
                    true => format!("`{path}` is fixed"),
                    false => format!("field `{}` of `{path}` is fixed", field.name),
                };
                return Err(Failure::usage(format!("{what}: data is encrypted with it, so vault-seed never changes it once written"))
                    .help("if it really must change, do it by hand with the runbook for re-encrypting the data"));
            }
            Some(_) if !args.force => {
                return Err(Failure::usage(format!(
                    "field `{}` of `{path}` holds a real value (version {}), not a placeholder",
                    field.name, current.version
                ))
                .help("pass --force to replace it; the old value stays in KV v2 history"));
            }
            Some(_) => (true, "set"),
        };
        report::say(&format!(
            "reading the new value of `{path}` field `{}` from stdin (current version {})",
            field.name, current.version
        ));
        let value = read_value().map_err(|msg| {
            Failure::usage(msg).help(format!(
                "e.g. `vault-seed set {env} {} < value.txt`",
                args.target
            ))
        })?;
        if let Generator::Placeholder { marker } = &field.generator {
            if value.expose_secret() == marker {
                return Err(
                    Failure::usage("that is the placeholder marker itself").help("give the real value")
                );
            }
        } else if let Validity::Invalid(why) = field.validate(&value) {
            return Err(Failure::usage(format!("the value {why}; nothing was written")).help(
                format!("field `{}` holds a {}", field.name, field.generator.describe()),
            ));
        }
        let report = |outcome, old_version, new_version| ChangeReport {
            command: "set",
            env: env.clone(),
            path: path.clone(),
            fields: vec![field.name.clone()],
            outcome,
            old_version,
            new_version,
            ok: true,
            readers: Readers::default(),
            followed: Vec::new(),
        };
        if let Some(FieldValue::Text(old)) = current.fields.get(&field.name) {
            if old.expose_secret() == value.expose_secret() {
                return Ok(report("unchanged", Some(current.version), None));
            }
        }
        // Said once the value passed its checks and differs: a refused or unchanged value
        // replaces nothing.
        if replacing {
            report::say(&format!(
                "replacing field `{}` of `{path}`: version {} -> {}",
                field.name,
                current.version,
                current.version + 1
            ));
        }
        // What reads the value, said before a real one is replaced.
        let readers = if replacing {
            let fields = [field.name.clone()];
            super::readers::before_replace(g, &args.readers, &env, &t, &fields).await
        } else {
            Readers::default()
        };
        let mut values = vec![(field.name.clone(), value)];
        let derived = super::follow::in_secret(
            &session,
            &t,
            &current,
            &values,
            &[],
            &args.assume_kv_mount,
        )
        .await?;
        values.extend(derived);
        let written =
            replace::write_fields(&session.vault, &mount, &t, &current, &values, "set").await;
        if written.is_ok() {
            super::readers::after_write(g, &readers);
        }
        let changed: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
        match written {
            Ok(v) => Ok(ChangeReport {
                readers,
                fields: changed.clone(),
                followed: super::follow::others(
                    &session,
                    &t,
                    &changed,
                    false,
                    &args.assume_kv_mount,
                )
                .await,
                ..report(
                    outcome,
                    Some(current.version).filter(|v| *v > 0),
                    Some(v).filter(|v| *v > 0),
                )
            }),
            Err(ChangeError::Vault(VaultError::CasMismatch { .. })) => Err(changed_meanwhile(&path, current.version)),
            Err(e) => Err(e.into()),
        }
    })
}

/// A path another application provides is never written: a refused request, before anything is
/// sent (exit 2).
pub(super) fn refuse_provided(t: &Target, command: &str, env: &str) -> Result<(), Failure> {
    match &t.provided {
        None => Ok(()),
        Some(p) => Err(Failure::usage(format!(
            "`{}` is provided by another application ({}): vault-seed never writes it; nothing was sent",
            t.full_path(),
            p.by
        ))
        .help(format!(
            "its provider makes and changes it, not `{command}`; `vault-seed verify {env}` shows whether it is there and valid"
        ))),
    }
}

/// Check-and-set refused the write: someone changed the secret after it was read (exit 1).
pub(super) fn changed_meanwhile(path: &str, version: u64) -> Failure {
    Failure::new(format!(
        "`{path}` changed after vault-seed read it (version {version}); nothing was written"
    ))
    .help("someone else is changing it; look, then run the command again")
}

/// The value: a hidden prompt with confirmation on a terminal, else all of stdin (one trailing
/// newline removed). Never from the command line, where it would land in shell history.
fn read_value() -> Result<SecretString, String> {
    if std::io::stdin().is_terminal() {
        let failed = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::Interrupted => "cancelled; nothing was written".to_string(),
            _ => format!("cannot read the value: {e}"),
        };
        let tty = HiddenTty::open().map_err(failed)?;
        let first = tty.read("value (hidden): ").map_err(failed)?;
        let second = tty.read("again: ").map_err(failed)?;
        drop(tty);
        if first.expose_secret() != second.expose_secret() {
            return Err("the two entries differ; nothing was written".into());
        }
        return non_empty(first.expose_secret().to_string());
    }
    let mut buf = Zeroizing::new(Vec::new());
    std::io::stdin()
        .take(MAX_VALUE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if buf.len() as u64 > MAX_VALUE_BYTES {
        return Err(format!(
            "stdin holds more than {MAX_VALUE_BYTES} bytes: is it the right file?"
        ));
    }
    let text = std::str::from_utf8(&buf).map_err(|_| "the value is not UTF-8 text".to_string())?;
    let text = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(text);
    non_empty(text.to_string())
}

fn non_empty(v: String) -> Result<SecretString, String> {
    if v.is_empty() {
        Err("the value is empty; nothing was written".into())
    } else {
        let v = SecretString::from(v);
        crate::redact::register(&v);
        Ok(v)
    }
}
