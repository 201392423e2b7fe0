//! `vault-seed move ENV SECRET --from OLD_PATH`: a secret's data copied to the path the specs
//! give it now, after a layout change, through the write gate; nothing deleted.

use crate::app::cli::{GlobalArgs, MoveArgs};
use crate::gate::{self, Held, Intent};
use crate::report::moves::MoveReport;
use crate::vault::{Existing, FieldValue, VaultError};
use crate::write::replace;

use super::session::Session;
use super::Failure;

#[allow(clippy::too_many_lines)] // one command's steps in the order they run
pub(super) fn run(g: &GlobalArgs, args: &MoveArgs) -> Result<MoveReport, Failure> {
    let session = Session::open(g, &args.env, &[], &args.vault)?;
    let env = session.env.clone();
    let t = replace::select(&session.targets, &args.target)?.0.clone();
    let refusals = gate::refuse_by_spec(&t, Intent::Move, &[]);
    if !refusals.is_empty() {
        return Err(super::refused_unsent(&env, &refusals));
    }
    let new_full = t.full_path();
    let old = old_path(&args.from, t.mount()).ok_or_else(|| {
        Failure::usage(format!(
            "`{}` is not a path on the secret's mount `{}`",
            crate::spec::diag::shown(&args.from),
            t.mount()
        ))
        .help(format!(
            "give the old path in full, e.g. `{}/OLD/FOLDER/{}`",
            t.mount(),
            t.name
        ))
    })?;
    if old == *t.path {
        return Err(Failure::usage(format!(
            "`{new_full}` is the spec's path already: nothing to move"
        )));
    }
    let old_full = format!("{}/{old}", t.mount());
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let mount = session.mount_for(&t, &args.assume_kv_mount).await?;
        if !mount.version.has_cas() {
            return Err(Failure::new(format!(
                "mount `{}` is KV v1, which has no check-and-set: a move could write over a secret made meanwhile; nothing was written",
                mount.path
            ))
            .help("copy it by hand with `vault kv get` and `vault kv put`, after checking the new path is empty"));
        }
        let vault = &session.vault;
        let from = match vault.kv_read(&mount, &old).await.map_err(Failure::from)? {
            Existing::Present(p) => p,
            _ => {
                return Err(Failure::new(format!(
                    "`{old_full}` holds no live secret: nothing to move; nothing was written"
                ))
                .help(format!(
                    "`vault-seed audit {env}` lists the paths vault-seed made that no spec names"
                )))
            }
        };
        let held = Held::of(vault.kv_read(&mount, &t.path).await.map_err(Failure::from)?);
        if held.live {
            return Err(Failure::new(format!(
                "`{new_full}` holds a secret already (version {}): `move` never writes over one; nothing was written",
                held.version
            ))
            .help("compare the two by hand and keep the right one; vault-seed changes neither"));
        }
        let mut values = Vec::new();
        for (k, v) in &from.fields {
            match v {
                FieldValue::Text(s) => values.push((k.clone(), s.clone())),
                FieldValue::NotText(kind) => {
                    return Err(Failure::new(format!(
                        "field `{k}` of `{old_full}` is {kind}, not a string: vault-seed copies strings only; nothing was written"
                    )))
                }
            }
        }
        // The copy holds the spec's fixed values under the spec's names, or it would be a fixed
        // secret that can never be completed: the person renames first.
        let lacks: Vec<&str> = t
            .fields
            .iter()
            .filter(|f| t.is_fixed(f) && !from.fields.contains_key(&f.name))
            .map(|f| f.name.as_str())
            .collect();
        if !lacks.is_empty() {
            let holds: Vec<&str> = from.fields.keys().map(String::as_str).collect();
            return Err(Failure::new(format!(
                "`{old_full}` holds `{}`, not fixed field(s) `{}` the spec names: the copy would lack them; nothing was written",
                holds.join("`, `"),
                lacks.join("`, `")
            ))
            .help("rename the field in the spec to the name the value is stored under, then move"));
        }
        let fields: Vec<String> = values.iter().map(|(k, _)| k.clone()).collect();
        let approved = gate::check(&t, &held, Intent::Move, values).map_err(|r| {
            // A refused move is exit 1: the data there did not pass the spec's checks.
            super::refused(&env, &r).exit(crate::base::exit::Exit::Failure)
        })?;
        let version = match gate::write(vault, &mount, &approved).await {
            Ok(v) => v,
            Err(VaultError::CasMismatch { .. }) => {
                return Err(Failure::new(format!(
                    "`{new_full}` was created by someone else while vault-seed moved it; nothing was written"
                ))
                .help("look at both paths, then run the move again if it is still needed"))
            }
            Err(e) => return Err(e.into()),
        };
        let mut notes = vec![format!(
            "`{old_full}` is kept, marked `vault-seed/moved-to`; remove it by hand once nothing reads it"
        )];
        if let Err(e) = gate::mark(vault, &mount, &t, "move", held.custom_metadata.clone()).await {
            notes.push(format!("the new path's custom_metadata could not be written: {e}"));
        }
        if let Err(e) =
            gate::mark_moved(vault, &mount, &old, &new_full, from.custom_metadata.clone()).await
        {
            notes[0] = format!(
                "`{old_full}` is kept, but could not be marked as moved ({e}): remove it by hand once nothing reads it"
            );
        }
        Ok(MoveReport {
            command: "move",
            env: env.clone(),
            path: new_full.clone(),
            from: old_full.clone(),
            fields,
            new_version: Some(version).filter(|v| *v > 0),
            ok: true,
            notes,
        })
    })
}

/// `from` as a path under `mount`: a full path on it (`secret/a/b`) loses the mount; a path
/// without it is taken as under it. `None` for an empty path or one with empty or dot segments.
fn old_path(from: &str, mount: &str) -> Option<String> {
    let p = from.trim_matches('/');
    if p == mount {
        return None;
    }
    let p = p
        .strip_prefix(mount)
        .and_then(|r| r.strip_prefix('/'))
        .unwrap_or(p);
    let ok = !p.is_empty() && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..");
    ok.then(|| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::old_path;

    #[test]
    fn the_old_path_is_taken_under_the_mount() {
        assert_eq!(
            old_path("secret/ask/dev/X", "secret").as_deref(),
            Some("ask/dev/X")
        );
        assert_eq!(
            old_path("/ask/dev/X/", "secret").as_deref(),
            Some("ask/dev/X")
        );
        assert_eq!(old_path("secret/../X", "secret"), None);
        assert_eq!(old_path("secret/", "secret"), None);
        assert_eq!(old_path("a//b", "secret"), None);
    }
}
