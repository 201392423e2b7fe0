//! The bottom layer: small pieces every other layer may use and that use nothing above them.
//! Why a command stopped ([`failure`]) and its exit code ([`exit`]); the one policy for outside
//! text ([`text`]) and for secrets registered for redaction ([`redact`]); stop signals
//! ([`stop`]); KV's vocabulary ([`kv`]); credential files, durations, digests, logging and the
//! "did you mean" of a misspelt name.

pub(crate) mod backticks;
pub mod codes;
pub mod digest;
pub mod duration;
pub mod exit;
pub mod failure;
pub mod files;
pub mod interned;
pub mod kv;
pub mod logging;
pub mod redact;
pub mod stop;
pub(crate) mod suggest;
pub mod text;
