//! The type a target Secret must have (a spec's `secret_type`, e.g.
//! `kubernetes.io/dockerconfigjson` for an image pull secret): what the operator's object asks
//! for and what the Secret in the cluster is. A pull secret of type `Opaque` holds the right
//! keys and still cannot pull: the kubelet reads only the dockerconfig types.
//!
//! How the operators set the type, from their sources:
//! - VSO v1.4.1, `helpers/secrets.go` `SyncSecret`: with `destination.create: true` the Secret's
//!   type is `destination.type`, else `Opaque`, and a Secret of another type is deleted and made
//!   again (the type is immutable); with `create: false` VSO writes only `data`, never the type.
//! - ESO v2.9.0, `pkg/controllers/externalsecret/externalsecret_controller_template.go`
//!   `ApplyTemplate`: `target.template.type`, when set, becomes the Secret's type; otherwise the
//!   existing Secret keeps its own (a new one is `Opaque`, the API server's default).

use super::findings::{Finding, Severity};

/// A type that is not the spec's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TypeFinding {
    /// The operator's object writes another type: `field` as written (`asks`; VSO's empty
    /// `destination.type` is `Opaque`).
    Asks {
        field: &'static str,
        asks: String,
        want: String,
    },
    /// The Secret in the cluster has another type.
    Secret {
        secret: String,
        has: String,
        want: String,
    },
}

crate::base::codes::codes!(
    TypeFinding,
    TypeFinding {
        Asks => "writes-other-type",
        Secret => "secret-other-type",
    }
);

impl Finding for TypeFinding {
    fn severity(&self) -> Severity {
        Severity::Problem
    }

    fn message(&self) -> String {
        match self {
            TypeFinding::Asks { field, asks, want } => format!(
                "its `{field}` is `{asks}`, but the spec's `secret_type` is `{want}`: set `{field}: {want}`"
            ),
            TypeFinding::Secret { secret, has, want } => format!(
                "Secret `{secret}` is of type `{has}`, not `{want}` (the spec's `secret_type`): a Secret's type cannot change, so it must be made again with the type (the operator does once its object asks for it)"
            ),
        }
    }
}

/// What VSO does with `destination.type`: the type it writes, or `None` when it leaves the type
/// alone (`create: false`).
pub(crate) fn vso_writes(create: bool, destination_type: &str) -> Option<&str> {
    match (create, destination_type) {
        (false, _) => None,
        (true, "") => Some("Opaque"),
        (true, t) => Some(t),
    }
}

/// The findings for a Secret that must be of type `want`: the type the operator's object
/// writes (`asks`, with its field's name; `None` when it leaves the type alone) and the one the
/// Secret has (`has`; `None` when it was not read or does not exist).
pub(crate) fn check(
    want: &str,
    asks: Option<(&'static str, &str)>,
    secret: &str,
    has: Option<&str>,
) -> Vec<TypeFinding> {
    let mut out = Vec::new();
    if let Some((field, asks)) = asks.filter(|(_, a)| *a != want) {
        out.push(TypeFinding::Asks {
            field,
            asks: asks.to_string(),
            want: want.to_string(),
        });
    }
    if let Some(has) = has.filter(|h| *h != want) {
        out.push(TypeFinding::Secret {
            secret: secret.to_string(),
            has: has.to_string(),
            want: want.to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PULL: &str = "kubernetes.io/dockerconfigjson";

    /// VSO's empty `destination.type` with `create: true` is `Opaque`: not done, as is an
    /// Opaque Secret; the right type on both is no finding; `create: false` leaves the type to
    /// the Secret alone.
    #[test]
    fn an_opaque_pull_secret_is_not_done_whoever_made_it() {
        let asks = vso_writes(true, "").map(|a| ("spec.destination.type", a));
        let found = check(PULL, asks, "ask/harbor-pull-secret", Some("Opaque"));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|f| f.severity() == Severity::Problem));
        assert!(found[0]
            .message()
            .contains("`spec.destination.type` is `Opaque`"));
        assert!(found[1]
            .message()
            .contains("Secret `ask/harbor-pull-secret` is of type `Opaque`"));
        let asks = vso_writes(true, PULL).map(|a| ("spec.destination.type", a));
        assert_eq!(check(PULL, asks, "ask/harbor-pull-secret", Some(PULL)), []);
        assert_eq!(vso_writes(false, "Opaque"), None);
        assert_eq!(check(PULL, None, "ask/x", Some(PULL)), []);
    }
}

#[cfg(test)]
mod documented {
    use super::*;

    #[test]
    fn every_code_is_in_errors_md() {
        crate::base::codes::assert_documented(
            "verify kube: Secret types",
            &TypeFinding::codes(),
            &TypeFinding::all_codes(),
        );
    }
}
