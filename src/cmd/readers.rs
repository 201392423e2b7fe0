//! Before `set --force` or `rotate` replaces a real value: name on stderr what reads it
//! ([`crate::verify::readers`]), from the cluster as `verify` finds it. Whatever the cluster
//! answers, or fails to, the command goes on to write: a rotation never depends on the cluster.
//! After `set` fills in a placeholder that had already reached the cluster: the next step,
//! naming its readers and the workloads that keep the placeholder until restarted.

use crate::app::cli::{GlobalArgs, ReadersArgs};
use crate::base::text::for_terminal;
use crate::kube::Cluster;
use crate::order::findings::Severity;
use crate::report::{self, Style};
use crate::spec::Target;
use crate::verify::findings::Coded;
use crate::verify::readers::{self, Readers};
use crate::verify::{cluster, consumers};

/// Find and say the readers of `fields` of `t` in environment `env`; their record for the
/// report. What the cluster named (objects, Secrets, workloads) is cleaned for the terminal.
pub(super) async fn before_replace(
    g: &GlobalArgs,
    args: &ReadersArgs,
    env: &str,
    t: &Target,
    fields: &[String],
) -> Readers {
    let mut found = if args.skip_kube {
        Readers::not_checked("--skip-kube: the cluster was not asked".into())
    } else {
        look(g, args, env, t, fields, false)
            .await
            .unwrap_or_else(|e| Readers::not_checked(e.to_string()))
    };
    let path = t.full_path();
    let said: Vec<_> = found
        .findings(&path, env)
        .iter()
        .map(|f| (f.severity(), f.coded()))
        .collect();
    say(g, &mut found, said);
    found
}

/// [`before_replace`] for `rotate` of `fields`, when one of them holds a value in `current`;
/// else nothing is replaced and the cluster is not asked.
pub(super) async fn before_rotate(
    g: &GlobalArgs,
    args: &ReadersArgs,
    env: &str,
    t: &Target,
    fields: &[String],
    current: &crate::gate::Held,
) -> Readers {
    if fields.iter().any(|f| current.fields.contains_key(f)) {
        before_replace(g, args, env, t, fields).await
    } else {
        Readers::default()
    }
}

/// For `set` filling in a placeholder of `fields` of `t`: its readers, and which of their
/// Secrets exist (the placeholder reached them), and whether to say the next step after the
/// write ([`next_step`]). Nothing is asked, nor said, with `--skip-kube` or when the specs list
/// no reader.
pub(super) async fn for_placeholder(
    g: &GlobalArgs,
    args: &ReadersArgs,
    env: &str,
    t: &Target,
    fields: &[String],
) -> (Readers, bool) {
    if args.skip_kube {
        return (Readers::default(), false);
    }
    match look(g, args, env, t, fields, true).await {
        Ok(found) => (found, true),
        Err(Unasked::NothingListed) => (Readers::default(), false),
        Err(e) => (Readers::not_checked(e.to_string()), true),
    }
}

/// After `set` filled in a placeholder: the next step ([`Readers::next_step`]) on stderr.
pub(super) fn next_step(g: &GlobalArgs, env: &str, found: &mut Readers) {
    let said: Vec<_> = found
        .next_step(env)
        .iter()
        .map(|f| (f.severity(), f.coded()))
        .collect();
    say(g, found, said);
}

/// Why the cluster was not asked, or could not answer.
#[derive(Debug, thiserror::Error)]
enum Unasked {
    /// The specs list no ExternalSecret or VaultStaticSecret: nothing to ask.
    #[error("the specs list no ExternalSecret (`[eso] external_secrets`) or VaultStaticSecret (`[vso] static_secrets`)")]
    NothingListed,
    /// The specs or the cluster failed.
    #[error("{0}")]
    Failed(String),
}

impl From<String> for Unasked {
    fn from(why: String) -> Self {
        Unasked::Failed(why)
    }
}

/// The readers, or why the cluster cannot tell. The specs are loaded again for their `[eso]`
/// and `[vso]` lists, which the command's session does not keep (a second load of a few spec
/// files, paid only before a replacement). With `delivered`, also which of the readers'
/// Secrets exist.
async fn look(
    g: &GlobalArgs,
    args: &ReadersArgs,
    env: &str,
    t: &Target,
    fields: &[String],
    delivered: bool,
) -> Result<Readers, Unasked> {
    let mut set = super::load_specs(g).map_err(|e| format!("the specs: {}", e.message))?;
    let plan = set
        .plan_without_secrets(env, &[])
        .map_err(|e| format!("the specs: {e}"))?;
    // Nothing listed, nothing to ask: no request goes to the cluster.
    let listed = cluster::wanted(&plan, "");
    if listed.external_secrets.is_empty() && listed.static_secrets.is_empty() {
        return Err(Unasked::NothingListed);
    }
    let context = cluster::context_of(&plan, args.cluster.context.as_deref());
    let kubeconfig = args.cluster.kubeconfig.as_deref();
    if let Ok(Some(p)) = Cluster::preflight(kubeconfig, context.as_deref()).await {
        if p.skip_tls_verify {
            report::warn(
                &Style::stderr(g.color),
                &format!(
                    "TLS verification of the Kubernetes API at `{}` is off (insecure-skip-tls-verify in the kubeconfig): anyone on the path can read the cluster credentials",
                    for_terminal(&p.server)
                ),
            );
        }
    }
    let kube = Cluster::connect(kubeconfig, context.as_deref())
        .await
        .map_err(|e| e.to_string())?;
    let wanted = cluster::wanted(&plan, kube.default_namespace());
    let mut found = readers::find(
        &kube,
        &wanted.external_secrets,
        &wanted.static_secrets,
        t,
        fields,
    )
    .await;
    // Which workloads will keep the old value: known now, said once the write is done.
    let secrets = found.secrets();
    if delivered {
        for (ns, name) in &secrets {
            // A Secret that cannot be read is not taken as holding the placeholder.
            if let Ok(Some(_)) = kube.secret_data_change(ns, name).await {
                found.delivered.push((ns.clone(), name.clone()));
            }
        }
    }
    if !secrets.is_empty() {
        match consumers::restarts(&kube, &plan, &secrets).await {
            Ok(r) => found.restarts = r,
            Err(e) => {
                found.restarts_note = Some(crate::base::text::cap(&e.to_string()).into_owned())
            }
        }
    }
    Ok(found)
}

/// After the write (or, with `dry_run`, instead of it): the workloads that will need a
/// restart once ESO or VSO refreshes the Secret they read.
pub(super) fn after_write(g: &GlobalArgs, found: &mut Readers) {
    let said: Vec<_> = found
        .after_write()
        .iter()
        .map(|f| (f.severity(), f.coded()))
        .collect();
    say(g, found, said);
}

/// Each line on stderr, a note or a warning as its severity says; kept with its code for the
/// JSON `findings`.
fn say(g: &GlobalArgs, found: &mut Readers, lines: Vec<(Severity, Coded)>) {
    let style = Style::stderr(g.color);
    for (severity, line) in &lines {
        let message = for_terminal(&line.message);
        match severity {
            Severity::Note => report::say(&format!("{}: {message}", style.help("note"))),
            Severity::Warning | Severity::Error => report::warn(&style, &message),
        }
    }
    found
        .findings
        .extend(lines.into_iter().map(|(_, line)| line));
}
