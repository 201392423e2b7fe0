//! `vault-seed rotate ENV SECRET[.FIELD] --yes`: a fresh value from the field's generator.

use crate::cli::{GlobalArgs, RotateArgs};
use crate::exit::Exit;
use crate::replace::{self, ChangeError};
use crate::report::{self, Style};
use crate::vault::VaultError;

use super::change::{change_failed, mount_for, ChangeReport};
use super::session::Session;

pub(super) fn run(g: &GlobalArgs, args: &RotateArgs) -> Exit {
    let style = Style::stderr(g.color);
    let session = match Session::open(g, "rotate", &args.env, &[], &args.vault) {
        Ok(s) => s,
        Err(exit) => return exit,
    };
    let env = session.env.clone();
    let (t, fields) = match replace::select(&session.targets, &args.target) {
        Ok((t, Some(f))) => (t.clone(), vec![f.clone()]),
        Ok((t, None)) => (t.clone(), t.fields.clone()),
        Err(e) => return change_failed(g, "rotate", &env, &e, Exit::Usage),
    };
    let path = t.full_path();
    // Refusals that need no server: nothing is sent.
    if t.fixed {
        report::error(&style, &format!("`{path}` is fixed: data is encrypted with it, so it never rotates"), Some("rotating it would make that data unreadable; remove `fixed = true` from the spec only if the application can re-encrypt"));
        return Exit::Usage;
    }
    if let Some(f) = fields.iter().find(|f| f.generator.is_placeholder()) {
        report::error(&style, &format!("field `{}` of `{path}` is a placeholder: a person fills it in, vault-seed does not generate it", f.name), Some(&format!("store a new value with `vault-seed set {env} {}.{} < value.txt`", t.name, f.name)));
        return Exit::Usage;
    }
    if !args.yes && !args.dry_run {
        report::error(
            &style,
            &format!("rotating replaces the live value of `{path}`"),
            Some("add --yes to do it, or --dry-run to see what would rotate"),
        );
        return Exit::Usage;
    }
    let runtime = match super::runtime() {
        Ok(r) => r,
        Err(exit) => return exit,
    };
    let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
    runtime.block_on(async {
        let mount = match mount_for(g, "rotate", &session, &t, &args.assume_kv_mount).await {
            Ok(m) => m,
            Err(exit) => return exit,
        };
        if !mount.version.has_cas() {
            report::error(&style, &format!("mount `{}` is KV v1, which keeps no history: rotating would lose the old value", mount.path), Some("rotate on a KV v2 mount, or by hand after saving the old value"));
            return Exit::Failure;
        }
        let current = match replace::read_current(&session.vault, &mount, &t).await {
            Ok(p) => p,
            Err(e) => return change_failed(g, "rotate", &env, &e, Exit::Failure),
        };
        if args.dry_run {
            return ChangeReport { command: "rotate", env: &env, path, fields: names, outcome: "would-rotate", old_version: Some(current.version), new_version: Some(current.version + 1), ok: true }.print(g);
        }
        let mut values = Vec::new();
        for f in &fields {
            match f.generator.generate() {
                Ok(v) => values.push((f.name.clone(), v)),
                Err(e) => {
                    report::error(&style, &e.to_string(), None);
                    return Exit::Failure;
                }
            }
        }
        match replace::write_fields(&session.vault, &mount, &t, &current, &values, "rotate").await {
            Ok(v) => {
                eprintln!("version {} is kept in KV v2 history", current.version);
                ChangeReport { command: "rotate", env: &env, path, fields: names, outcome: "rotated", old_version: Some(current.version), new_version: Some(v), ok: true }.print(g)
            }
            Err(ChangeError::Vault(VaultError::CasMismatch { .. })) => {
                report::error(&style, &format!("`{path}` changed after vault-seed read it (version {}); nothing was written", current.version), Some("someone else is changing it; look, then run the command again"));
                Exit::Failure
            }
            Err(e) => change_failed(g, "rotate", &env, &e, Exit::Failure),
        }
    })
}
