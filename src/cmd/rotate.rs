//! `vault-seed rotate ENV SECRET[.FIELD] --yes`: a fresh value from the field's generator.

use secrecy::{ExposeSecret, SecretString};

use crate::cli::{GlobalArgs, RotateArgs};
use crate::generate::{Generator, Validity};
use crate::replace::{self, ChangeError};
use crate::report::{self, changes::ChangeReport};
use crate::spec::{Field, Rotation, Target};
use crate::vault::FieldValue;
use crate::vault::VaultError;
use crate::verify::readers::Readers;

use super::session::Session;
use super::set::{changed_meanwhile, refuse_provided};
use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &RotateArgs) -> Result<ChangeReport, Failure> {
    let session = Session::open(g, &args.env, &[], &args.vault)?;
    let env = session.env.clone();
    let (t, fields, whole) = match replace::select(&session.targets, &args.target)? {
        (t, Some(f)) => (t.clone(), vec![f.clone()], false),
        (t, None) => (t.clone(), t.fields.to_vec(), true),
    };
    let path = t.full_path();
    refuse_provided(&t, "rotate", &env)?;
    // Refusals that need no server: nothing is sent (exit 2, as every refused request).
    if t.fixed {
        return Err(Failure::usage(format!("`{path}` is fixed: data is encrypted with it, so it never rotates"))
            .help("rotating it would make that data unreadable; remove `fixed = true` from the spec only if the application can re-encrypt"));
    }
    if let Some(refused) = fields.iter().find_map(|f| refusal(&t, f)) {
        let others: Vec<&Field> = t
            .fields
            .iter()
            .filter(|f| refusal(&t, f).is_none())
            .collect();
        let help = match (whole, others.as_slice()) {
            (true, [_, ..]) => format!(
                "{}; or rotate only the others: {}",
                refused.help(&env, &t),
                others
                    .iter()
                    .map(|f| format!("`vault-seed rotate {env} {}.{} --yes`", t.name, f.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => refused.help(&env, &t),
        };
        return Err(Failure::usage(refused.message(&path)).help(help));
    }
    super::follow::refuse_fixed_followers(&session, &t, &names_of(&fields))?;
    if !args.yes && !args.dry_run {
        return Err(
            Failure::usage(format!("rotating replaces the live value of `{path}`"))
                .help("add --yes to do it, or --dry-run to see what would rotate"),
        );
    }
    let runtime = super::runtime()?;
    let names = names_of(&fields);
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
            let readers = readers().await;
            super::readers::after_write(g, &readers);
            return Ok(ChangeReport {
                readers,
                followed: super::follow::others(&session, &t, &names, true, assumed).await,
                ..report("would-rotate", Some(current.version + 1))
            });
        }
        let mut values = Vec::new();
        let mut kept = Vec::new();
        // A derived field is made again from its source, not generated.
        let remade: Vec<String> = fields
            .iter()
            .filter(|f| f.generator.derived().is_some())
            .map(|f| f.name.clone())
            .collect();
        for f in fields.iter().filter(|f| f.generator.derived().is_none()) {
            let v = f
                .generator
                .generate()
                .map_err(|e| Failure::new(e.to_string()))?;
            let v = match f.rotation {
                Rotation::Keyring { keep } => {
                    let (ring, n) = keyring(f, keep, v, current.fields.get(&f.name), &path)?;
                    kept.push(format!(
                        "field `{}`: the new key first, {n} previous key(s) kept",
                        f.name
                    ));
                    ring
                }
                _ => v,
            };
            values.push((f.name.clone(), v));
        }
        let derived =
            super::follow::in_secret(&session, &t, &current, &values, &remade, assumed).await?;
        values.extend(derived);
        let changed: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
        let readers = readers().await;
        match replace::write_fields(&session.vault, &mount, &t, &current, &values, "rotate").await {
            Ok(v) => {
                for k in &kept {
                    report::say(k);
                }
                report::say(&format!(
                    "version {} is kept in KV v2 history",
                    current.version
                ));
                super::readers::after_write(g, &readers);
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

fn names_of(fields: &[Field]) -> Vec<String> {
    fields.iter().map(|f| f.name.clone()).collect()
}

/// Why `rotate` refuses a field, before anything is sent.
enum Refusal<'a> {
    /// `fixed = true` or `rotation = "never"` on the field.
    Fixed(&'a Field),
    /// A placeholder: a person fills it in.
    Placeholder(&'a Field),
    /// A key that encrypts or hashes stored data, whose spec does not say how it may rotate.
    Unstated(&'a Field),
}

/// Whether `rotate` refuses field `f` of `t`, and why.
fn refusal<'a>(t: &Target, f: &'a Field) -> Option<Refusal<'a>> {
    if t.is_fixed(f) {
        Some(Refusal::Fixed(f))
    } else if f.generator.is_placeholder() {
        Some(Refusal::Placeholder(f))
    } else if f.rotation == Rotation::Unstated && f.generator.keys_data() {
        Some(Refusal::Unstated(f))
    } else {
        None
    }
}

impl Refusal<'_> {
    fn message(&self, path: &str) -> String {
        match self {
            Refusal::Fixed(f) => format!("field `{}` of `{path}` is fixed: data is encrypted with it, so it never rotates", f.name),
            Refusal::Placeholder(f) => format!("field `{}` of `{path}` is a placeholder: a person fills it in, vault-seed does not generate it", f.name),
            Refusal::Unstated(f) => format!(
                "field `{}` of `{path}` is a {} that encrypts or hashes stored data, and the spec does not say how it may rotate",
                f.name,
                match f.generator {
                    Generator::Masterkey => "Zitadel masterkey",
                    _ => "Fernet key",
                }
            ),
        }
    }

    fn help(&self, env: &str, t: &Target) -> String {
        match self {
            Refusal::Fixed(_) => "rotating it would make that data unreadable; remove `fixed = true` (or `rotation = \"never\"`) from the spec only if the application can re-encrypt".into(),
            Refusal::Placeholder(f) => format!("store a new value with `vault-seed set {env} {}.{} < value.txt`", t.name, f.name),
            Refusal::Unstated(f) => match f.generator {
                Generator::Masterkey => format!("say it in the spec, on `fields.{}`: `rotation = \"replace\"` (the application re-encrypts its data) or `rotation = \"never\"`", f.name),
                _ => format!("say it in the spec, on `fields.{}`: `rotation = \"keyring\"` (the new key first, the old ones kept: for readers of a key list, such as MultiFernet), `rotation = \"replace\"` (the data is re-encrypted or expendable) or `rotation = \"never\"`", f.name),
            },
        }
    }
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
    if let Validity::Invalid(why) = f.validate(old) {
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
    crate::redact::register(&ring);
    Ok((ring, n))
}
