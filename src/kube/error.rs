//! Why a question to the Kubernetes API could not be answered.
//!
//! Each message is one lowercase line naming the thing in backticks; [`KubeError::help`] says
//! what to do, where the user can act.

use std::path::PathBuf;

/// A failure to reach or read the Kubernetes API.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// A kubeconfig file exists but cannot be read or parsed.
    #[error("cannot read kubeconfig `{}`: {}", path.display(), cause(source))]
    ReadKubeconfig {
        /// The file (or `KUBECONFIG`'s value).
        path: PathBuf,
        /// kube-rs' reason.
        source: Box<::kube::config::KubeconfigError>,
    },

    /// The context asked for (`--context` or the spec's `kube_context`) is not in the kubeconfig.
    #[error("context `{context}` is not in kubeconfig `{}`", kubeconfig.display())]
    UnknownContext {
        /// The context name asked for.
        context: String,
        /// Where the kubeconfig came from.
        kubeconfig: PathBuf,
        /// The contexts the kubeconfig does define.
        known: Vec<String>,
    },

    /// No context was asked for and the kubeconfig has no `current-context`.
    #[error("kubeconfig `{}` sets no `current-context`", kubeconfig.display())]
    NoCurrentContext {
        /// Where the kubeconfig came from.
        kubeconfig: PathBuf,
        /// The contexts the kubeconfig does define.
        known: Vec<String>,
    },

    /// The kubeconfig was read but its selected context is unusable (cluster missing, bad URL,
    /// unreadable certificate...).
    #[error("kubeconfig `{}`, context `{context}`: {}", kubeconfig.display(), cause(source))]
    InvalidKubeconfig {
        /// Where the kubeconfig came from.
        kubeconfig: PathBuf,
        /// The context in use.
        context: String,
        /// kube-rs' reason.
        source: Box<::kube::config::KubeconfigError>,
    },

    /// A context was asked for but there is no kubeconfig to find it in.
    #[error("context `{context}` was asked for but no kubeconfig was found (`KUBECONFIG` is unset and `{}` does not exist)", default_path.display())]
    NoKubeconfigForContext {
        /// The context name asked for.
        context: String,
        /// `~/.kube/config`.
        default_path: PathBuf,
    },

    /// Neither a kubeconfig nor an in-cluster service account is available.
    #[error("no Kubernetes configuration: `KUBECONFIG` is unset, `{}` does not exist, and this is not a pod with a service account ({source})", default_path.display())]
    NoConfig {
        /// `~/.kube/config`.
        default_path: PathBuf,
        /// Why the in-cluster configuration cannot be used, from kube-rs.
        source: Box<::kube::config::InClusterError>,
    },

    /// The client could not be built from the configuration (TLS material, proxy).
    #[error("cannot build a Kubernetes client for `{server}`: {source}")]
    Client {
        /// The API server URL.
        server: String,
        /// kube-rs' reason.
        source: Box<::kube::Error>,
    },

    /// The API server did not answer (connection refused, DNS, TLS handshake, timeout).
    #[error("cannot reach the Kubernetes API at `{server}`: {detail}")]
    Unreachable {
        /// The API server URL.
        server: String,
        /// The transport's reason, with its causes.
        detail: String,
    },

    /// The credentials could not be obtained (exec plugin, token file, expired login).
    #[error("cannot get credentials for `{server}`: {source}")]
    Credentials {
        /// The API server URL.
        server: String,
        /// kube-rs' reason.
        source: Box<::kube::client::AuthError>,
    },

    /// The cluster is reached over plain `http://` and its host is not loopback: the credentials
    /// would cross the network in clear. Refused before anything is sent.
    #[error("would send the Kubernetes credentials over plain http:// to `{server}`, which is not loopback")]
    PlainHttp {
        /// The API server URL.
        server: String,
    },

    /// The API server rejected the credentials (HTTP 401).
    #[error("the Kubernetes API at `{server}` rejected the credentials (401): {message}")]
    Unauthorized {
        /// The API server URL.
        server: String,
        /// The server's message.
        message: String,
    },

    /// RBAC denies the request (HTTP 403).
    #[error("forbidden to {verb} `{resource}` `{object}` (403): {message}")]
    Forbidden {
        /// `get`, `list`, `patch`.
        verb: &'static str,
        /// The resource, with its group (`externalsecrets.external-secrets.io`).
        resource: String,
        /// The namespace, none for cluster-scoped resources.
        namespace: Option<String>,
        /// `namespace/name`, or the name alone.
        object: String,
        /// The server's message.
        message: String,
    },

    /// The API server shed the request (HTTP 429): API Priority and Fairness, or its
    /// max-in-flight limit. Its body is plain text, not a Status, so there is no message to quote.
    #[error("the Kubernetes API at `{server}` is overloaded and refused to {verb} `{resource}` `{object}` (429 Too Many Requests)")]
    Throttled {
        /// The API server URL.
        server: String,
        /// `get`, `list`, `patch`.
        verb: &'static str,
        /// The resource, with its group.
        resource: String,
        /// `namespace/name`, or the name alone.
        object: String,
    },

    /// None of the API versions we know for a kind is served: its CRD is not installed.
    #[error("the cluster serves no `{kind}` in `{group}` {}", versions.join(" or "))]
    NotServed {
        /// `ExternalSecret`, `PushSecret`, `SecretStore`, `ClusterSecretStore`.
        kind: &'static str,
        /// `external-secrets.io`.
        group: &'static str,
        /// The versions asked for, in order.
        versions: Vec<&'static str>,
    },

    /// Any other error status from the API server.
    #[error("cannot {verb} `{resource}` `{object}`: {code} {reason}: {message}")]
    Api {
        /// `get`, `list`, `patch`.
        verb: &'static str,
        /// The resource, with its group.
        resource: String,
        /// `namespace/name`, or the name alone.
        object: String,
        /// The HTTP status code.
        code: u16,
        /// The Status object's reason.
        reason: String,
        /// The Status object's message.
        message: String,
    },

    /// The server answered with something we cannot read as that kind.
    #[error("unexpected answer to {verb} `{resource}` `{object}`: {detail}")]
    Decode {
        /// `get`, `list`, `patch`.
        verb: &'static str,
        /// The resource, with its group.
        resource: String,
        /// `namespace/name`, or the name alone.
        object: String,
        /// What was wrong (never the body: it may hold a Secret's values).
        detail: String,
    },

    /// A status field holds a value of the wrong form (a timestamp that is not RFC 3339).
    #[error("`{kind}` `{object}`: field `{field}` is not an RFC 3339 time: `{value}`")]
    BadField {
        /// The object's kind.
        kind: &'static str,
        /// `namespace/name`, or the name alone.
        object: String,
        /// The JSON path of the field.
        field: &'static str,
        /// The value found.
        value: String,
    },
}

