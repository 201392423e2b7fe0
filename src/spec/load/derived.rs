//! A field whose value is not drawn at random: `derive`, `template`, `copy`, `from_secret`, and
//! the `x509-self-signed` generator; and, once a secret's fields are all read, the checks of
//! what they name inside the secret (the field exists, is of a kind that can be an input, no
//! cycle). What they name in other secrets is checked across the specs ([`super::cross`]).

use super::*;
use crate::generate::bcrypt::MAX_SOURCE;
use crate::generate::derived::{parse_copy, parse_template, Derived, MAX_DAYS};
use crate::generate::{FieldRef, Longest};

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
    pub(super) fn take(cx: &mut Cx<'_>, th: &mut TableHelper<'de>, ctx: &dyn Display) -> Self {
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
        ctx: &dyn Display,
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

    #[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
    fn build_inner(
        self,
        cx: &mut Cx<'_>,
        ctx: &dyn Display,
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
                        cx.err(at, format!("`template` in {ctx}: {why}"), Some("write `{field}` for a field of this secret (`{.field}` when its name holds a dot: `{.tls.crt}`), `{SECRET.field}` for another secret's, `{field|base64}` to encode it".into()));
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

    fn x509(self, cx: &mut Cx<'_>, ctx: &dyn Display, span: Span) -> Option<Generator> {
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

fn derive_table(cx: &mut Cx<'_>, mut v: Value<'_>, ctx: &dyn Display) -> Option<Derived> {
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
/// of the secret, of a kind it can be made from ([`input_problems`]), and no field is made,
/// through others, from itself. `spans`: each field's value span, in the order of `fields`.
/// `declared`: every field name the secret declares, those with problems too.
pub(super) fn check_inputs(
    cx: &mut Cx<'_>,
    fields: &[Field],
    spans: &[Span],
    declared: &[Cow<'_, str>],
    secret_ctx: &dyn Display,
) {
    // Only a derived field names others: most secrets have none, and nothing to check.
    if fields.iter().all(|f| f.generator.derived().is_none()) {
        return;
    }
    let by_name = by_name(fields);
    let names: Vec<String> = declared.iter().map(|d| d.to_string()).collect();
    let names = &names[..];
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); fields.len()];
    for (i, f) in fields.iter().enumerate() {
        let Some(d) = f.generator.derived() else {
            continue;
        };
        for r in d.inputs().iter().filter(|r| r.secret.is_none()) {
            let Some(&j) = by_name.get(r.field.as_str()) else {
                if names.contains(&r.field) {
                    // Its own problem was reported.
                    continue;
                }
                cx.err(
                    spans[i],
                    format!(
                        "field `{}` of {secret_ctx} is made from `{}`, which is not a field of the secret",
                        f.name,
                        shown(&r.field)
                    ),
                    Some(format!("its fields: {}", crate::spec::few(names))),
                );
                continue;
            };
            edges[i].push(j);
        }
    }
    for p in input_problems(fields) {
        let ctx = format!("field `{}` of {secret_ctx}", fields[p.field].name);
        cx.err(
            spans[p.field],
            p.message(fields, &ctx),
            Some(p.help(fields)),
        );
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

/// Each field's place in `fields`, by name.
fn by_name(fields: &[Field]) -> HashMap<&str, usize> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect()
}

/// A derived field that `apply` could never make from an input of its secret: a finding, by the
/// fields' places in the secret's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct InputProblem {
    /// The derived field.
    pub field: usize,
    /// Its input.
    pub input: usize,
    /// What is wrong with the input.
    pub why: Why,
}

/// What is wrong with a derived field's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// A public half or a certificate of a value that is no key of theirs (of a `hex`).
    NotAKey,
    /// Hashed with bcrypt, but its values can be longer than bcrypt hashes whole.
    TooLong(Longest),
}

impl InputProblem {
    /// What is wrong, `ctx` naming the derived field.
    pub(super) fn message(&self, fields: &[Field], ctx: &dyn Display) -> String {
        let (f, input) = (&fields[self.field], &fields[self.input]);
        let d = f.generator.derived().unwrap_or_else(|| unreachable!());
        match self.why {
            Why::NotAKey => format!(
                "{ctx} is a `{}` of `{}`, which is a `{}`, not {}",
                d.name(),
                input.name,
                input.generator.name(),
                wanted(d)
            ),
            Why::TooLong(longest) => format!(
                "{ctx} is a bcrypt hash of `{}`, whose values reach {longest}: bcrypt hashes at most {MAX_SOURCE} bytes",
                input.name
            ),
        }
    }

    /// What to do about it.
    pub(super) fn help(&self, fields: &[Field]) -> String {
        let (f, input) = (&fields[self.field], &fields[self.input]);
        let d = f.generator.derived().unwrap_or_else(|| unreachable!());
        match self.why {
            Why::NotAKey => format!(
                "make `{}` {}, or make `{}` from a field that is one",
                input.name,
                wanted(d),
                f.name
            ),
            Why::TooLong(_) => format!(
                "bcrypt ignores what is past its first 72 bytes, so two long values could share a hash, and vault-seed refuses to make one: hash a field of at most {MAX_SOURCE} bytes, e.g. a `password` of `length` up to {MAX_SOURCE} or a `hex` of `bytes` up to {}",
                MAX_SOURCE / 2
            ),
        }
    }
}

/// The keys a certificate or a public half is made from, in words.
fn wanted(d: &Derived) -> &'static str {
    match d {
        Derived::X509 { .. } => "an `ed25519`, `ecdsa-p256` or `rsa` key",
        _ => "an `ed25519`, `ecdsa-p256`, `rsa` or `ssh-ed25519` key",
    }
}

/// The derived fields of `fields` that could never be made from an input of the secret, in
/// field order: a public half or a certificate of a value that is no key of theirs, a bcrypt hash
/// of a value that can be longer than bcrypt hashes. Inputs that are not fields of the secret
/// are left to [`check_inputs`].
pub(super) fn input_problems(fields: &[Field]) -> Vec<InputProblem> {
    let by_name = by_name(fields);
    let longest = longest_values(fields, &by_name);
    let mut out = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let Some(d) = f.generator.derived() else {
            continue;
        };
        for r in d.inputs().iter().filter(|r| r.secret.is_none()) {
            let Some(&j) = by_name.get(r.field.as_str()) else {
                continue;
            };
            let source = &fields[j].generator;
            let why = match d {
                Derived::PublicKey { .. } => {
                    (!matches!(source, Generator::Key(_) | Generator::SshEd25519))
                        .then_some(Why::NotAKey)
                }
                Derived::X509 { .. } => {
                    (!matches!(source, Generator::Key(_))).then_some(Why::NotAKey)
                }
                Derived::Bcrypt { .. } => {
                    (longest[j].bytes > MAX_SOURCE).then_some(Why::TooLong(longest[j]))
                }
                Derived::Template(_) | Derived::Copy(_) => None,
            };
            if let Some(why) = why {
                out.push(InputProblem {
                    field: i,
                    input: j,
                    why,
                });
            }
        }
    }
    out
}

