//! vault-seed: bootstrap the Vault secrets a Kubernetes platform needs before its first GitOps
//! sync, from typed specs, idempotently and race-free, and prove the result.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod audit;
mod backticks;
pub mod cli;
pub mod cmd;
pub mod codes;
pub mod digest;
pub mod duration;
pub mod exit;
pub mod failure;
pub mod files;
pub mod gate;
pub mod generate;
pub mod import;
pub mod kube;
pub mod kv;
pub mod layout;
pub mod logging;
pub mod model;
pub mod mounts;
pub mod order;
pub mod redact;
pub mod replace;
pub mod report;
pub mod run;
pub mod seed;
pub mod spec;
pub mod stop;
mod suggest;
pub mod text;
pub mod vault;
pub mod verify;

pub use run::{init_crypto, main};
