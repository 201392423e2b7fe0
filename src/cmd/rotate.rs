//! `vault-seed rotate ENV SECRET[.FIELD] --yes`: a fresh value from the field's generator.

use secrecy::{ExposeSecret, SecretString};

use crate::app::cli::{GlobalArgs, RotateArgs};
use crate::gate::{self, Held, Intent};
use crate::generate::Validity;
use crate::report::{self, changes::ChangeReport};
use crate::spec::{Field, Rotation, Target};
use crate::vault::FieldValue;
use crate::vault::VaultError;
use crate::verify::readers::Readers;
use crate::write::replace::{self, ChangeError};

use super::session::Session;
use super::set::changed_meanwhile;
use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &RotateArgs) -> Result<ChangeReport, Failure> {
    let session = Session::open(g, &args.env, &[], &args.vault)?;
    let env = session.env.clone();
    let (t, fields, whole) = match replace::select(&session.targets, &args.target)? {
        (t, Some(f)) => (t.clone(), vec![f.clone()], false),
        (t, None) => (t.clone(), t.fields.to_vec(), true),
    };
    let path = t.full_path();
    refuse_unsent(&session, args, &t, &fields, whole)?;
    let runtime = super::runtime()?;
    let names = names_of(&fields);
    runtime.block_on(async {
        let mount = session.mount_for(&t, &args.assume_kv_mount).await?;
        keeps_history(&mount)?;
        let current = replace::read_current(&session.vault, &mount, &t, &env).await?;
        let drops = dropped(&fields, &current);
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
            followed: Vec::new(),
        };
        // What reads the value, said before it is replaced (in a dry run too).
        let readers =
            || super::readers::before_rotate(g, &args.readers, &env, &t, &names, &current);
        let assumed = &args.assume_kv_mount;
        if args.dry_run {
            for (name, n) in &drops {
                report::say(&format!(
                    "field `{name}`: the rotation would drop {n} old key(s) from the keyring"
                ));
            }
            let mut readers = readers().await;
            super::readers::after_write(g, &mut readers);
            return Ok(ChangeReport {
                readers,
                followed: super::follow::others(&session, &t, &names, true, assumed).await,
                ..report("would-rotate", Some(current.version + 1))
            });
        }
        let remade = remade_from_sources(&fields);
        let (mut values, kept) = fresh_values(&fields, &current, &drops, &path)?;
        let derived =
            super::follow::in_secret(&session, &t, &current, &values, &remade, assumed).await?;
        values.extend(derived);
        let changed: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
        let approved = gate::check(&t, &current, Intent::Rotate, values)
            .map_err(|r| super::refused(&env, &r))?;
        let mut readers = readers().await;
        match replace::write(&session.vault, &mount, &t, &current, &approved, "rotate").await {
            Ok(v) => {
                for k in &kept {
                    report::say(k);
                }
                report::say(&format!(
                    "version {} is kept in KV v2 history",
                    current.version
                ));
                super::readers::after_write(g, &mut readers);
                Ok(ChangeReport {
                    readers,
                    fields: changed.clone(),
                    followed: super::follow::others(&session, &t, &changed, false, assumed).await,
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

/// A rotation keeps the old value in KV v2 history; KV v1 has none.
fn keeps_history(mount: &crate::base::kv::KvMount) -> Result<(), Failure> {
    if mount.version.has_cas() {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "mount `{}` is KV v1, which keeps no history: rotating would lose the old value",
        mount.path
    ))
    .help("rotate on a KV v2 mount, or by hand after saving the old value"))
}

/// The refusals that need no server, and `--yes`: nothing is sent when one stops the rotation
/// (exit 2, as every refused request).
fn refuse_unsent(
    session: &Session,
    args: &RotateArgs,
    t: &Target,
    fields: &[Field],
    whole: bool,
) -> Result<(), Failure> {
    let env = &session.env;
    let refusing = |f: &Field| !gate::refuse_by_spec(t, Intent::Rotate, &[f]).is_empty();
    let refusals = gate::refuse_by_spec(t, Intent::Rotate, &fields.iter().collect::<Vec<_>>());
    if let Some(first) = refusals.first() {
        let others: Vec<&Field> = t.fields.iter().filter(|f| !refusing(f)).collect();
        let mut f = super::refused_unsent(env, &refusals);
        if let (true, [_, ..]) = (whole, others.as_slice()) {
            f = f.help(format!(
                "{}; or rotate only the others: {}",
                first.help(env),
                others
                    .iter()
                    .map(|f| format!("`vault-seed rotate {env} {}.{} --yes`", t.name, f.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        return Err(f);
    }
    let refusals = gate::refuse_followers(&session.targets, t, &names_of(fields));
    if !refusals.is_empty() {
        return Err(super::refused_unsent(env, &refusals));
    }
    if !args.yes && !args.dry_run {
        return Err(Failure::usage(format!(
            "rotating replaces the live value of `{}`",
            t.full_path()
        ))
        .help("add --yes to do it, or --dry-run to see what would rotate"));
    }
    Ok(())
}

/// A new value for each field that is not derived (a keyring's: the new key first, then the
/// previous ones it keeps), and what is said of each keyring.
fn fresh_values(
    fields: &[Field],
    current: &Held,
    drops: &[(String, usize)],
    path: &str,
) -> Result<(Values, Vec<String>), Failure> {
    let mut values = Vec::new();
    let mut kept = Vec::new();
    for f in fields.iter().filter(|f| f.generator.derived().is_none()) {
        let v = f
            .generator
            .generate()
            .map_err(|e| Failure::new(e.to_string()))?;
        let v = match f.rotation {
            Rotation::Keyring { keep } => {
                let (ring, n) = keyring(f, keep, v, current.fields.get(&f.name), path)?;
                let dropped = drops
                    .iter()
                    .find(|(d, _)| *d == f.name)
                    .map_or(0, |(_, n)| *n);
                kept.push(match dropped {
                    0 => format!("field `{}`: the new key first, {n} previous key(s) kept", f.name),
                    d => format!("field `{}`: the new key first, {n} previous key(s) kept, {d} older key(s) dropped", f.name),
                });
                ring
            }
            _ => v,
        };
        values.push((f.name.clone(), v));
    }
    Ok((values, kept))
}

/// Field names with their new values.
type Values = Vec<(String, SecretString)>;

/// The fields made again from their sources (derived), not generated.
fn remade_from_sources(fields: &[Field]) -> Vec<String> {
    fields
        .iter()
        .filter(|f| f.generator.derived().is_some())
        .map(|f| f.name.clone())
        .collect()
}

fn names_of(fields: &[Field]) -> Vec<String> {
    fields.iter().map(|f| f.name.clone()).collect()
}

/// For each keyring field among `fields`, how many old keys a rotation drops: those past its
/// `keep` (a ring stored longer than the spec allows loses all of its surplus at once).
fn dropped(fields: &[Field], current: &Held) -> Vec<(String, usize)> {
    fields
        .iter()
        .filter_map(|f| {
            let Rotation::Keyring { keep } = f.rotation else {
                return None;
            };
            let Some(FieldValue::Text(v)) = current.fields.get(&f.name) else {
                return None;
            };
            let n = v.expose_secret().split(',').count();
            let d = n.saturating_sub(usize::from(keep));
            (d > 0).then(|| (f.name.clone(), d))
        })
        .collect()
}

/// The keyring after a rotation: `new`, then up to `keep` keys of the live value `old`, newest
/// first; and how many were kept. A live value that is not a valid keyring is not carried on
/// (exit 1): its bad key would be served again.
fn keyring(
    f: &Field,
    keep: u8,
    new: SecretString,
    old: Option<&FieldValue>,
    path: &str,
) -> Result<(SecretString, usize), Failure> {
    let old = match old {
        None => return Ok((new, 0)),
        Some(FieldValue::NotText(kind)) => {
            return Err(Failure::new(format!(
                "field `{}` of `{path}` is {kind}, not a keyring; nothing was written",
                f.name
            ))
            .help("store a valid key with `set --force`, then rotate"))
        }
        Some(FieldValue::Text(v)) => v,
    };
    if let Validity::Invalid(why) = f.validate_keys(old) {
        return Err(Failure::new(format!(
            "field `{}` of `{path}` is not a valid keyring: it {why}; nothing was written",
            f.name
        ))
        .help("`vault-seed verify` names the bad key; store a valid keyring with `set --force`, then rotate"));
    }
    let mut ring = String::from(new.expose_secret());
    let mut n = 0;
    for key in old.expose_secret().split(',').take(usize::from(keep)) {
        ring.push(',');
        ring.push_str(key);
        n += 1;
    }
    let ring = SecretString::from(ring);
    crate::base::redact::register(&ring);
    Ok((ring, n))
}
