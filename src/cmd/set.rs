//! `vault-seed set ENV SECRET[.FIELD]`: store a value read from stdin (a PAT, a client token).

use std::io::{IsTerminal, Read};

use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use crate::app::cli::{GlobalArgs, SetArgs};
use crate::gate::{self, Held, Intent};
use crate::generate::Validity;
use crate::report::{self, changes::ChangeReport};
use crate::spec::{Field, Target};
use crate::vault::{FieldValue, VaultError};
use crate::verify::readers::Readers;
use crate::write::replace::{self, ChangeError};

use super::prompt::HiddenTty;
use super::session::Session;
use super::Failure;

/// The most bytes read from stdin: a token or a PEM bundle fits, a mistaken file does not.
const MAX_VALUE_BYTES: u64 = 1 << 20;

pub(super) fn run(g: &GlobalArgs, args: &SetArgs) -> Result<ChangeReport, Failure> {
    let session = Session::open(g, &args.env, &[], &args.vault)?;
    let env = session.env.clone();
    let intent = Intent::Set { force: args.force };
    let (t, field) = chosen(&session, args, intent)?;
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let mount = session.mount_for(&t, &args.assume_kv_mount).await?;
        let held = replace::read_current(&session.vault, &mount, &t, &env).await?;
        let path = t.full_path();
        let (replacing, outcome) = what_it_does(&held, &field);
        let value = checked_value(&env, args, &t, &field, &held, intent)?;
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
        if holds_already(&held, &field, &value) {
            return Ok(report("unchanged", Some(held.version), None));
        }
        // Said once the value passed its checks and differs: a refused or unchanged value
        // replaces nothing.
        if replacing {
            let (from, to) = (held.version, held.version + 1);
            report::say(&format!(
                "replacing field `{}` of `{path}`: version {from} -> {to}",
                field.name
            ));
        }
        // What reads the value, said before a real one is replaced; for a placeholder, whether
        // it reached the cluster, said after the write with the next step.
        let fields = [field.name.clone()];
        let (mut readers, next_step) = match (replacing, outcome) {
            (true, _) => (before_replace(g, args, &env, &t, &fields).await, false),
            (false, "replaced-placeholder") => {
                super::readers::for_placeholder(g, &args.readers, &env, &t, &fields).await
            }
            _ => (Readers::default(), false),
        };
        let mut values = vec![(field.name.clone(), value)];
        let derived =
            super::follow::in_secret(&session, &t, &held, &values, &[], &args.assume_kv_mount)
                .await?;
        values.extend(derived);
        let changed: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
        let approved =
            gate::check(&t, &held, intent, values).map_err(|r| super::refused(&env, &r))?;
        let written = replace::write(&session.vault, &mount, &t, &held, &approved, "set").await;
        if written.is_ok() && replacing {
            super::readers::after_write(g, &mut readers);
        } else if written.is_ok() && next_step {
            super::readers::next_step(g, &env, &mut readers);
        }
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
                    Some(held.version).filter(|v| *v > 0),
                    Some(v).filter(|v| *v > 0),
                )
            }),
            Err(ChangeError::Vault(VaultError::CasMismatch { .. })) => {
                Err(changed_meanwhile(&path, held.version))
            }
            Err(e) => Err(e.into()),
        }
    })
}

/// The secret and field to set, when the spec lets `set` write it: refusals that need no server
/// stop it before anything is sent (exit 2, as every refused request).
fn chosen(session: &Session, args: &SetArgs, intent: Intent) -> Result<(Target, Field), Failure> {
    let env = &session.env;
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
    let refusals = gate::refuse_by_spec(&t, intent, &[&field]);
    if !refusals.is_empty() {
        return Err(super::refused_unsent(env, &refusals));
    }
    let refusals = gate::refuse_followers(&session.targets, &t, std::slice::from_ref(&field.name));
    if !refusals.is_empty() {
        return Err(super::refused_unsent(env, &refusals));
    }
    Ok((t, field))
}

/// Whether the write replaces a real value, and its outcome's name.
fn what_it_does(held: &Held, field: &Field) -> (bool, &'static str) {
    match held.fields.get(&field.name) {
        None => (false, "added"),
        Some(FieldValue::Text(v)) if field.validate(v) == Validity::Pending => {
            (false, "replaced-placeholder")
        }
        Some(_) => (true, "set"),
    }
}

/// The new value, read from stdin once the gate says the field may change, and checked by it.
fn checked_value(
    env: &str,
    args: &SetArgs,
    t: &Target,
    field: &Field,
    held: &Held,
    intent: Intent,
) -> Result<SecretString, Failure> {
    // Decide before asking for the value: never ask for what would be refused. A refusal writes
    // nothing: exit 2, as every refused request.
    let refusals = gate::refuse_change(t, held, intent, std::slice::from_ref(&field.name));
    if !refusals.is_empty() {
        return Err(super::refused(env, &refusals));
    }
    report::say(&format!(
        "reading the new value of `{}` field `{}` from stdin (current version {})",
        t.full_path(),
        field.name,
        held.version
    ));
    let value = read_value().map_err(|msg| {
        Failure::usage(msg).help(format!(
            "e.g. `vault-seed set {env} {} < value.txt`",
            args.target
        ))
    })?;
    let refusals = gate::refuse_value(t, held, intent, &field.name, &value);
    if !refusals.is_empty() {
        return Err(super::refused(env, &refusals));
    }
    Ok(value)
}

/// Whether the field holds `value` already: nothing is written then.
fn holds_already(held: &Held, field: &Field, value: &SecretString) -> bool {
    matches!(held.fields.get(&field.name), Some(FieldValue::Text(old)) if old.expose_secret() == value.expose_secret())
}

/// What reads a real value, said before it is replaced.
async fn before_replace(
    g: &GlobalArgs,
    args: &SetArgs,
    env: &str,
    t: &Target,
    fields: &[String],
) -> Readers {
    super::readers::before_replace(g, &args.readers, env, t, fields).await
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
        crate::base::redact::register(&v);
        Ok(v)
    }
}
