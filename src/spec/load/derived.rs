//! A field whose value is not drawn at random: `derive`, `template`, `copy`, `from_secret`, and
//! the `x509-self-signed` generator; and, once a secret's fields are all read, the checks of
//! what they name inside the secret (the field exists, is of a kind that can be an input, no
//! cycle). What they name in other secrets is checked across the specs ([`super::cross`]).

use super::*;
use crate::generate::derived::{parse_copy, parse_template, Derived, MAX_DAYS};

/// What a field's source keys made.
pub(super) enum Built {
    /// `generator` chooses the value: built from its options.
    Plain,
    /// A value made from other values, or imported.
    Made(Generator),
    /// A problem was reported.
    Failed,
}

/// The keys that choose where a field's value comes from: exactly one per field.
pub(super) const SOURCES: &[&str] = &["generator", "derive", "template", "copy", "from_secret"];

/// The keys of a field other than its generator's options that this file reads, taken from the
/// field's table before its generator is built.
pub(super) struct SourceKeys<'de> {
    derive: Option<(Key<'de>, Value<'de>)>,
    template: Option<(String, Span)>,
    copy: Option<(String, Span)>,
    from_secret: Option<(String, Span)>,
    key: Option<(String, Span)>,
    cn: Option<(String, Span)>,
    sans: Option<Vec<(String, Span)>>,
    days: Option<(i64, Span)>,
}

impl<'de> SourceKeys<'de> {
    pub(super) fn take(cx: &mut Cx<'_>, th: &mut TableHelper<'de>, ctx: &str) -> Self {
        SourceKeys {
            derive: th.take("derive"),
            template: cx.take_string(th, "template", ctx),
            copy: cx.take_string(th, "copy", ctx),
            from_secret: cx.take_string(th, "from_secret", ctx),
            key: cx.take_string(th, "key", ctx),
            cn: cx.take_string(th, "cn", ctx),
            sans: cx.take_strings(th, "sans", ctx),
            days: cx.take_int(th, "days", ctx),
        }
    }

    /// Whether a key other than `generator` chooses the value's source.
    pub(super) fn any(&self) -> bool {
        self.derive.is_some()
            || self.template.is_some()
            || self.copy.is_some()
            || self.from_secret.is_some()
    }

