//! `vault-seed audit ENV`: what the specs no longer describe. The engine is `audit/`; this
//! opens the session as `verify` does (specs, connection, login, token check with the mount
//! detection) and turns the arguments into a [`Request`].

use crate::app::cli::{AuditArgs, GlobalArgs};
use crate::audit::{self, KubeTarget, Request};
use crate::report::auditing::AuditReport;
use crate::spec::mounts::{self, MountTrust};

use super::session::Session;
use super::Failure;

pub(super) fn run(g: &GlobalArgs, args: &AuditArgs) -> Result<AuditReport, Failure> {
    let ignore = audit::Ignore::new(args.ignore.clone()).map_err(|e| {
        Failure::usage(e).help("a Vault path as MOUNT/PATH or an object as `KIND NAMESPACE/NAME`, `*` any run of characters")
    })?;
    let set = super::load_specs(g)?;
    // What "a spec names" means: every spec, every environment.
    let named = audit::named_targets(&set);
    let plan = set.plan(&args.env, &[])?;
    let req = Request {
        concurrency: usize::from(args.concurrency),
        max_scan_requests: args.max_scan_requests as usize,
        mount_scan: !args.skip_mount_scan,
        kube: (!args.skip_kube).then(|| KubeTarget {
            kubeconfig: args.cluster.kubeconfig.clone(),
            context: args.cluster.context.clone(),
        }),
        ignore,
    };
    let runtime = super::runtime()?;
    if let Some(kube) = &req.kube {
        let context = audit::cluster::context(&plan, kube);
        runtime.block_on(super::verify::cluster_preflight(
            g,
            kube.kubeconfig.as_deref(),
            context.as_deref(),
        ))?;
    }
    let session = Session::from_plan(g, &plan, &args.vault)?;
    runtime.block_on(async {
        session.announce("audit");
        let vault = &session.vault;
        let detected = session
            .checked(mounts::detect(vault, &plan.targets, MountTrust::Read))
            .await?;
        let found = audit::run(vault, &plan, &named, &detected, &req).await;
        Ok(AuditReport(found))
    })
}
