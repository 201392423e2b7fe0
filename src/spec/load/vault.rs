//! The `[vault]` section: mount, path, KV version, address and namespace, and the checks of
//! a mount and folder that keep writes inside a KV engine.

use super::*;

pub(super) fn parse_vault(cx: &mut Cx<'_>, mut v: Value<'_>) -> Option<(VaultTarget, Span)> {
    const CTX: &str = "`[vault]`";
    let mut th = cx.table(&mut v, &CTX)?;
    let mount = cx.take_string(&mut th, "mount", &CTX);
    let path = cx.take_string(&mut th, "path", &CTX);
    let kv = cx.take_int(&mut th, "kv_version", &CTX);
    let table_span = v.span;
    if mount.is_none() && !th.contains("mount") {
        cx.err(
            table_span,
            "missing key `mount` in `[vault]`",
            Some("the KV engine's mount, e.g. `mount = \"secret\"`".into()),
        );
    }
    if path.is_none() && !th.contains("path") {
        cx.err(
            table_span,
            "missing key `path` in `[vault]`",
            Some("the folder under the mount, e.g. `path = \"ask/core-service/{env}\"`".into()),
        );
    }
    cx.finish(th, &CTX);
    let kv_version = match kv {
        Some((n, span)) => KvVersion::from_number(n).or_else(|| {
            cx.err(
                span,
                format!("`kv_version` must be 1 or 2, not {n}"),
                Some("leave it out to detect the mount's version".into()),
            );
            None
        }),
        None => None,
    };
    let (mount, mount_span) = mount?;
    let (path, path_span) = path?;
    let mut ok = true;
    if let Err(why) = check_path(&mount) {
        cx.err(
            mount_span,
            format!("mount `{}` {why}", shown(&mount)),
            Some("write the mount without slashes, e.g. `mount = \"secret\"`".into()),
        );
        ok = false;
    } else if let Err((why, help)) = check_kv_mount(&mount) {
        cx.err(mount_span, format!("mount `{mount}` {why}"), Some(help));
        ok = false;
    }
    if let Err(why) = check_path(&path.replace(ENV_PLACEHOLDER, "env")) {
        cx.err(
            path_span,
            format!("path template `{}` {why}", shown(&path)),
            Some(format!(
                "e.g. `path = \"ask/core-service/{ENV_PLACEHOLDER}\"`; {SEGMENT_HELP}"
            )),
        );
        ok = false;
    }
    let leftover = path.replace(ENV_PLACEHOLDER, "");
    if leftover.contains('{') || leftover.contains('}') {
        cx.err(
            path_span,
            format!(
                "path template `{}` has an unknown placeholder",
                shown(&path)
            ),
            Some(format!("only `{ENV_PLACEHOLDER}` is replaced")),
        );
        ok = false;
    }
    ok.then_some((
        VaultTarget {
            mount: mount.into(),
            path,
            kv_version,
        },
        path_span,
    ))
}

/// OpenBao's API prefixes that are not secrets engines, and what is behind each. From openbao
/// `internal/vault/mount.go` (`protectedMounts`: nothing can be mounted under them) and
/// `internal/vault/routing/routing.go` (`CredentialRoutePrefix`, `MountPath*`).
pub(super) const API_PREFIXES: [(&str, &str); 5] = [
    ("auth", "auth methods: users, roles and their policies"),
    ("sys", "the system backend: policies, mounts, seal"),
    ("identity", "the identity store: entities and groups"),
    ("cubbyhole", "the token's private store"),
    ("audit", "audit devices"),
];

/// KV v2's endpoints that take a path after them (openbao `internal/builtin/logical/kv/`:
/// `path_data.go`, `path_metadata.go`, `path_delete.go`, `path_destroy.go`, `path_subkeys.go`).
/// vault-seed adds `data/` and `metadata/` itself; a mount or folder that names one reaches
/// another path's endpoint (`destroy/` erases versions for good).
pub(super) const KV2_ENDPOINTS: [&str; 7] = [
    "data",
    "metadata",
    "detailed-metadata",
    "delete",
    "undelete",
    "destroy",
    "subkeys",
];