    /// The x509 options given, with their spans.
    fn x509_keys(&self) -> Vec<(&'static str, Span)> {
        [
            self.key.as_ref().map(|k| ("key", k.1)),
            self.cn.as_ref().map(|c| ("cn", c.1)),
            self.sans
                .as_ref()
                .and_then(|s| s.first().map(|f| ("sans", f.1))),
            self.days.map(|d| ("days", d.1)),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The generator these keys make (`gen`: the `generator` key's name and span, if given).
    pub(super) fn build(
        self,
        cx: &mut Cx<'_>,
        ctx: &str,
        span: Span,
        gen: Option<&(String, Span)>,
        place: Place,
    ) -> Built {
        match self.build_inner(cx, ctx, span, gen, place) {
            Ok(Some(g)) => Built::Made(g),
            Ok(None) => Built::Plain,
            Err(()) => Built::Failed,
        }
    }

    fn build_inner(
        self,
        cx: &mut Cx<'_>,
        ctx: &str,
        span: Span,
        gen: Option<&(String, Span)>,
        place: Place,
    ) -> Result<Option<Generator>, ()> {
        let mut chosen: Vec<(&'static str, Span)> =
            gen.map(|g| ("generator", g.1)).into_iter().collect();
        chosen.extend(
            [
                self.derive.as_ref().map(|d| ("derive", d.0.span)),
                self.template.as_ref().map(|t| ("template", t.1)),
                self.copy.as_ref().map(|c| ("copy", c.1)),
                self.from_secret.as_ref().map(|f| ("from_secret", f.1)),
            ]
            .into_iter()
            .flatten(),
        );
        chosen.sort_by_key(|(_, s)| s.start);
        if let [(first, _), (second, at), ..] = chosen[..] {
            cx.err(
                at,
                format!("{ctx} has both `{first}` and `{second}`"),
                Some(format!(
                    "a field's value comes from one of {}",
                    backticked(SOURCES)
                )),
            );
            return Err(());
        }
        let is_x509 = gen.is_some_and(|g| g.0 == "x509-self-signed");
        let mut stray = false;
        if !is_x509 {
            for (k, at) in self.x509_keys() {
                cx.err(
                    at,
                    format!("{ctx} has `{k}`, which only `generator = \"x509-self-signed\"` takes"),
                    None,
                );
                stray = true;
            }
        }
        if stray {
            return Err(());
        }
        let source = chosen.first().map(|c| c.0);
        if !matches!(source, None | Some("generator")) || is_x509 {
            if let Place::Provided | Place::Override = place {
                let (what, help) = match place {
                    Place::Provided => ("a field of a provided secret", "another application writes it: give a generator that checks its format, or `{}`"),
                    _ => ("an environment's override", "an override changes a field's generator only; make the value in the field's `[secrets.NAME]` table"),
                };
                cx.err(
                    chosen.first().map_or(span, |c| c.1),
                    format!(
                        "{ctx}: `{}` cannot be used in {what}",
                        source.unwrap_or("generator")
                    ),
                    Some(help.into()),
                );
                return Err(());
            }
        }
        if is_x509 {
            return self.x509(cx, ctx, span).map(Some).ok_or(());
        }
        let derived = match source {
            None | Some("generator") => return Ok(None),
            Some("derive") => {
                let (_, v) = self.derive.ok_or(())?;
                derive_table(cx, v, ctx).ok_or(())?
            }
            Some("template") => {
                let (text, tspan) = self.template.ok_or(())?;
                match parse_template(&text) {
                    Ok(pieces) => Derived::Template(pieces),
                    Err((why, at)) => {
                        // The value's span starts at its opening quote; a plain string's
                        // characters follow it one for one.
                        let at = inner_span(tspan, &text, at);
                        cx.err(at, format!("`template` in {ctx}: {why}"), Some("write `{field}` for a field of this secret, `{SECRET.field}` for another secret's, `{field|base64}` to encode it".into()));
                        return Err(());
                    }
                }
            }
            Some("copy") => {
                let (text, cspan) = self.copy.ok_or(())?;
                match parse_copy(&text) {
                    Some(r) => Derived::Copy(r),
                    None => {
                        cx.err(cspan, format!("`copy` in {ctx} is `{}`, not `SECRET.FIELD`", shown(&text)), Some("name another secret of the environment and its field, e.g. `copy = \"DB.password\"`".into()));
                        return Err(());
                    }
                }
            }
            Some(_) => {
                let (text, fspan) = self.from_secret.ok_or(())?;
                return match parse_from_secret(&text) {
                    Ok((namespace, name, key)) => Ok(Some(Generator::FromSecret {
                        namespace,
                        name,
                        key,
                    })),
                    Err(why) => {
                        cx.err(
                            fspan,
                            format!("`from_secret` in {ctx} `{}` {why}", shown(&text)),
                            Some(FROM_SECRET_HELP.into()),
                        );
                        Err(())
                    }
                };
            }
        };
        Ok(Some(Generator::Derived(derived)))
    }

    fn x509(self, cx: &mut Cx<'_>, ctx: &str, span: Span) -> Option<Generator> {
        let help = "e.g. `{ generator = \"x509-self-signed\", key = \"key\", cn = \"core.local\", sans = [\"core.local\"], days = 30 }`";
        let mut ok = true;
        let key = self.key.map(|k| k.0);
        if key.is_none() {
            cx.err(
                span,
                format!("{ctx} has no `key`: the field holding the certificate's private key"),
                Some(help.into()),
            );
            ok = false;
        }
        let cn = match self.cn {
            Some((cn, s)) if cn.is_empty() || !dns_or_words(&cn) => {
                cx.err(
                    s,
                    format!(
                        "`cn` in {ctx} `{}` is not a name a certificate can carry",
                        shown(&cn)
                    ),
                    Some("a host name or a few words, without control characters".into()),
                );
                ok = false;
                String::new()
            }
            Some((cn, _)) => cn,
            None => {
                cx.err(span, format!("{ctx} has no `cn`"), Some(help.into()));
                ok = false;
                String::new()
            }
        };
        let mut sans = Vec::new();
        for (s, at) in self.sans.unwrap_or_default() {
            if s.parse::<std::net::IpAddr>().is_ok() || is_dns_name(&s) {
                sans.push(s);
            } else {
                cx.err(
                    at,
                    format!(
                        "`sans` in {ctx}: `{}` is neither a DNS name nor an IP address",
                        shown(&s)
                    ),
                    None,
                );
                ok = false;
            }
        }
        let days = match self.days {
            None => 365,
            Some((d, s)) => match u32::try_from(d) {
                Ok(d) if (1..=MAX_DAYS).contains(&d) => d,
                _ => {
                    cx.err(
                        s,
                        format!("`days = {d}` in {ctx} is out of range"),
                        Some(format!("1 to {MAX_DAYS}")),
                    );
                    ok = false;
                    0
                }
            },
        };
        (ok).then(|| {
            Generator::Derived(Derived::X509 {
                key: key.unwrap_or_default(),
                cn,
                sans,
                days,
            })
        })
    }
}

/// The span of the `at`th byte of a string value's text, when the string is written plainly
/// (no escapes) so that its characters follow the opening quote one for one; else the value.
fn inner_span(value: Span, text: &str, at: usize) -> Span {
    let width = value.end - value.start;
    let first = match width {
        w if w == text.len() => value.start,
        w if w == text.len() + 2 => value.start + 1,
        _ => return value,
    };
    let len = text[at..].chars().next().map_or(1, char::len_utf8);
    Span::new(first + at, first + at + len)
}

fn derive_table(cx: &mut Cx<'_>, mut v: Value<'_>, ctx: &str) -> Option<Derived> {
    let dctx = format!("`derive` of {ctx}");
    let span = v.span;
    let mut th = cx.table(&mut v, &dctx)?;
    let public_key = cx.take_string(&mut th, "public_key", &dctx);
    let bcrypt = cx.take_string(&mut th, "bcrypt", &dctx);
    let cost = cx.take_int(&mut th, "cost", &dctx);
    cx.finish(th, &dctx);
    let help =
        "`derive = { public_key = \"FIELD\" }` or `derive = { bcrypt = \"FIELD\", cost = 10 }`";
    match (public_key, bcrypt) {
        (Some((_, _)), Some((_, s))) => {
            cx.err(
                s,
                format!("{dctx} has both `public_key` and `bcrypt`"),
                Some(help.into()),
            );
            None
        }
        (None, None) => {
            cx.err(
                span,
                format!("{dctx} names nothing to derive from"),
                Some(help.into()),
            );
            None
        }
        (Some((from, _)), None) => {
            if let Some((_, s)) = cost {
                cx.err(s, format!("`cost` in {dctx} is for `bcrypt`"), None);
                return None;
            }
            Some(Derived::PublicKey { from })
        }
        (None, Some((from, _))) => {
            let cost = match cost {
                None => 10,
                Some((c, s)) => match u32::try_from(c) {
                    Ok(c) if crate::generate::bcrypt::COSTS.contains(&c) => c,
                    _ => {
                        let r = crate::generate::bcrypt::COSTS;
                        cx.err(s, format!("`cost = {c}` in {dctx} is out of range"), Some(format!("{} to {}; 10 to 12 is usual (each step doubles the time a login takes)", r.start(), r.end())));
                        return None;
                    }
                },
            };
            Some(Derived::Bcrypt { from, cost })
        }
    }
}

const FROM_SECRET_HELP: &str = "`NAMESPACE/NAME:KEY` of a Kubernetes Secret, e.g. `from_secret = \"ask/zitadel-admin-pat:pat\"`; KEY is a key of its `data`: letters, digits, `-`, `_` and `.`, not `.` or `..`";

/// `NAMESPACE/NAME:KEY`.
fn parse_from_secret(s: &str) -> Result<(String, String, String), String> {
    let Some((object, key)) = s.rsplit_once(':') else {
        return Err("has no `:KEY`".into());
    };
    check_push_secret(object)?;
    let key_ok = !key.is_empty()
        && key.len() <= 253
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    if !key_ok {
        return Err(format!(
            "has key `{}`, which a Secret's data cannot have",
            shown(key)
        ));
    }
    // Kubernetes' `IsConfigMapKey`, which judges a Secret's keys, refuses these too: a key is a
    // file name when the Secret is mounted as a volume.
    if key == "." || key.starts_with("..") {
        return Err(format!(
            "has key `{}`, which a Secret's data cannot have: Kubernetes refuses `.`, `..` and keys starting with `..`",
            shown(key)
        ));
    }
    let (ns, name) = object.split_once('/').unwrap_or_default();
    Ok((ns.to_string(), name.to_string(), key.to_string()))
}

fn is_dns_name(s: &str) -> bool {
    let s = s.strip_prefix("*.").unwrap_or(s);
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

fn dns_or_words(s: &str) -> bool {
    s.len() <= 64 && !s.chars().any(char::is_control)
}

/// The checks of what a secret's derived fields name inside the secret: each input is a field
/// of the secret, of a kind it can be made from, and no field is made, through others, from
/// itself. `spans`: each field's value span, in the order of `fields`.
/// `declared`: every field name the secret declares, those with problems too.
pub(super) fn check_inputs(
    cx: &mut Cx<'_>,
    fields: &[Field],
    spans: &[Span],
    declared: &[String],
    secret_ctx: &str,
) {
    let by_name: HashMap<&str, usize> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let names = declared;
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); fields.len()];
    for (i, f) in fields.iter().enumerate() {
        let Some(d) = f.generator.derived() else {
            continue;
        };
        let ctx = format!("field `{}` of {secret_ctx}", f.name);
        for r in d.inputs().iter().filter(|r| r.secret.is_none()) {
            let Some(&j) = by_name.get(r.field.as_str()) else {
                if declared.contains(&r.field) {
                    // Its own problem was reported.
                    continue;
                }
                cx.err(
                    spans[i],
                    format!(
                        "{ctx} is made from `{}`, which is not a field of the secret",
                        shown(&r.field)
                    ),
                    Some(format!("its fields: {}", crate::spec::few(names))),
                );
                continue;
            };
            let source = &fields[j].generator;
            let kind_ok = match d {
                Derived::PublicKey { .. } => {
                    matches!(source, Generator::Key(_) | Generator::SshEd25519)
                }
                Derived::X509 { .. } => matches!(source, Generator::Key(_)),
                _ => true,
            };
            if !kind_ok {
                let want = match d {
                    Derived::X509 { .. } => "an `ed25519`, `ecdsa-p256` or `rsa` key",
                    _ => "an `ed25519`, `ecdsa-p256`, `rsa` or `ssh-ed25519` key",
                };
                cx.err(
                    spans[i],
                    format!(
                        "{ctx} is a `{}` of `{}`, which is a `{}`, not {want}",
                        d.name(),
                        r.field,
                        source.name()
                    ),
                    None,
                );
            }
            edges[i].push(j);
        }
    }
    if let Some(cycle) = find_cycle(&edges) {
        let shown_cycle: Vec<String> = cycle
            .iter()
            .map(|&i| format!("`{}`", fields[i].name))
            .collect();
        cx.err(
            spans[cycle[0]],
            format!(
                "fields of {secret_ctx} are made from each other: {} -> `{}`",
                shown_cycle.join(" -> "),
                fields[cycle[0]].name
            ),
            Some("one field of the cycle must be generated, not made from the others".into()),
        );
    }
}

/// A cycle in a graph given as each node's successors, as its nodes in order; the smallest
/// first node.
pub(super) fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    // 0 unseen, 1 on the current path, 2 done. Iterative: a hostile spec may chain thousands.
    let mut state = vec![0u8; edges.len()];
    for root in 0..edges.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&succ) = edges[node].get(*next) {
                *next += 1;
                match state[succ] {
                    0 => {
                        state[succ] = 1;
                        stack.push((succ, 0));
                    }
                    1 => {
                        let at = stack.iter().position(|(n, _)| *n == succ).unwrap_or(0);
                        return Some(stack[at..].iter().map(|(n, _)| *n).collect());
                    }
                    _ => {}
                }
            } else {
                state[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_found_with_its_members_in_order() {
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![]]), None);
        assert_eq!(find_cycle(&[vec![1], vec![2], vec![1]]), Some(vec![1, 2]));
        assert_eq!(find_cycle(&[vec![0]]), Some(vec![0]));
    }

