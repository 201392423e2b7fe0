//! Writes to secrets that exist, beside `plan`/`apply`'s engine ([`crate::seed`]): the field
//! picked, the current version read and the gate's approved write sent ([`replace`], for `set`,
//! `rotate` and follow-ups); `import`'s copy from a Kubernetes Secret ([`import`]). What may be
//! written is [`crate::gate`]'s to decide.

pub mod import;
pub mod replace;
