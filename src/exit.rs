//! Process exit codes, documented in the README and tested here.

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked for is done and valid (pending placeholders allowed).
    Success,
    /// The run completed but something is not right: an invalid or denied path, a failed request,
    /// a policy gap, an ExternalSecret not Ready, an unreachable or sealed server.
    Failure,
    /// The command was not understood or a spec is invalid: nothing was sent to any server.
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

    /// The worse of two outcomes (usage beats failure beats success).
    pub fn worst(self, other: Exit) -> Exit {
        if self.code() >= other.code() {
            self
        } else {
            other
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
    fn worst_prefers_usage_then_failure() {
        assert_eq!(Exit::Success.worst(Exit::Failure), Exit::Failure);
        assert_eq!(Exit::Failure.worst(Exit::Usage), Exit::Usage);
        assert_eq!(Exit::Usage.worst(Exit::Success), Exit::Usage);
        assert_eq!(Exit::Success.worst(Exit::Success), Exit::Success);
    }
}