    #[test]
    fn from_secret_is_namespace_name_and_key() {
        assert_eq!(
            parse_from_secret("ask/zitadel-admin-pat:pat").unwrap(),
            ("ask".into(), "zitadel-admin-pat".into(), "pat".into())
        );
        assert!(parse_from_secret("ask/zitadel-admin-pat").is_err());
        assert!(parse_from_secret("zitadel-admin-pat:pat").is_err());
        assert!(parse_from_secret("ask/x:a b").is_err());
    }

    /// A key Kubernetes refuses in a Secret's data (`IsConfigMapKey`: not `.` or `..`, nor
    /// starting with `..`) is refused where it is written; one dot is fine elsewhere.
    #[test]
    fn from_secret_refuses_the_keys_kubernetes_refuses() {
        for key in [".", "..", "..data"] {
            let text = format!(
                "[vault]\nmount = \"secret\"\npath = \"app/{{env}}\"\n[environments.dev]\n\
                 [secrets.IAM]\ndescription = \"d\"\nfields.pat = {{ from_secret = \"ask/admin-pat:{key}\" }}\n"
            );
            let found = super::super::testing::problems(&text);
            assert_eq!(found.len(), 1, "{found:?}");
            let (message, line, col, help) = &found[0];
            assert_eq!(
                message,
                &format!("`from_secret` in field `pat` of `[secrets.IAM]` `ask/admin-pat:{key}` has key `{key}`, which a Secret's data cannot have: Kubernetes refuses `.`, `..` and keys starting with `..`")
            );
            assert_eq!((*line, *col), (7, 31), "{key}");
            assert!(help.contains("not `.` or `..`"), "{help}");
        }
        for key in [".env", "a..b", "tls.crt", ".x.."] {
            let (_, _, got) = parse_from_secret(&format!("ask/x:{key}")).unwrap();
            assert_eq!(got, key);
        }
    }
}
