//! The `[argocd]` section: the Argo CD Application that consumes the secrets.

use super::*;

/// `[argocd]`: Argo CD's namespace (default `argocd`), the secrets app and its consumers. Each
/// Application name, with `{env}` replaced by every environment's name, must be a Kubernetes
/// object name (Argo CD's `metadata.name`: a DNS-1123 subdomain).
pub(super) fn parse_argocd(
    cx: &mut Cx<'_>,
    mut v: Value<'_>,
    environments: &BTreeMap<String, EnvEntry>,
) -> Option<Argocd> {
    const CTX: &str = "`[argocd]`";
    let table_span = v.span;
    let mut th = cx.table(&mut v, &CTX)?;
    let before = cx.diags.len();
    let namespace = take_k8s_namespace(cx, &mut th, &CTX);
    let app_name = |cx: &mut Cx<'_>, name: &str, span: Span, what: &str| {
        if environments.is_empty() || !name.contains(ENV_PLACEHOLDER) {
            return check_k8s_name(cx, name, span, what);
        }
        environments.keys().all(|env| {
            check_k8s_name(
                cx,
                &name.replace(ENV_PLACEHOLDER, env),
                span,
                &format!("{what} in environment `{env}`"),
            )
        })
    };
    let secrets_app = match cx.take_string(&mut th, "secrets_app", &CTX) {
        Some((name, span)) => app_name(cx, &name, span, "`secrets_app`").then_some(name),
        None => {
            if !th.contains("secrets_app") {
                cx.err(
                    table_span,
                    "missing key `secrets_app` in `[argocd]`",
                    Some("the Argo CD Application that creates the ExternalSecrets, e.g. `secrets_app = \"core-service-secrets\"`".into()),
                );
            }
            None
        }
    };
    let mut consumers = Vec::new();
    for (name, span) in cx
        .take_strings(&mut th, "consumers", &CTX)
        .unwrap_or_default()
    {
        if !app_name(cx, &name, span, "an item of `consumers`") {
            continue;
        }
        if secrets_app.as_deref() == Some(name.as_str()) {
            cx.err(
                span,
                format!("`{}` is the secrets app and one of its consumers", shown(&name)),
                Some("a consumer is an Application that reads the secrets and must sync after the secrets app".into()),
            );
        } else if consumers.contains(&name) {
            cx.err(
                span,
                format!("consumer `{}` is listed twice", shown(&name)),
                Some("list each Application once".into()),
            );
        } else {
            consumers.push(name);
        }
    }
    cx.finish(th, &CTX);
    if cx.diags.len() > before {
        return None;
    }
    Some(Argocd {
        namespace: namespace.unwrap_or_else(|| "argocd".into()),
        secrets_app: secrets_app?,
        consumers,
    })
}
