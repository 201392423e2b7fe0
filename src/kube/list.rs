//! Every ExternalSecret or VaultStaticSecret of a namespace (`audit` looks for those reading a
//! path no spec names). An object whose shape cannot be read is named with why, never dropped
//! and never taken as fine.

use ::kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use ::kube::core::ErrorResponse;

use super::status::{self, ExternalSecretInfo};
use super::vso::{self, VaultStaticSecretInfo, VAULT_STATIC_SECRET, VSO_GROUP, VSO_VERSION};
use super::{Cluster, KubeError, Op, EXTERNAL_SECRET};
use crate::base::text::cap;

/// One listed object: read, or its name and why it could not be read.
pub type Listed<T> = Result<T, Unreadable>;

/// An object of a list whose shape vault-seed cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// `namespace/name` as the object gives it (capped).
    pub object: String,
    /// Why (capped).
    pub why: String,
}

impl Cluster {
    /// Every ExternalSecret in `ns`, trying ESO's versions in order; `NotServed` when the cluster
    /// serves none of them.
    pub async fn external_secrets_in(
        &self,
        ns: &str,
    ) -> Result<Vec<Listed<ExternalSecretInfo>>, KubeError> {
        let kind = EXTERNAL_SECRET;
        for &version in kind.versions {
            let ar = ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(super::ESO_GROUP, version, kind.kind),
                kind.plural,
            );
            match self.list_in(ns, &ar, kind.plural, super::ESO_GROUP).await? {
                Some(items) => {
                    let api_version = ar.api_version.clone();
                    return Ok(items
                        .iter()
                        .map(|o| {
                            status::external_secret_info(o, &api_version)
                                .map_err(|e| unreadable(o, ns, &e.to_string()))
                        })
                        .collect());
                }
                None if self.serves(super::ESO_GROUP, kind.plural, version).await? => {
                    return Ok(Vec::new())
                }
                None => continue,
            }
        }
        Err(KubeError::NotServed {
            kind: kind.kind,
            group: super::ESO_GROUP,
            versions: kind.versions.to_vec(),
        })
    }

    /// Every VaultStaticSecret in `ns`; `NotServed` when the cluster does not serve the kind.
    pub async fn vault_static_secrets_in(
        &self,
        ns: &str,
    ) -> Result<Vec<Listed<VaultStaticSecretInfo>>, KubeError> {
        let kind = VAULT_STATIC_SECRET;
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(VSO_GROUP, VSO_VERSION, kind.kind),
            kind.plural,
        );
        match self.list_in(ns, &ar, kind.plural, VSO_GROUP).await? {
            Some(items) => Ok(items
                .iter()
                .map(|o| {
                    vso::vault_static_secret_info(o).map_err(|e| unreadable(o, ns, &e.to_string()))
                })
                .collect()),
            None if self.serves(VSO_GROUP, kind.plural, VSO_VERSION).await? => Ok(Vec::new()),
            None => Err(KubeError::NotServed {
                kind: kind.kind,
                group: VSO_GROUP,
                versions: vec![VSO_VERSION],
            }),
        }
    }

    /// The objects of `ar` in `ns` as JSON; `None` on a 404 (the kind may not be served).
    async fn list_in(
        &self,
        ns: &str,
        ar: &ApiResource,
        plural: &str,
        group: &str,
    ) -> Result<Option<Vec<serde_json::Value>>, KubeError> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, ar);
        let op = || Op {
            verb: "list",
            resource: format!("{plural}.{group}"),
            namespace: Some(ns),
            name: "",
        };
        match api.list(&ListParams::default()).await {
            Ok(list) => list
                .items
                .iter()
                .map(|o| {
                    serde_json::to_value(o).map_err(|e| self.decode_error(&op(), e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Err(::kube::Error::Api(ErrorResponse { code: 404, .. })) => Ok(None),
            Err(e) => Err(self.error(e, op())),
        }
    }
}

/// The name of an object that could not be read, and why; both capped (cluster text).
fn unreadable(obj: &serde_json::Value, ns: &str, why: &str) -> Unreadable {
    let name = obj
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("(no name)");
    Unreadable {
        object: cap(&format!("{ns}/{name}")).into_owned(),
        why: cap(why).into_owned(),
    }
}
