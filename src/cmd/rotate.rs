//! `vault-seed rotate ENV SECRET[.FIELD] --yes`: a fresh value from the field's generator.

use crate::cli::{GlobalArgs, RotateArgs};
use crate::replace::{self, ChangeError};
use crate::report::{self, changes::ChangeReport};
use crate::vault::VaultError;
use crate::verify::readers::Readers;

use super::session::Session;
use super::set::{changed_meanwhile, refuse_provided};
use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &RotateArgs) -> Result<ChangeReport, Failure> {
    let session = Session::open(g, &args.env, &[], &args.vault)?;
    let env = session.env.clone();
    let (t, fields) = match replace::select(&session.targets, &args.target)? {
        (t, Some(f)) => (t.clone(), vec![f.clone()]),
        (t, None) => (t.clone(), t.fields.to_vec()),
    };
    let path = t.full_path();
    refuse_provided(&t, "rotate", &env)?;
    // Refusals that need no server: nothing is sent (exit 2, as every refused request).
    if t.fixed {
        return Err(Failure::usage(format!("`{path}` is fixed: data is encrypted with it, so it never rotates"))
            .help("rotating it would make that data unreadable; remove `fixed = true` from the spec only if the application can re-encrypt"));
    }
    if let Some(f) = fields.iter().find(|f| f.generator.is_placeholder()) {
        return Err(Failure::usage(format!("field `{}` of `{path}` is a placeholder: a person fills it in, vault-seed does not generate it", f.name))
            .help(format!("store a new value with `vault-seed set {env} {}.{} < value.txt`", t.name, f.name)));
    }
    if !args.yes && !args.dry_run {
        return Err(
            Failure::usage(format!("rotating replaces the live value of `{path}`"))
                .help("add --yes to do it, or --dry-run to see what would rotate"),
        );
    }
    let runtime = super::runtime()?;
    let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
    runtime.block_on(async {
        let mount = session.mount_for(&t, &args.assume_kv_mount).await?;
        if !mount.version.has_cas() {
            return Err(Failure::usage(format!(
                "mount `{}` is KV v1, which keeps no history: rotating would lose the old value",
                mount.path
            ))
            .help("rotate on a KV v2 mount, or by hand after saving the old value"));
        }
        let current = replace::read_current(&session.vault, &mount, &t, &env).await?;
        // What reads the value, said before it is replaced (in a dry run too).
        let readers = if names.iter().any(|n| current.fields.contains_key(n)) {
            super::readers::before_replace(g, &args.readers, &env, &t, &names).await
        } else {
            Readers::default()
        };
        let report = |outcome, new_version| ChangeReport {
            command: "rotate",
            env: env.clone(),
            path: path.clone(),
            fields: names.clone(),
            outcome,
            old_version: Some(current.version),
            new_version,
            ok: true,
            readers: Readers::default(),
        };
        if args.dry_run {
            return Ok(ChangeReport {
                readers,
                ..report("would-rotate", Some(current.version + 1))
            });
        }
        let mut values = Vec::new();
        for f in &fields {
            let v = f
                .generator
                .generate()
                .map_err(|e| Failure::new(e.to_string()))?;
            values.push((f.name.clone(), v));
        }
        match replace::write_fields(&session.vault, &mount, &t, &current, &values, "rotate").await {
            Ok(v) => {
                report::say(&format!(
                    "version {} is kept in KV v2 history",
                    current.version
                ));
                Ok(ChangeReport {
                    readers,
                    ..report("rotated", Some(v))
                })
            }
            Err(ChangeError::Vault(VaultError::CasMismatch { .. })) => {
                Err(changed_meanwhile(&path, current.version))
            }
            Err(e) => Err(e.into()),
        }
    })
}