/// The checks of [`input_problems`] in each environment that overrides a secret's fields: an
/// override that gives a derived field's input a generator it cannot be made from (a `hex` where
/// a certificate's key was, a long `password` where a bcrypt hash's input was). Each is reported
/// at the override of the input, else of the secret; what the secret itself gets wrong is
/// reported at the secret, once.
pub(super) fn check_overrides(
    cx: &mut Cx<'_>,
    secrets: &[Secret],
    environments: &BTreeMap<String, EnvEntry>,
) {
    if !any_override(environments) {
        return;
    }
    let by_name: HashMap<&str, &Secret> = secrets.iter().map(|s| (&*s.name, s)).collect();
    // A secret's own problems, once per overridden secret (not per environment).
    let mut own: HashMap<&str, Vec<(usize, usize, bool)>> = HashMap::new();
    let key = |p: &InputProblem| (p.field, p.input, p.why == Why::NotAKey);
    for (env, overrides) in environments.values() {
        for (name, written) in overrides {
            let Some(s) = by_name.get(name.as_str()) else {
                continue;
            };
            // A secret the environment leaves out is never made there.
            if written.ov.skip || written.ov.fields.is_empty() {
                continue;
            }
            let own = own
                .entry(name.as_str())
                .or_insert_with(|| input_problems(&s.fields).iter().map(key).collect());
            let fields = written.ov.apply(&s.fields);
            for p in input_problems(&fields) {
                if own.contains(&key(&p)) {
                    continue;
                }
                let input = &fields[p.input].name;
                let at = written.fields.get(input).copied().unwrap_or(written.span);
                let ctx = format!(
                    "in environment `{}`, field `{}` of `{}`",
                    env.name,
                    fields[p.field].name,
                    shown(name)
                );
                cx.err(at, p.message(&fields, &ctx), Some(p.help(&fields)));
            }
        }
    }
}

