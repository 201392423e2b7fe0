//! Checks of names and paths that several sections use: path segments, Kubernetes names and
//! namespaces.

use super::*;

/// A list of Kubernetes object names (`external_secrets`, `static_secrets`), each checked.
pub(super) fn take_k8s_names(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    key: &'static str,
    ctx: &dyn Display,
) -> Vec<String> {
    cx.take_strings(th, key, ctx)
        .unwrap_or_default()
        .into_iter()
        .filter(|(n, s)| check_k8s_name(cx, n, *s, &format!("an item of `{key}`")))
        .map(|(n, _)| n)
        .collect::<Vec<_>>()
        .kept()
}

pub(crate) const SEGMENT_HELP: &str =
    "use letters, digits, `_`, `-` and `.` (not `.` or `..` alone)";

/// One path segment: `[A-Za-z0-9_.-]+`, not `.` or `..`. Strict on purpose: nothing that could
/// escape a mount, need URL encoding, or confuse a shell.
pub(crate) fn check_segment(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("is empty".into());
    }
    if s == "." || s == ".." {
        return Err("is a relative path segment".into());
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_-.".contains(*c)))
    {
        return Err(format!("contains {}", describe_char(c)));
    }
    if s.len() > 255 {
        return Err("is longer than 255 characters".into());
    }
    Ok(())
}

/// A path of segments separated by single `/`, no leading or trailing `/`.
pub(crate) fn check_path(p: &str) -> Result<(), String> {
    if p.starts_with('/') || p.ends_with('/') {
        return Err("starts or ends with `/`".into());
    }
    if p.contains("//") {
        return Err("contains `//`".into());
    }
    if p.split('/').count() > 32 {
        return Err("is deeper than 32 folders".into());
    }
    p.split('/').try_for_each(check_segment)
}

pub(super) fn describe_char(c: char) -> String {
    match c {
        ' ' => "a space".into(),
        '/' => "`/`".into(),
        c if c.is_control() => format!("a control character (U+{:04X})", c as u32),
        c if is_unshowable(c) => format!("an invisible formatting character (U+{:04X})", c as u32),
        c => format!("`{c}`"),
    }
}

pub(super) const K8S_NAMESPACE_HELP: &str = "a DNS-1123 label: at most 63 lowercase letters, digits and `-`, starting and ending with a letter or digit";

/// A Kubernetes namespace: a DNS-1123 label (k8s.io/apimachinery
/// `pkg/api/validation/generic.go`: `ValidateNamespaceName = NameIsDNSLabel`).
pub(super) fn check_k8s_namespace(n: &str) -> Result<(), String> {
    match crate::kube::names::is_dns1123_label(n) {
        true => Ok(()),
        false => Err("is not a valid Kubernetes namespace name".into()),
    }
}

/// The key `namespace` of a table, a Kubernetes namespace.
pub(super) fn take_k8s_namespace(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &dyn Display,
) -> Option<String> {
    cx.take_checked(
        th,
        "namespace",
        ctx,
        check_k8s_namespace,
        K8S_NAMESPACE_HELP,
    )
}

/// A Kubernetes object name (DNS-1123 subdomain, lowercase).
pub(super) fn check_k8s_name(cx: &mut Cx<'_>, n: &str, span: Span, what: &str) -> bool {
    let ok = crate::kube::names::is_dns1123_subdomain(n);
    if !ok {
        cx.err(span, format!("{what} `{}` is not a valid Kubernetes name", shown(n)), Some("lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit".into()));
    }
    ok
}