/// A mount must be a secrets engine's mount: no segment is one of OpenBao's API prefixes (any
/// segment, since a request path may begin with a namespace, and OpenBao reserves the same names
/// for namespaces: `internal/helper/namespace/namespace.go`, `reservedNames`; in any case,
/// though OpenBao's paths are case-sensitive, so that `Sys` is refused too), and no segment after
/// the first is a KV v2 endpoint (`secret/data` is `secret`'s data endpoint, not a mount).
pub(super) fn check_kv_mount(mount: &str) -> Result<(), (String, String)> {
    for (i, seg) in mount.split('/').enumerate() {
        if let Some((prefix, what)) = API_PREFIXES
            .iter()
            .find(|(p, _)| p.eq_ignore_ascii_case(seg))
        {
            return Err((
                format!("reaches OpenBao's `{prefix}/` API ({what}), not a KV secrets engine"),
                "vault-seed writes only to KV secrets engines: give the KV mount's path, e.g. `mount = \"secret\"`".into(),
            ));
        }
        if i > 0 && KV2_ENDPOINTS.contains(&seg) {
            return Err((
                format!("has the segment `{seg}`, a KV v2 endpoint: requests would reach another path's `{seg}/` endpoint"),
                "give the mount alone, e.g. `mount = \"secret\"`: vault-seed adds `data/` and `metadata/` itself".into(),
            ));
        }
    }
    Ok(())
}

/// The folder's first segment, in each environment, must not be a KV v2 endpoint: on a KV v1
/// mount, or on a mount that is not what the spec says, a write to `<mount>/destroy/...` would
/// erase another secret's versions.
pub(super) fn check_kv_endpoint_folder<'a>(
    cx: &mut Cx<'_>,
    template: &str,
    span: Span,
    envs: impl Iterator<Item = &'a String>,
) {
    let first = template.split('/').next().unwrap_or_default();
    let help = "rename the folder: where the mount is KV v1, or not what the spec says, writes there reach a KV v2 endpoint (`destroy/` erases versions)";
    if !first.contains(ENV_PLACEHOLDER) {
        if KV2_ENDPOINTS.contains(&first) {
            cx.err(
                span,
                format!(
                    "path template `{}` starts with `{first}`, a KV v2 endpoint",
                    shown(template)
                ),
                Some(help.into()),
            );
        }
        return;
    }
    for env in envs {
        let seg = first.replace(ENV_PLACEHOLDER, env);
        if KV2_ENDPOINTS.contains(&seg.as_str()) {
            cx.err(
                span,
                format!(
                    "path `{}` of environment `{env}` starts with `{seg}`, a KV v2 endpoint",
                    shown(&template.replace(ENV_PLACEHOLDER, env))
                ),
                Some(help.into()),
            );
        }
    }
}

/// The characters and names OpenBao refuses in a namespace path (openbao
/// `internal/helper/namespace/namespace.go`: `reservedNames`; `Validate`: no spaces, no
/// non-graphic characters, no `+` or `*`).
pub(super) const RESERVED_NAMESPACES: [&str; 8] = [
    ".",
    "..",
    "root",
    "sys",
    "audit",
    "auth",
    "cubbyhole",
    "identity",
];

pub(super) const NAMESPACE_HELP: &str = "an OpenBao namespace path such as `platform` or `platform/team-a`: segments of visible ASCII without `+` or `*`, none of them `root`, `sys`, `audit`, `auth`, `cubbyhole`, `identity`, `.` or `..`";

/// An OpenBao namespace path, as `X-Vault-Namespace` carries it: segments separated by `/` (one
/// trailing `/` allowed, as OpenBao adds one), each by OpenBao's rules. Stricter than OpenBao in
/// one way: ASCII only, since an HTTP header value is visible ASCII.
pub(super) fn check_namespace(ns: &str) -> Result<(), String> {
    if ns.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = ns
        .chars()
        .find(|c| !c.is_ascii_graphic() || matches!(c, '+' | '*'))
    {
        return Err(format!("contains {}", describe_char(c)));
    }
    for seg in ns.strip_suffix('/').unwrap_or(ns).split('/') {
        if seg.is_empty() {
            return Err("has an empty segment".into());
        }
        if RESERVED_NAMESPACES.contains(&seg) {
            return Err(format!("has the reserved segment `{seg}`"));
        }
    }
    Ok(())
}

/// The address as `apply` will parse it (plain http off loopback is decided at run time, where
/// `--insecure-http` is known).
pub(super) fn check_addr(a: &str) -> Result<(), String> {
    if a.chars().any(|c| c.is_whitespace()) {
        return Err("contains whitespace".into());
    }
    crate::vault::address::parse(a, true)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