impl KubeError {
    /// What the user can do about it; `None` when there is nothing better than the message.
    pub fn help(&self) -> Option<String> {
        Some(match self {
            KubeError::ReadKubeconfig { .. } => {
                "fix the file, or point `--kubeconfig` / `KUBECONFIG` at another one".into()
            }
            KubeError::UnknownContext { known, .. } => format!(
                "known contexts: {}; list them with `kubectl config get-contexts`",
                known_list(known)
            ),
            KubeError::NoCurrentContext { known, .. } => {
                format!("pass `--context` (known contexts: {})", known_list(known))
            }
            KubeError::InvalidKubeconfig { context, .. } => format!(
                "check the context's cluster and user with `kubectl config view --minify --context {context}`"
            ),
            KubeError::NoKubeconfigForContext { .. } => {
                "pass `--kubeconfig` or set `KUBECONFIG`".into()
            }
            KubeError::NoConfig { .. } => "pass `--kubeconfig` or set `KUBECONFIG`".into(),
            KubeError::Client { .. } => {
                "check the cluster's certificate authority and proxy settings in the kubeconfig"
                    .into()
            }
            KubeError::Unreachable { .. } => {
                "check the cluster is up and the context is the right one: `kubectl cluster-info`"
                    .into()
            }
            KubeError::PlainHttp { .. } => {
                "give the cluster its https:// address in the kubeconfig (plain http:// is allowed to loopback only)".into()
            }
            KubeError::Credentials { .. } => "log in to the cluster again, then retry".into(),
            KubeError::Unauthorized { .. } => {
                "log in to the cluster again or check the kubeconfig user".into()
            }
            KubeError::Forbidden {
                verb,
                resource,
                namespace,
                ..
            } => format!(
                "check with `kubectl auth can-i {verb} {resource}{}`",
                ns_flag(namespace)
            ),
            KubeError::Throttled { .. } => {
                "retry in a moment (`verify --wait 2m` keeps asking); if it persists, the cluster's API server is overloaded".into()
            }
            KubeError::NotServed { group, .. } if *group == super::VSO_GROUP => {
                "install the Vault Secrets Operator (its CRDs) or check the context".into()
            }
            KubeError::NotServed { .. } => {
                "install External Secrets Operator (its CRDs) or check the context".into()
            }
            KubeError::Api { .. } | KubeError::Decode { .. } | KubeError::BadField { .. } => {
                return None
            }
        })
    }
}

/// kube-rs' reason, without the path it names again (`failed to read kubeconfig from
/// '"/…/config"'`): the message names the file already.
fn cause(e: &::kube::config::KubeconfigError) -> String {
    match e {
        ::kube::config::KubeconfigError::ReadConfig(io, _) => io.to_string(),
        other => other.to_string(),
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "none".to_string()
    } else {
        known
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn ns_flag(namespace: &Option<String>) -> String {
    match namespace {
        Some(ns) => format!(" -n {ns}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_context_lists_the_known_ones_and_what_to_do() {
        let e = KubeError::UnknownContext {
            context: "prod".into(),
            kubeconfig: PathBuf::from("/tmp/kc"),
            known: vec!["dev".into(), "staging".into()],
        };
        assert_eq!(
            e.to_string(),
            "context `prod` is not in kubeconfig `/tmp/kc`"
        );
        assert_eq!(
            e.help().as_deref(),
            Some("known contexts: `dev`, `staging`; list them with `kubectl config get-contexts`")
        );
    }

    #[test]
    fn forbidden_says_which_can_i_to_run() {
        let e = KubeError::Forbidden {
            verb: "get",
            resource: "secrets".into(),
            namespace: Some("demo".into()),
            object: "demo/app".into(),
            message: "no".into(),
        };
        assert_eq!(
            e.help().as_deref(),
            Some("check with `kubectl auth can-i get secrets -n demo`")
        );
        let cluster = KubeError::Forbidden {
            verb: "get",
            resource: "clustersecretstores.external-secrets.io".into(),
            namespace: None,
            object: "vault".into(),
            message: "no".into(),
        };
        assert!(cluster
            .help()
            .unwrap()
            .ends_with("`kubectl auth can-i get clustersecretstores.external-secrets.io`"));
    }

    #[test]
    fn not_served_names_every_version_tried() {
        let e = KubeError::NotServed {
            kind: "ExternalSecret",
            group: "external-secrets.io",
            versions: vec!["v1", "v1beta1"],
        };
        assert_eq!(
            e.to_string(),
            "the cluster serves no `ExternalSecret` in `external-secrets.io` v1 or v1beta1"
        );
    }
}
