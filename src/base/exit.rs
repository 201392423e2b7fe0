//! Process exit codes, documented in the README (exit codes) and tested here.

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked for is done and valid (pending placeholders allowed).
    Success,
    /// The run completed but something is not right: an invalid or denied path, a failed request,
    /// a policy gap, an ExternalSecret not Ready, an unreachable or sealed server.
    Failure,
    /// The command was not understood, a spec is invalid, or the request was refused (a value in
    /// the wrong format, a `fixed` secret): nothing was sent, or nothing was written.
    Usage,
}

impl Exit {
    /// The numeric code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failure => 1,
            Exit::Usage => 2,
        }
    }

    /// Success when `ok`, else failure.
    pub fn of(ok: bool) -> Exit {
        if ok {
            Exit::Success
        } else {
            Exit::Failure
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(Exit::Success.code(), 0);
        assert_eq!(Exit::Failure.code(), 1);
        assert_eq!(Exit::Usage.code(), 2);
    }

    #[test]
    fn a_report_is_success_exactly_when_ok() {
        assert_eq!(Exit::of(true), Exit::Success);
        assert_eq!(Exit::of(false), Exit::Failure);
    }
}