/// How long each field's values can be ([`Generator::longest`]), each after its inputs. What
/// the secret cannot tell is taken as any length, which refuses nothing: a field of another
/// secret, a field that is not one of the secret's, and a field on a cycle (a problem of its own).
fn longest_values(fields: &[Field], by_name: &HashMap<&str, usize>) -> Vec<Longest> {
    const UNKNOWN: Longest = Longest::at_least(0);
    // Per field, how many of its inputs in the secret wait for their length, and the fields made
    // from it; then each field once its inputs are known, as a queue (a hostile spec may chain
    // thousands of fields: no recursion).
    let mut waiting = vec![0usize; fields.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); fields.len()];
    for (i, f) in fields.iter().enumerate() {
        for r in f
            .generator
            .derived()
            .map(Derived::inputs)
            .unwrap_or_default()
        {
            if let Some(&j) = r
                .secret
                .is_none()
                .then(|| by_name.get(r.field.as_str()))
                .flatten()
            {
                waiting[i] += 1;
                users[j].push(i);
            }
        }
    }
    let mut longest: Vec<Option<Longest>> = vec![None; fields.len()];
    let mut ready: Vec<usize> = (0..fields.len()).filter(|&i| waiting[i] == 0).collect();
    while let Some(i) = ready.pop() {
        let input = |r: &FieldRef| match (&r.secret, by_name.get(r.field.as_str())) {
            (None, Some(&j)) => longest[j].unwrap_or(UNKNOWN),
            _ => UNKNOWN,
        };
        longest[i] = Some(fields[i].generator.longest(&input));
        for &u in &users[i] {
            waiting[u] -= 1;
            if waiting[u] == 0 {
                ready.push(u);
            }
        }
    }
    longest.into_iter().map(|l| l.unwrap_or(UNKNOWN)).collect()
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

    /// A secret `S` of the fields `fields` (one a line, from line 7).
    fn secret(fields: &str) -> String {
        format!(
            "[vault]\nmount = \"secret\"\npath = \"app/{{env}}\"\n[environments.dev]\n\
             [secrets.S]\ndescription = \"d\"\n{fields}"
        )
    }

    /// A bcrypt hash of an input whose values can be longer than bcrypt hashes is refused at the
    /// hash's line and column, saying how long they get; one of inputs that fit, or whose length
    /// the spec cannot tell (a person's, another secret's), loads.
    #[test]
    #[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
    fn bcrypt_of_an_input_that_can_be_longer_than_71_bytes_is_refused() {
        let hash = "fields.hash = { derive = { bcrypt = \"in\" } }\n";
        // Another secret's values are not measured: its field may differ by environment.
        const OTHER: &str = "[secrets.OTHER]\ndescription = \"d\"\n\
                             fields.password = { generator = \"hex\", bytes = 64 }\n";
        for (input, reach) in [
            ("{ generator = \"rsa\" }", Some("1536 bytes or more")),
            (
                "{ generator = \"rsa\", bits = 4096 }",
                Some("3072 bytes or more"),
            ),
            ("{ generator = \"ed25519\" }", Some("119 bytes")),
            ("{ generator = \"ecdsa-p256\" }", Some("241 bytes")),
            ("{ generator = \"ssh-ed25519\" }", Some("387 bytes")),
            (
                "{ generator = \"jwks\", alg = \"ES256\" }",
                Some("265 bytes"),
            ),
            ("{ generator = \"hex\", bytes = 64 }", Some("128 bytes")),
            ("{ generator = \"hex\", bytes = 36 }", Some("72 bytes")),
            ("{ generator = \"hex\", bytes = 35 }", None),
            ("{ generator = \"hex32\" }", None),
            (
                "{ generator = \"password\", length = 72 }",
                Some("72 bytes"),
            ),
            ("{ generator = \"password\", length = 71 }", None),
            ("{ generator = \"base64\", bytes = 52 }", Some("72 bytes")),
            ("{ generator = \"base64url\", bytes = 51 }", None),
            ("{ generator = \"fernet\" }", None),
            ("{ generator = \"uuid\" }", None),
            ("{ generator = \"placeholder\" }", None),
            ("{ from_secret = \"ask/admin:pat\" }", None),
            ("{ template = \"{OTHER.password}\" }", None),
            ("{ copy = \"OTHER.password\" }", None),
            (
                &format!(
                    "{{ generator = \"placeholder\", marker = \"{}\" }}",
                    "m".repeat(72)
                ),
                Some("72 bytes or more"),
            ),
            // Text that no value a person puts in can make shorter, and the marker after it.
            (
                &format!("{{ template = \"{}{{pat}}\" }}", "t".repeat(72)),
                Some("83 bytes or more"),
            ),
            ("{ template = \"{pw}:{pw}\" }", Some("81 bytes")),
            ("{ template = \"{pw|base64}\" }", None),
            ("{ template = \"{pw}{pw|base64}\" }", Some("96 bytes")),
            // 51 bytes as vault-seed makes it; what a person puts in is judged when it is set.
            ("{ template = \"{pw}{pat}\" }", None),
        ] {
            let text = secret(&format!(
                "fields.pw = {{ generator = \"password\", length = 40 }}\n\
                 fields.pat = {{ generator = \"placeholder\" }}\nfields.in = {input}\n{hash}"
            )) + OTHER;
            match (reach, super::super::testing::load(&text)) {
                (None, Ok(_)) => {}
                (Some(reach), Err(found)) => {
                    assert_eq!(found.len(), 1, "{input}: {found:?}");
                    let (message, line, col, help) = &found[0];
                    assert_eq!(
                        message,
                        &format!("field `hash` of `[secrets.S]` is a bcrypt hash of `in`, whose values reach {reach}: bcrypt hashes at most 71 bytes"),
                        "{input}"
                    );
                    assert_eq!((*line, *col), (10, 15), "{input}");
                    assert!(help.contains("at most 71 bytes"), "{help}");
                }
                (want, got) => panic!("{input}: wanted {want:?}, got {:?}", got.err()),
            }
        }
        // Through other derived fields: a template of a bcrypt hash (60 bytes) and 12 more.
        let chained = secret(
            "fields.pw = { generator = \"password\" }\n\
             fields.inner = { derive = { bcrypt = \"pw\" } }\n\
             fields.in = { template = \"{inner}0123456789ab\" }\n\
             fields.hash = { derive = { bcrypt = \"in\" } }\n",
        );
        let found = super::super::testing::problems(&chained);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .0
                .ends_with("whose values reach 72 bytes: bcrypt hashes at most 71 bytes"),
            "{found:?}"
        );
        assert_eq!((found[0].1, found[0].2), (10, 15));
    }

    /// A chain of thousands of derived fields is measured without recursion; a cycle is its own
    /// problem, not a length.
    #[test]
    fn a_long_chain_and_a_cycle_are_measured_without_recursion() {
        let mut fields = String::from("fields.f0 = { generator = \"uuid\" }\n");
        for i in 1..20_000 {
            fields.push_str(&format!(
                "fields.f{i} = {{ template = \"{{f{}}}\" }}\n",
                i - 1
            ));
        }
        fields.push_str("fields.hash = { derive = { bcrypt = \"f19999\" } }\n");
        super::super::testing::load(&secret(&fields)).unwrap();
        let cycle = secret(
            "fields.a = { template = \"{b}\" }\nfields.b = { template = \"{a}\" }\n\
             fields.hash = { derive = { bcrypt = \"a\" } }\n",
        );
        let found = super::super::testing::problems(&cycle);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].0.contains("are made from each other"), "{found:?}");
    }

    /// A spec whose environment `dev` overrides secret `S` with `overrides` (line 6 on), `S`
    /// having `fields`.
    fn overridden(overrides: &str, fields: &str) -> String {
        format!(
            "[vault]\nmount = \"secret\"\npath = \"app/{{env}}\"\n[environments.dev]\n\
             [environments.dev.secrets.S]\n{overrides}[environments.prod]\n\
             [secrets.S]\ndescription = \"d\"\n{fields}"
        )
    }

    /// An override that makes a certificate's key, a public half's key or a bcrypt hash's input
    /// a generator they cannot be made from is refused at the override of the input; through a
    /// template, at the override of the secret. Another key, a short value, a skipped secret
    /// load; what the secret itself gets wrong is said once, at the secret.
    #[test]
    fn an_override_that_leaves_a_derived_field_unmakeable_is_refused() {
        const FIELDS: &str = "fields.key = { generator = \"ecdsa-p256\" }\n\
            fields.crt = { generator = \"x509-self-signed\", key = \"key\", cn = \"a\" }\n\
            fields.ssh = { generator = \"ssh-ed25519\" }\n\
            fields.pub = { derive = { public_key = \"ssh\" } }\n\
            fields.pw = { generator = \"password\" }\n\
            fields.hash = { derive = { bcrypt = \"pw\" } }\n\
            fields.t = { template = \"{pw}:\" }\n\
            fields.t_hash = { derive = { bcrypt = \"t\" } }\n";
        let refused =
            |overrides: &str| super::super::testing::problems(&overridden(overrides, FIELDS));
        let found = refused("fields.key = { generator = \"hex32\" }\n");
        assert_eq!(
            found,
            [(
                "in environment `dev`, field `crt` of `S` is a `x509-self-signed` of `key`, which is a `hex`, not an `ed25519`, `ecdsa-p256` or `rsa` key".to_string(),
                6,
                14,
                "make `key` an `ed25519`, `ecdsa-p256` or `rsa` key, or make `crt` from a field that is one".to_string()
            )]
        );
        let found = refused("fields.ssh = { generator = \"uuid\" }\n");
        assert_eq!(
            (found.len(), found[0].1, found[0].2),
            (1, 6, 14),
            "{found:?}"
        );
        assert!(found[0].0.starts_with("in environment `dev`, field `pub` of `S` is a `public_key` of `ssh`, which is a `uuid`"), "{found:?}");
        // `pw` of 71 bytes: `hash` takes it, `t` makes it 72.
        let found = refused("fields.pw = { generator = \"password\", length = 71 }\n");
        assert_eq!(
            found.iter().map(|p| (p.0.as_str(), p.1, p.2)).collect::<Vec<_>>(),
            [(
                "in environment `dev`, field `t_hash` of `S` is a bcrypt hash of `t`, whose values reach 72 bytes: bcrypt hashes at most 71 bytes",
                5,
                27
            )]
        );
        let found = refused("fields.pw = { generator = \"hex\", bytes = 64 }\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].1, found[0].2), (6, 13), "{found:?}");
        assert!(
            found[0].0.contains(
                "field `hash` of `S` is a bcrypt hash of `pw`, whose values reach 128 bytes"
            ),
            "{found:?}"
        );
        for fine in [
            "fields.key = { generator = \"rsa\" }\n",
            "fields.ssh = { generator = \"ed25519\" }\n",
            "fields.pw = { generator = \"password\", length = 70 }\n",
            "fields.other = { generator = \"hex\", bytes = 64 }\n",
            "skip = true\nfields.key = { generator = \"hex32\" }\n",
        ] {
            let text = overridden(fine, FIELDS);
            assert!(super::super::testing::load(&text).is_ok(), "{fine}");
        }
        // The secret's own problem is said once, not again for the environment.
        let own = FIELDS.replace("\"ecdsa-p256\"", "\"hex32\"");
        let found = super::super::testing::problems(&overridden(
            "fields.pw = { generator = \"uuid\" }\n",
            &own,
        ));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].0.starts_with("field `crt` of `[secrets.S]`"),
            "{found:?}"
        );
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
