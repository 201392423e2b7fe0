//! Stable codes of findings: every finding enum (verify's parts, `audit`, the write gate's
//! refusals, `apply`'s outcomes) names each variant with a kebab-case code, shown beside its
//! sentence in `-o json` and listed in `docs/errors.md` (cargo-deny's `Code`). Scripts and
//! tests match codes; the wording may change freely.

/// A finding with a stable code.
pub trait Code {
    /// Its kebab-case code (the JSON `code`).
    fn code(&self) -> &'static str;
}

impl<C: Code + ?Sized> Code for &C {
    fn code(&self) -> &'static str {
        (**self).code()
    }
}

/// `codes!(Ty, Enum { Variant => "code", ... } nested { Variant => Inner, ... })`: implements
/// [`Code`] for `Ty` with one exhaustive match (a new variant without a code does not
/// compile), and, for tests, `Ty::codes()` (its own variants' codes, to check against
/// `docs/errors.md`) and `Ty::all_codes()` (the nested enums' too, which share one list in the
/// JSON and so must not collide).
///
/// A `nested` variant holds another coded finding (`SecretType(TypeFinding)`) and takes its code.
macro_rules! codes {
    ($ty:ty, $en:ident { $($v:ident => $code:literal),* $(,)? }
        $(nested { $($nv:ident => $inner:ty),* $(,)? })?) => {
        impl $crate::base::codes::Code for $ty {
            fn code(&self) -> &'static str {
                match self {
                    $( $en::$v { .. } => $code, )*
                    $($( $en::$nv(inner) => $crate::base::codes::Code::code(inner), )*)?
                }
            }
        }

        #[cfg(test)]
        #[allow(dead_code)]
        impl $ty {
            /// The codes of this enum's own variants (nested enums are listed on their own).
            pub(crate) fn codes() -> Vec<&'static str> {
                vec![$($code),*]
            }

            /// Every code a finding of this enum can have, the nested enums' included.
            pub(crate) fn all_codes() -> Vec<&'static str> {
                #[allow(unused_mut)]
                let mut all = Self::codes();
                $($( all.extend(<$inner>::all_codes()); )*)?
                all
            }
        }
    };
}
pub(crate) use codes;

/// Whether `code` is kebab-case: lowercase words of letters and digits joined by `-`.
#[cfg(test)]
pub(crate) fn is_kebab(code: &str) -> bool {
    !code.is_empty()
        && code.split('-').all(|w| {
            !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// `docs/errors.md`, where every code is listed.
#[cfg(test)]
const ERRORS_MD: &str = include_str!("../../docs/errors.md");

/// Asserts that `all` (every code one finding enum can give, nested enums' included) are
/// kebab-case and unique, and that `own` (its own variants') are each listed as
/// ``- `code`: ...`` under the heading `### {section}` of `docs/errors.md`.
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_documented(section: &str, own: &[&str], all: &[&str]) {
    let heading = format!("### {section}");
    let start = ERRORS_MD
        .lines()
        .position(|l| l.trim_end() == heading)
        .unwrap_or_else(|| panic!("docs/errors.md has no heading `{heading}`"));
    let body: Vec<&str> = ERRORS_MD
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.starts_with('#'))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for code in all {
        assert!(is_kebab(code), "`{code}` is not kebab-case");
        assert!(seen.insert(*code), "`{code}` is given twice in `{section}`");
    }
    for code in own {
        let item = format!("- `{code}`: ");
        assert!(
            body.iter().any(|l| l.starts_with(&item)),
            "docs/errors.md does not list `{code}` under `{heading}`"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_case_is_lowercase_words_joined_by_dashes() {
        assert!(is_kebab("stale-pods"));
        assert!(is_kebab("not-ready2"));
        assert!(!is_kebab("Stale-pods"));
        assert!(!is_kebab("stale_pods"));
        assert!(!is_kebab("stale--pods"));
        assert!(!is_kebab("-stale"));
        assert!(!is_kebab(""));
    }
}
