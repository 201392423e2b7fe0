//! The `[environments]` section: each environment's settings and its secrets' overrides.

use super::*;

pub(super) type EnvEntry = (Environment, BTreeMap<String, Written>);

/// An environment's override of one secret, and where it and its fields are written.
pub(super) struct Written {
    /// The secret's name in `[environments.ENV.secrets]`.
    pub span: Span,
    /// The value of each field it gives, by the field's name.
    pub fields: HashMap<String, Span>,
    /// The override.
    pub ov: SecretOverride,
}

#[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
pub(super) fn parse_environments(cx: &mut Cx<'_>, v: Value<'_>) -> BTreeMap<String, EnvEntry> {
    let span = v.span;
    let before = cx.diags.len();
    let mut out = BTreeMap::new();
    for (key, mut val) in cx.entries(v, &"`[environments]`") {
        let name = key.name.to_string();
        let ctx = format!("`[environments.{name}]`");
        if let Err(why) = check_segment(&name) {
            cx.err(
                key.span,
                format!("environment name `{}` {why}", shown(&name)),
                Some(SEGMENT_HELP.into()),
            );
            continue;
        }
        let Some(mut th) = cx.table(&mut val, &ctx) else {
            continue;
        };
        let vault_addr = cx
            .take_string(&mut th, "vault_addr", &ctx)
            .and_then(|(a, s)| match check_addr(&a) {
                Ok(()) => Some(a),
                Err(why) => {
                    cx.err(
                        s,
                        format!("`vault_addr` `{a}` {why}"),
                        Some("e.g. `vault_addr = \"https://vault.example.internal\"`".into()),
                    );
                    None
                }
            });
        let vault_namespace = cx.take_checked(
            &mut th,
            "vault_namespace",
            &ctx,
            check_namespace,
            NAMESPACE_HELP,
        );
        let kube_context = cx.take_checked(
            &mut th,
            "kube_context",
            &ctx,
            check_context,
            "the name of a context in your kubeconfig (`kubectl config get-contexts`)",
        );
        let kube_namespace = cx.take_checked(
            &mut th,
            "kube_namespace",
            &ctx,
            check_k8s_namespace,
            K8S_NAMESPACE_HELP,
        );
        let cluster_vault_addrs = take_cluster_vault_addrs(cx, &mut th, &ctx);
        let overrides = match th.take("secrets") {
            Some((_, ov)) => parse_overrides(cx, ov, &name),
            None => BTreeMap::new(),
        };
        cx.finish(th, &ctx);
        out.insert(
            name.clone(),
            (
                Environment {
                    name,
                    vault_addr,
                    vault_namespace,
                    kube_context,
                    kube_namespace,
                    cluster_vault_addrs,
                    overrides: BTreeMap::new(),
                },
                overrides,
            ),
        );
    }
    if out.is_empty()
        && !cx.diags[before..]
            .iter()
            .any(|d| d.message.contains("environment"))
    {
        cx.err(
            span,
            "`[environments]` is empty",
            Some("add at least one, e.g. `[environments.auh1-dev]`".into()),
        );
    }
    out
}

/// `cluster_vault_addr`: one address or a list, each a Vault address as the cluster's operators
/// use it. Plain `http://` is fine here: the address is only compared, never connected to.
fn take_cluster_vault_addrs(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &dyn Display,
) -> Vec<String> {
    const KEY: &str = "cluster_vault_addr";
    const HELP: &str = "the address ESO and VSO use inside the cluster, e.g. `cluster_vault_addr = \"http://vault.vault.svc:8200\"` (or a list of them)";
    let Some((_, mut v)) = th.take(KEY) else {
        return Vec::new();
    };
    let span = v.span;
    let items: Vec<(String, Span)> = match v.take() {
        ValueInner::String(s) => vec![(s.to_string(), span)],
        ValueInner::Array(items) => items
            .into_iter()
            .filter_map(|mut item| {
                let s = item.span;
                cx.string(&mut item, || format!("an item of `{KEY}` in {ctx}"))
                    .map(|v| (v.into_owned(), s))
            })
            .collect(),
        other => {
            cx.err(
                span,
                format!(
                    "`{KEY}` in {ctx} must be a string or a list of strings, found {}",
                    other.type_str()
                ),
                Some(HELP.into()),
            );
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (addr, span) in items {
        let checked = match addr.chars().any(char::is_whitespace) {
            true => Err("contains whitespace".to_string()),
            false => crate::vault::address::parse(&addr, true)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        };
        match checked {
            Ok(()) => out.push(addr),
            Err(why) => cx.err(
                span,
                format!("`{KEY}` `{}` {why}", shown(&addr)),
                Some(HELP.into()),
            ),
        }
    }
    out
}

pub(super) fn parse_overrides(
    cx: &mut Cx<'_>,
    v: Value<'_>,
    env: &str,
) -> BTreeMap<String, Written> {
    let mut out = BTreeMap::new();
    for (key, mut val) in cx.entries(v, &format!("`[environments.{env}.secrets]`")) {
        let name = key.name.to_string();
        let ctx = format!("`[environments.{env}.secrets.{}]`", shown(&name));
        let Some(mut th) = cx.table(&mut val, &ctx) else {
            continue;
        };
        let skip = cx.take_bool(&mut th, "skip", &ctx).unwrap_or(false);
        let (fields, spans) = match th.take("fields") {
            Some((_, f)) => parse_fields(cx, f, &ctx),
            None => (Vec::new(), Vec::new()),
        };
        cx.finish(th, &ctx);
        let written = Written {
            span: key.span,
            fields: fields.iter().map(|f| f.name.clone()).zip(spans).collect(),
            ov: SecretOverride {
                skip,
                fields: fields.into_iter().map(|f| (f.name, f.generator)).collect(),
            },
        };
        out.insert(name, written);
    }
    out
}

/// A kubeconfig context name: any text (contexts are free-form, e.g. an EKS ARN), but not empty
/// and nothing that acts on a terminal when it is shown.
pub(super) fn check_context(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = name.chars().find(|&c| is_unshowable(c)) {
        return Err(format!("contains {}", describe_char(c)));
    }
    if name.trim() != name {
        return Err("starts or ends with whitespace".into());
    }
    Ok(())
}
