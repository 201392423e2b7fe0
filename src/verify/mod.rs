//! `verify`'s checks beyond Vault's own values: ESO's policy, and ESO's objects in Kubernetes.

pub mod eso;
pub mod grants;
