//! `vault-seed set ENV SECRET[.FIELD]`: store a value read from stdin (a PAT, a client token).

use std::io::{IsTerminal, Read};

use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use crate::cli::{GlobalArgs, SetArgs};
use crate::exit::Exit;
use crate::generate::Validity;
use crate::replace::{self, ChangeError};
use crate::report::{self, Style};
use crate::vault::{FieldValue, VaultError};

use super::change::{change_failed, mount_for, ChangeReport};
use super::prompt::HiddenTty;
use super::session::Session;

/// The most bytes read from stdin: a token or a PEM bundle fits, a mistaken file does not.
const MAX_VALUE_BYTES: u64 = 1 << 20;

pub(super) fn run(g: &GlobalArgs, args: &SetArgs) -> Exit {
    let style = Style::stderr(g.color);
    let session = match Session::open(g, "set", &args.env, &[], &args.vault) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let env = session.env.clone();
    let (t, field) = match replace::select(&session.targets, &args.target) {
        Ok((t, Some(f))) => (t.clone(), f.clone()),
        Ok((t, None)) => {
            let e = ChangeError::NotInSpec {
                message: format!("secret `{}` has several fields; say which one", t.name),
                help: format!(
                    "e.g. `vault-seed set {env} {}.{}`",
                    t.name, t.fields[0].name
                ),
            };
            return change_failed(g, "set", &env, &e, Exit::Usage);
        }
        Err(e) => return change_failed(g, "set", &env, &e, Exit::Usage),
    };
    let runtime = match super::runtime() {
        Ok(r) => r,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        let mount = match mount_for(g, "set", &session, &t, &args.assume_kv_mount).await {
            Ok(m) => m,
            Err(exit) => return exit,
        };
        let current = match replace::read_current(&session.vault, &mount, &t).await {
            Ok(p) => p,
            Err(e) => return change_failed(g, "set", &env, &e, Exit::Failure),
        };
        let path = t.full_path();
        // Decide before asking for the value: never ask for what would be refused.
        let (replacing, outcome) = match current.fields.get(&field.name) {
            None => (false, "added"),
            Some(FieldValue::Text(v)) if field.generator.validate(v) == Validity::Pending => (false, "replaced-placeholder"),
            Some(_) if t.fixed => {
                report::error(&style, &format!("`{path}` is fixed: data is encrypted with it, so vault-seed never changes it once written"), Some("if it really must change, do it by hand with the runbook for re-encrypting the data"));
                return Exit::Failure;
            }
            Some(_) if !args.force => {
                report::error(&style, &format!("field `{}` of `{path}` holds a real value (version {}), not a placeholder", field.name, current.version), Some("pass --force to replace it; the old value stays in KV v2 history"));
                return Exit::Failure;
            }
            Some(_) => (true, "set"),
        };
        if replacing {
            eprintln!("replacing field `{}` of `{path}`: version {} -> {}", field.name, current.version, current.version + 1);
        }
        eprintln!("reading the new value of `{path}` field `{}` from stdin (current version {})", field.name, current.version);
        let value = match read_value() {
            Ok(v) => v,
            Err(msg) => {
                report::error(&style, &msg, Some(&format!("e.g. `vault-seed set {env} {} < value.txt`", args.target)));
                return Exit::Usage;
            }
        };
        if let crate::generate::Generator::Placeholder { marker } = &field.generator {
            if value.expose_secret() == marker {
                report::error(&style, "that is the placeholder marker itself", Some("give the real value"));
                return Exit::Usage;
            }
        } else if let Validity::Invalid(why) = field.generator.validate(&value) {
            report::error(&style, &format!("the value {why}; nothing was written"), Some(&format!("field `{}` holds a {}", field.name, field.generator.describe())));
            return Exit::Usage;
        }
        if let Some(FieldValue::Text(old)) = current.fields.get(&field.name) {
            if old.expose_secret() == value.expose_secret() {
                return ChangeReport { command: "set", env: &env, path, fields: vec![field.name.clone()], outcome: "unchanged", old_version: Some(current.version), new_version: None, ok: true }.print(g);
            }
        }
        match replace::write_fields(&session.vault, &mount, &t, &current, &[(field.name.clone(), value)], "set").await {
            Ok(v) => ChangeReport { command: "set", env: &env, path, fields: vec![field.name.clone()], outcome, old_version: Some(current.version).filter(|v| *v > 0), new_version: Some(v).filter(|v| *v > 0), ok: true }.print(g),
            Err(ChangeError::Vault(VaultError::CasMismatch { .. })) => {
                report::error(&style, &format!("`{path}` changed after vault-seed read it (version {}); nothing was written", current.version), Some("someone else is changing it; look, then run the command again"));
                Exit::Failure
            }
            Err(e) => change_failed(g, "set", &env, &e, Exit::Failure),
        }
    })
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
