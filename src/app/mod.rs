//! The entry layer: the command line ([`cli`]) and the run that parses it, calls a command and
//! prints its report or failure once ([`run`]). Nothing below imports it, but for the
//! arguments' types the commands take.

pub mod cli;
pub mod run;
