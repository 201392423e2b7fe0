//! The `[eso]` section: the SecretStore, the policies and auth role ESO reads with.

use super::*;

pub(super) fn parse_eso(cx: &mut Cx<'_>, mut v: Value<'_>) -> Option<Eso> {
    const CTX: &str = "`[eso]`";
    let mut th = cx.table(&mut v, &CTX)?;
    let namespace = take_k8s_namespace(cx, &mut th, &CTX);
    let external_secrets = take_k8s_names(cx, &mut th, "external_secrets", &CTX);
    let push_secrets = take_k8s_names(cx, &mut th, "push_secrets", &CTX);
    let (policies, auth_role) = take_policies_and_role(cx, &mut th, CTX, "ESO", "eso");
    let access = match cx.take_strings(&mut th, "access", &CTX) {
        Some(items) => {
            let mut a = EsoAccess {
                read: false,
                push: false,
                list: false,
            };
            for (item, span) in items {
                match item.as_str() {
                    "read" => a.read = true,
                    "push" => a.push = true,
                    "list" => a.list = true,
                    other => cx.err(span, format!("unknown ESO access `{}`", shown(other)), Some("one of `read` (ExternalSecret), `push` (PushSecret), `list` (dataFrom.find)".into())),
                }
            }
            a
        }
        None => EsoAccess::default(),
    };
    cx.finish(th, &CTX);
    Some(Eso {
        namespace,
        external_secrets,
        push_secrets,
        policies,
        auth_role,
        access,
    })
}

/// A list a spec keeps for the whole run, at its length: collected in place from a list of
/// (text, span), it kept that list's larger allocation (100 bytes a list, three lists a spec).
pub(super) trait Kept {
    fn kept(self) -> Self;
}

impl<T> Kept for Vec<T> {
    fn kept(mut self) -> Self {
        self.shrink_to_fit();
        self
    }
}

/// `policies`, `auth_mount` and `auth_role` of `[eso]` or `[vso]` (`who` names the operator,
/// `role_example` a typical role name).
pub(super) fn take_policies_and_role(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &'static str,
    who: &str,
    role_example: &str,
) -> (Vec<String>, Option<AuthRole>) {
    // Policy and role names go into request paths (`sys/policies/acl/<name>`,
    // `auth/<mount>/role/<name>`): one plain segment each, as vault-seed's own names.
    let policies: Vec<String> = cx
        .take_strings(th, "policies", &ctx)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(p, span)| match check_segment(&p) {
            Ok(()) => Some(p),
            Err(why) => {
                cx.err(
                    span,
                    format!("an item of `policies` `{}` {why}", shown(&p)),
                    Some(format!("a Vault policy's name; {SEGMENT_HELP}")),
                );
                None
            }
        })
        .collect::<Vec<_>>()
        .kept();
    let auth_mount = cx.take_checked(
        th,
        "auth_mount",
        &ctx,
        check_path,
        &format!("the path of {who}'s auth method under `auth/`, e.g. `kubernetes`"),
    );
    let auth_role = cx
        .take_checked(
            th,
            "auth_role",
            &ctx,
            check_segment,
            &format!("the name of {who}'s role in that auth method, e.g. `{role_example}`"),
        )
        .map(|name| AuthRole {
            mount: auth_mount.clone().unwrap_or_else(|| "kubernetes".into()),
            name,
        });
    (policies, auth_role)
}
