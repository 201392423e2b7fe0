//! vault-seed: bootstrap the Vault secrets a Kubernetes platform needs before its first GitOps
//! sync, from typed specs, idempotently and race-free, and prove the result.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod app;
pub mod audit;
pub mod base;
pub mod cmd;
pub mod gate;
pub mod generate;
pub mod kube;
pub mod model;
pub mod order;
pub mod report;
pub mod seed;
pub mod spec;
pub mod vault;
pub mod verify;
pub mod write;

pub use app::run::{init_crypto, main};
