//! The `[vso]` section: Vault Secrets Operator's policies and auth role.

use super::*;

/// `[vso]`: the Vault Secrets Operator's VaultStaticSecrets, policies and auth role.
pub(super) fn parse_vso(cx: &mut Cx<'_>, mut v: Value<'_>) -> Option<Vso> {
    const CTX: &str = "`[vso]`";
    let mut th = cx.table(&mut v, &CTX)?;
    let namespace = take_k8s_namespace(cx, &mut th, &CTX);
    let static_secrets = take_k8s_names(cx, &mut th, "static_secrets", &CTX);
    let (policies, auth_role) = take_policies_and_role(cx, &mut th, CTX, "VSO", "vso");
    cx.finish(th, &CTX);
    Some(Vso {
        namespace,
        static_secrets,
        policies,
        auth_role,
    })
}
