//! What follows a `set` or `rotate`: the derived fields of the same secret, made again in the
//! same write, and the fields of other secrets made from the changed ones (copies, templates),
//! written after it in the same run.

use secrecy::SecretString;

use crate::base::kv::KvMount;
use crate::gate::{self, Held, Intent};
use crate::report::changes::Followed;
use crate::seed::{self, Outside};
use crate::spec::Target;
use crate::vault::VaultError;
use crate::write::replace::{self, ChangeError};

use super::session::Session;
use super::Failure;

/// The values of `t`'s sources (other secrets its derived fields read), each read on its mount.
async fn outside(session: &Session, t: &Target, assumed: &[String]) -> Result<Outside, Failure> {
    let Some(sources) = &t.sources else {
        return Ok(Outside::default());
    };
    let mut with_mounts: Vec<(crate::spec::Source, KvMount)> = Vec::new();
    for s in sources.iter() {
        let owner = session
            .targets
            .iter()
            .find(|o| *o.mount() == *s.mount && o.path == s.path);
        let Some(owner) = owner else {
            return Err(Failure::new(format!(
                "`{}` reads `{}`, which is not in this environment's specs",
                t.full_path(),
                s.full_path()
            )));
        };
        with_mounts.push((s.clone(), session.mount_for(owner, assumed).await?));
    }
    seed::read_sources(&session.vault, &with_mounts)
        .await
        .map_err(Failure::new)
}

/// The derived fields of `t` that follow `values` (and `also`, derived fields made again
/// whatever changed), made from the values after the change.
pub(super) async fn in_secret(
    session: &Session,
    t: &Target,
    current: &Held,
    values: &[(String, SecretString)],
    also: &[String],
    assumed: &[String],
) -> Result<Vec<(String, SecretString)>, Failure> {
    let needs = !also.is_empty()
        || t.fields.iter().any(|f| {
            f.generator.derived().is_some_and(|d| {
                d.inputs()
                    .iter()
                    .any(|r| r.secret.is_none() && values.iter().any(|(n, _)| *n == r.field))
            })
        });
    if !needs {
        return Ok(Vec::new());
    }
    let outside = outside(session, t, assumed).await?;
    seed::follow(t, &current.fields, values, also, &outside)
        .map_err(|e| Failure::new(format!("`{}`: {e}", t.full_path())))
}

/// After `t`'s fields `changed` were written: every field of another secret made from them,
/// made again and written (with check-and-set), and so on down a chain of copies. Each
/// follower's result, failures too: the change itself is done.
pub(super) async fn others(
    session: &Session,
    t: &Target,
    changed: &[String],
    dry_run: bool,
    assumed: &[String],
) -> Vec<Followed> {
    let mut out = Vec::new();
    let mut work: Vec<(Target, Vec<String>)> = vec![(t.clone(), changed.to_vec())];
    // A chain is as long as the specs' secrets at most (lint forbids cycles); the bound keeps a
    // mistake from running forever.
    let mut budget = session.targets.len() + 1;
    while let Some((source, changed)) = work.pop() {
        if budget == 0 {
            break;
        }
        budget -= 1;
        for (f, fields) in gate::followers_of(&session.targets, &source, &changed) {
            let mut row = Followed {
                path: f.full_path(),
                fields: fields.clone(),
                old_version: None,
                new_version: None,
                error: None,
            };
            if dry_run {
                out.push(row);
                continue;
            }
            match follow_one(session, f, &fields, assumed).await {
                Ok((old, new, all)) => {
                    row.old_version = Some(old);
                    row.new_version = Some(new);
                    row.fields = all.clone();
                    work.push((f.clone(), all));
                }
                Err(why) => row.error = Some(why),
            }
            out.push(row);
        }
    }
    out
}

/// Make `fields` of `f` (and what follows them in `f`) again and write them: the versions
/// before and after, and every field written.
async fn follow_one(
    session: &Session,
    f: &Target,
    fields: &[String],
    assumed: &[String],
) -> Result<(u64, u64, Vec<String>), String> {
    let mount = session.mount_for(f, assumed).await.map_err(|e| e.message)?;
    let current = replace::read_current(&session.vault, &mount, f, &session.env)
        .await
        .map_err(|e| match e {
            ChangeError::Absent { .. } => {
                format!(
                    "not written: absent; `vault-seed apply {}` makes it from the new value",
                    session.env
                )
            }
            other => other.to_string(),
        })?;
    let outside = outside(session, f, assumed).await.map_err(|e| e.message)?;
    let values = seed::follow(f, &current.fields, &[], fields, &outside)?;
    let names: Vec<String> = values.iter().map(|(n, _)| n.clone()).collect();
    let approved = gate::check(f, &current, Intent::Follow, values).map_err(|refused| {
        refused
            .iter()
            .map(|r| format!("not written: {r}"))
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    match replace::write(&session.vault, &mount, f, &current, &approved, "follow").await {
        Ok(v) => Ok((current.version, v, names)),
        Err(ChangeError::Vault(VaultError::CasMismatch { .. })) => Err(format!(
            "changed by someone else meanwhile (version {}); nothing written: `vault-seed rotate {} {}.{}` makes it again",
            current.version, session.env, f.name, fields[0]
        )),
        Err(e) => Err(e.to_string()),
    }
}
