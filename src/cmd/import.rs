//! `vault-seed import ENV`: copy into Vault the values components wrote to Kubernetes Secrets
//! (`from_secret` fields). The engine is [`crate::write::import`].

use crate::app::cli::{GlobalArgs, ImportArgs};
use crate::kube::Cluster;
use crate::report::imports::{ImportNote, ImportReport};
use crate::seed::notes::SeedNote;
use crate::spec::mounts::{self, MountTrust};
use crate::spec::Target;
use crate::verify::cluster::context_of;
use crate::write::import::{self, Request};

use super::session::Session;
use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &ImportArgs) -> Result<ImportReport, Failure> {
    let a = &args.common;
    let mut set = super::load_specs(g)?;
    let plan = set.plan_without_secrets(&a.env, &a.only)?;
    // Only the paths with a `from_secret` field are read, checked and written.
    let targets: Vec<Target> = plan
        .targets
        .iter()
        .filter(|t| import::imports_into(t))
        .cloned()
        .collect();
    if targets.is_empty() {
        return Ok(ImportReport::new(
            a.env.clone(),
            args.dry_run,
            Vec::new(),
            &[ImportNote::NothingToImport { env: a.env.clone() }],
        ));
    }
    let context = context_of(&plan, args.cluster.context.as_deref());
    let kubeconfig = args.cluster.kubeconfig.as_deref();
    let runtime = super::runtime()?;
    runtime.block_on(super::verify::cluster_preflight(
        g,
        kubeconfig,
        context.as_deref(),
    ))?;
    let session = Session::from_plan(g, &plan, &a.vault)?;
    runtime.block_on(async {
        session.announce("import");
        let vault = &session.vault;
        let detected = session
            .checked(mounts::detect(
                vault,
                &targets,
                MountTrust::Write {
                    assumed: &a.assume_kv_mount,
                },
            ))
            .await?;
        let cluster = Cluster::connect(kubeconfig, context.as_deref())
            .await
            .map_err(Failure::from)?;
        let req = Request {
            force: args.force,
            dry_run: args.dry_run,
        };
        let rows = import::run(vault, &cluster, &detected, &targets, req).await;
        Ok(ImportReport::new(
            a.env.clone(),
            args.dry_run,
            rows,
            &detected
                .notes
                .iter()
                .map(|m| ImportNote::Seeding(SeedNote::MountAssumed(m.clone())))
                .collect::<Vec<_>>(),
        ))
    })
}
