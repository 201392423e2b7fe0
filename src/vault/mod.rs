//! Vault (and OpenBao): connection settings, the HTTP client, KV operations and system endpoints.
//!
//! Everything that talks to Vault lives here: the address is parsed once ([`address`]), the
//! HTTP client is built and requests are sent in `client`, the token added from a `SecretString`
//! in a sensitive header.

pub mod address;
mod client;
pub mod connect;
mod error;
pub mod kv;
pub mod login;
pub mod sys;
pub mod token;

pub use client::{Vault, MAX_BODY, MAX_RETRIES};
pub use connect::{ConnectOptions, Settings};
pub use error::VaultError;
pub use kv::{Existing, FieldValue, Present, WriteFields};
pub use sys::{MountInfo, TokenInfo};
pub use token::{ProbeToken, RoleTokens};
