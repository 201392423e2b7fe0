//! The `[secrets]` section: each secret, its fields and generators, and paths another
//! application provides.

use super::*;

#[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
pub(super) fn parse_secrets(
    cx: &mut Cx<'_>,
    v: Value<'_>,
    key_span: Span,
    envs: &[String],
) -> Vec<Secret> {
    let entries = cx.entries(v, &"`[secrets]`");
    // Sized once: a spec's secrets are held for the whole run.
    let mut out = Vec::with_capacity(entries.len());
    if entries.is_empty() {
        cx.err(
            key_span,
            "`[secrets]` is empty",
            Some("add at least one secret, e.g. `[secrets.API_KEY_SALT]`".into()),
        );
    }
    for (key, mut val) in entries {
        let name = key.name.to_string();
        let ctx = SecretTable(&name);
        if let Err(why) = check_path(&name) {
            cx.err(
                key.span,
                format!("secret name `{}` {why}", shown(&name)),
                Some(SEGMENT_HELP.into()),
            );
        }
        let Some(mut th) = cx.table(&mut val, &ctx) else {
            continue;
        };
        let description = cx.take_str(&mut th, "description", &ctx);
        if description.is_none() && !th.contains("description") {
            cx.err(key.span, format!("secret `{}` has no `description`", shown(&name)), Some("people read specs: say what the secret is for, e.g. `description = \"Fernet key encrypting stored credentials\"`".into()));
        }
        let reason = take_reason(cx, &mut th, &ctx).map(|r| r.0);
        let secret_type = cx
            .take_checked(
                &mut th,
                "secret_type",
                &ctx,
                check_secret_type,
                "the Kubernetes Secret's `type`, e.g. `secret_type = \"kubernetes.io/dockerconfigjson\"`",
            )
            .map(Arc::from);
        let fixed_span = take_fixed(cx, &mut th, &ctx);
        let fixed = fixed_span.is_some_and(|(b, _)| b);
        let provided = parse_provided(cx, &mut th, &ctx, envs);
        if let (Some(_), Some(_)) = (&provided, &reason) {
            cx.err(
                key.span,
                format!("provided secret `{}` cannot have a `reason`", shown(&name)),
                Some("`reason` says why vault-seed refuses to change a value it wrote; it never writes a provided secret: say it in `provided_by` or `description`".into()),
            );
        }
        if let (Some(_), Some((true, span))) = (&provided, fixed_span) {
            cx.err(
                span,
                format!("provided secret `{}` cannot be `fixed`", shown(&name)),
                Some("`fixed` stops vault-seed rotating what it wrote; vault-seed never writes a provided secret at all: remove `fixed`".into()),
            );
        }
        let fields = match th.take("fields") {
            Some((fk, f)) => {
                let declared = f.has_keys();
                let place = match provided {
                    Some(_) => Place::Provided,
                    None => Place::Secret { fixed },
                };
                let (mut fields, _) = parse_fields_of(cx, f, &ctx, place);
                // The secret's reason speaks for each field that gives none of its own.
                if let Some(r) = &reason {
                    for f in fields.iter_mut().filter(|f| f.reason.is_none()) {
                        f.reason = Some(Arc::clone(r));
                    }
                }
                if !declared {
                    cx.err(
                        fk.span,
                        format!("secret `{}` has no fields", shown(&name)),
                        Some("e.g. `fields.password = { generator = \"hex32\" }`".into()),
                    );
                }
                fields
            }
            None => {
                cx.err(
                    key.span,
                    format!("secret `{}` has no `fields`", shown(&name)),
                    Some("e.g. `fields.password = { generator = \"hex32\" }`".into()),
                );
                Vec::new()
            }
        };
        cx.finish(th, &ctx);
        let (line, col) = cx.src.line_col(key.span.start);
        out.push(Secret {
            name: cx.name(&name),
            fixed,
            fields: cx.shared(fields),
            provided: provided.map(Arc::new),
            secret_type,
            location: crate::spec::Location {
                file: Arc::clone(&cx.src.path),
                line,
                col,
            },
        });
    }
    out
}

/// The fields of an environment's override, each with the span of its value.
pub(super) fn parse_fields(
    cx: &mut Cx<'_>,
    v: Value<'_>,
    secret_ctx: &dyn Display,
) -> (Vec<Field>, Vec<Span>) {
    parse_fields_of(cx, v, secret_ctx, Place::Override)
}

/// Where a field is declared, which decides the keys it may have.
#[derive(Clone, Copy)]
pub(super) enum Place {
    /// A secret vault-seed seeds; `fixed` when the whole secret is.
    Secret { fixed: bool },
    /// A secret another application provides: no generator needed, no rotation.
    Provided,
    /// An environment's override: only the generator changes.
    Override,
}

/// The fields of a secret, and the span of each one's value; a provided secret's fields may leave
/// the generator out (`{}`: any non-empty text), and its generator only validates.
pub(super) fn parse_fields_of(
    cx: &mut Cx<'_>,
    v: Value<'_>,
    secret_ctx: &dyn Display,
    place: Place,
) -> (Vec<Field>, Vec<Span>) {
    let provided = matches!(place, Place::Provided);
    let mut out = Vec::new();
    let mut spans = Vec::new();
    let mut declared = Vec::new();
    for (key, val) in cx.entries(v, &Then("`fields` of ", secret_ctx)) {
        let name = key.name.to_string();
        if let Err(why) = check_segment(&name) {
            cx.err(
                key.span,
                format!("field name `{}` {why}", shown(&name)),
                Some(SEGMENT_HELP.into()),
            );
            continue;
        }
        let ctx = FieldOf(&name, secret_ctx);
        let span = val.span;
        declared.push(key.name.clone());
        let parsed = if provided && val.as_table().is_some_and(|t| t.is_empty()) {
            Some((
                crate::generate::Generator::Any,
                Rotation::Unstated,
                Extras::default(),
            ))
        } else {
            parse_generator(cx, val, &ctx, place)
        };
        if let Some((generator, rotation, extras)) = parsed {
            if provided && generator.is_placeholder() {
                cx.err(
                    span,
                    format!("{ctx} is provided by another application: a placeholder cannot validate it"),
                    Some("a placeholder accepts any value but its marker; give a generator that checks the value's format, or `{}` to accept any non-empty text".into()),
                );
                continue;
            }
            out.push(Field {
                name,
                generator,
                rotation,
                reason: extras.reason,
                before_sync: extras.before_sync,
            });
            spans.push(span);
        }
    }
    if let Place::Secret { .. } = place {
        derived::check_inputs(cx, &out, &spans, &declared, secret_ctx);
    }
    (out, spans)
}

/// `fixed` of a secret or a field, with the span of its key; a value of the wrong type is a
/// problem and counts as `false`.
fn take_fixed(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &dyn Display,
) -> Option<(bool, Span)> {
    th.take("fixed").map(|(k, mut v)| {
        let b = match v.take() {
            ValueInner::Boolean(b) => b,
            other => {
                cx.err(
                    v.span,
                    format!(
                        "`fixed` in {ctx} must be `true` or `false`, found {}",
                        other.type_str()
                    ),
                    None,
                );
                false
            }
        };
        (b, k.span)
    })
}

/// The rotation keys of a field (`fixed`, `rotation`, `keep`) as written, with their spans.
#[derive(Default)]
struct RotationKeys {
    fixed: Option<(bool, Span)>,
    rotation: Option<(String, Span)>,
    keep: Option<(i64, Span)>,
}

impl RotationKeys {
    fn take(cx: &mut Cx<'_>, th: &mut TableHelper<'_>, ctx: &dyn Display) -> RotationKeys {
        RotationKeys {
            fixed: take_fixed(cx, th, ctx),
            rotation: cx.take_string(th, "rotation", ctx),
            keep: cx.take_int(th, "keep", ctx),
        }
    }

    /// The keys present, with their spans, in file order.
    fn present(&self) -> Vec<(&'static str, Span)> {
        let mut keys: Vec<(&'static str, Span)> = [
            self.fixed.map(|f| ("fixed", f.1)),
            self.rotation.as_ref().map(|r| ("rotation", r.1)),
            self.keep.map(|k| ("keep", k.1)),
        ]
        .into_iter()
        .flatten()
        .collect();
        keys.sort_by_key(|(_, s)| s.start);
        keys
    }

    /// The field's rotation, or problems at the keys at fault.
    fn judge(
        self,
        cx: &mut Cx<'_>,
        ctx: &dyn Display,
        place: Place,
        generator: &Generator,
    ) -> Rotation {
        let secret_fixed = match place {
            Place::Secret { fixed } => fixed,
            Place::Provided | Place::Override => {
                let (why, help) = match place {
                    Place::Provided => ("is provided by another application", "vault-seed never writes or rotates a provided secret: remove it"),
                    _ => ("is an environment's override", "an override changes the generator only; say how the field rotates in its `[secrets.NAME]` table"),
                };
                for (key, span) in self.present() {
                    cx.err(
                        span,
                        format!("`{key}` in {ctx}: the field {why}"),
                        Some(help.into()),
                    );
                }
                return Rotation::Unstated;
            }
        };
        let mut rotation = match &self.rotation {
            None => Rotation::Unstated,
            Some((r, span)) => match r.as_str() {
                "replace" => Rotation::Replace,
                "never" => Rotation::Never,
                "keyring" if generator.keyring_allowed() => Rotation::Keyring { keep: 1 },
                "keyring" => {
                    cx.err(
                        *span,
                        format!("`rotation = \"keyring\"` in {ctx}: a `{}` value cannot be a comma-separated list of keys", generator.name()),
                        Some("keyrings are for `fernet`, `hex` and `base64` keys; choose `replace` or `never`".into()),
                    );
                    Rotation::Unstated
                }
                other => {
                    cx.err(
                        *span,
                        format!("`rotation` in {ctx} is `{}`", shown(other)),
                        Some("one of `replace` (a new value replaces the old), `keyring` (the new key first, the previous ones kept), `never` (the same as `fixed = true`)".into()),
                    );
                    Rotation::Unstated
                }
            },
        };
        if let Some((true, span)) = self.fixed {
            if self.rotation.is_some() {
                cx.err(
                    span,
                    format!("`fixed = true` together with `rotation` in {ctx}"),
                    Some("`fixed = true` is `rotation = \"never\"`: keep one".into()),
                );
            }
            rotation = Rotation::Fixed;
        }
        if let Some((keep, span)) = self.keep {
            match rotation {
                Rotation::Keyring { .. } => match u8::try_from(keep) {
                    Ok(k) if (1..=MAX_KEEP).contains(&k) => rotation = Rotation::Keyring { keep: k },
                    _ => cx.err(
                        span,
                        format!("`keep = {keep}` in {ctx} is out of range"),
                        Some(format!("a keyring keeps 1 to {MAX_KEEP} previous keys; with none to keep, say `rotation = \"replace\"`")),
                    ),
                },
                _ => cx.err(
                    span,
                    format!("`keep` in {ctx} is for `rotation = \"keyring\"`"),
                    Some("it says how many previous keys a keyring keeps; remove it, or set `rotation = \"keyring\"`".into()),
                ),
            }
        }
        if secret_fixed && matches!(rotation, Rotation::Replace | Rotation::Keyring { .. }) {
            if let Some((_, span)) = self.rotation {
                cx.err(
                    span,
                    format!("`rotation` in {ctx}, but the secret is `fixed`: its fields never rotate"),
                    Some("remove `fixed = true` from the secret and say `fixed = true` on the fields that must never change".into()),
                );
            }
        }
        rotation
    }
}

/// A field's keys beside its generator and rotation, as judged.
#[derive(Default)]
pub(super) struct Extras {
    /// `reason`.
    reason: Option<Arc<str>>,
    /// `needed = "before-sync"`.
    before_sync: bool,
}

/// `reason` and `needed` of a field as written, with their spans.
struct ExtraKeys {
    reason: Option<(Arc<str>, Span)>,
    needed: Option<(String, Span)>,
}

impl ExtraKeys {
    fn take(cx: &mut Cx<'_>, th: &mut TableHelper<'_>, ctx: &dyn Display) -> ExtraKeys {
        ExtraKeys {
            reason: take_reason(cx, th, ctx),
            needed: cx.take_string(th, "needed", ctx),
        }
    }

    /// The keys, or problems where they are written: an override changes the generator only,
    /// and only a placeholder (a value a person gives) can be needed before the sync.
    fn judge(
        self,
        cx: &mut Cx<'_>,
        ctx: &dyn Display,
        place: Place,
        generator: &Generator,
    ) -> Extras {
        if matches!(place, Place::Override | Place::Provided) {
            for (key, span) in [
                ("reason", self.reason.as_ref().map(|r| r.1)),
                ("needed", self.needed.as_ref().map(|n| n.1)),
            ] {
                if let Some(span) = span {
                    cx.err(
                        span,
                        format!("`{key}` in {ctx}: the field is an environment's override or provided by another application"),
                        Some("say it in the field's `[secrets.NAME]` table".into()),
                    );
                }
            }
            return Extras::default();
        }
        let before_sync = match &self.needed {
            None => false,
            Some((n, span)) => match (
                n.as_str(),
                matches!(generator, Generator::Placeholder { .. }),
            ) {
                ("before-sync", true) => true,
                ("after-deploy", true) => false,
                (_, false) => {
                    cx.err(
                        *span,
                        format!("`needed` in {ctx}: vault-seed makes this value itself"),
                        Some(
                            "`needed` says when a person must fill in a placeholder; remove it"
                                .into(),
                        ),
                    );
                    false
                }
                (other, true) => {
                    cx.err(
                        *span,
                        format!("`needed` in {ctx} is `{}`", shown(other)),
                        Some("one of `before-sync` (the first sync cannot work without it) or `after-deploy` (the default: a person makes it once the application runs)".into()),
                    );
                    false
                }
            },
        };
        Extras {
            reason: self.reason.map(|r| r.0),
            before_sync,
        }
    }
}

/// `reason` of a secret or a field, with its span: words for people, not empty.
fn take_reason(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &dyn Display,
) -> Option<(Arc<str>, Span)> {
    let (v, span) = cx.take_str(th, "reason", ctx)?;
    match check_words(&v) {
        Ok(()) => Some((Arc::from(&*v), span)),
        Err(why) => {
            cx.err(
                span,
                format!("`reason` in {ctx} {why}"),
                Some("say in a few words why the value is protected, e.g. `reason = \"the password postgresInit gave the database user\"`".into()),
            );
            None
        }
    }
}

/// `provided_by`, `push_secret`, `mount`, `path` of a secret: a provided secret, or `None`. The
/// last three without `provided_by` are problems: a secret vault-seed seeds lives under
/// `[vault]`.
#[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
pub(super) fn parse_provided(
    cx: &mut Cx<'_>,
    th: &mut TableHelper<'_>,
    ctx: &dyn Display,
    envs: &[String],
) -> Option<Provided> {
    // Present but invalid still makes the secret provided: its other keys are not misreported.
    let has_by = th.contains("provided_by");
    let by = cx.take_checked(
        th,
        "provided_by",
        ctx,
        check_words,
        "name the provider in words, e.g. `provided_by = \"ask-db: CNPG password pushed by PushSecret core-service-db-password\"`",
    );
    let push_secret = cx.take_string(th, "push_secret", ctx).and_then(|(p, span)| {
        match check_push_secret(&p) {
            Ok(()) => p
                .split_once('/')
                .map(|(n, m)| ((n.to_string(), m.to_string()), span)),
            Err(why) => {
                cx.err(
                    span,
                    format!("`push_secret` `{}` {why}", shown(&p)),
                    Some("the provider's PushSecret as `NAMESPACE/NAME`, e.g. `push_secret = \"ask/core-service-db-password\"`".into()),
                );
                None
            }
        }
    });
    let mount = cx.take_string(th, "mount", ctx);
    let path = cx.take_string(th, "path", ctx);
    if !has_by {
        for (key, span) in [
            ("push_secret", push_secret.as_ref().map(|p| p.1)),
            ("mount", mount.as_ref().map(|m| m.1)),
            ("path", path.as_ref().map(|p| p.1)),
        ] {
            if let Some(span) = span {
                cx.err(
                    span,
                    format!("`{key}` in {ctx} is for a secret another application provides"),
                    Some("add `provided_by = \"<the provider, in words>\"`; a secret vault-seed seeds lives under `[vault]`".into()),
                );
            }
        }
        return None;
    }
    let mut mount_ok = None;
    if let Some((m, span)) = mount {
        if let Err(why) = check_path(&m) {
            cx.err(
                span,
                format!("mount `{}` {why}", shown(&m)),
                Some("write the mount without slashes, e.g. `mount = \"secret\"`".into()),
            );
        } else if let Err((why, help)) = check_kv_mount(&m) {
            cx.err(span, format!("mount `{m}` {why}"), Some(help));
        } else {
            mount_ok = Some(m);
        }
    }
    let mut path_ok = None;
    if let Some((p, span)) = path {
        let leftover = p.replace(ENV_PLACEHOLDER, "");
        if let Err(why) = check_path(&p.replace(ENV_PLACEHOLDER, "env")) {
            cx.err(
                span,
                format!("path `{}` {why}", shown(&p)),
                Some(format!("the provided secret's full path under the mount, e.g. `path = \"ask/postgresql/{ENV_PLACEHOLDER}/core-service-db-password\"`; {SEGMENT_HELP}")),
            );
        } else if leftover.contains('{') || leftover.contains('}') {
            cx.err(
                span,
                format!("path `{}` has an unknown placeholder", shown(&p)),
                Some(format!("only `{ENV_PLACEHOLDER}` is replaced")),
            );
        } else {
            let before = cx.diags.len();
            check_kv_endpoint_folder(cx, &p, span, envs.iter());
            if cx.diags.len() == before {
                path_ok = Some(p);
            }
        }
    }
    Some(Provided {
        // An invalid `provided_by` was reported; the spec is not used.
        by: by.unwrap_or_default(),
        push_secret: push_secret.map(|p| p.0),
        mount: mount_ok,
        path: path_ok,
    })
}

/// Words for people (`provided_by`): not empty, nothing that acts on a terminal.
pub(super) fn check_words(s: &str) -> Result<(), String> {
    check_context(s)
}

/// A Kubernetes Secret's `type`: Kubernetes takes any non-empty text there (custom types
/// included); this takes the characters the built-in and custom types are written with.
pub(super) fn check_secret_type(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_'));
    match ok {
        true => Ok(()),
        false => {
            Err("is not a Kubernetes Secret type (letters, digits, `.`, `/`, `-`, `_`)".into())
        }
    }
}

/// `NAMESPACE/NAME` of a Kubernetes object.
pub(super) fn check_push_secret(s: &str) -> Result<(), String> {
    let Some((ns, name)) = s.split_once('/') else {
        return Err("is not `NAMESPACE/NAME`".into());
    };
    check_k8s_namespace(ns)?;
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    match ok {
        true => Ok(()),
        false => Err(format!(
            "has `{}`, which is not a valid Kubernetes name",
            shown(name)
        )),
    }
}

#[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
pub(super) fn parse_generator(
    cx: &mut Cx<'_>,
    mut v: Value<'_>,
    ctx: &dyn Display,
    place: Place,
) -> Option<(Generator, Rotation, Extras)> {
    let span = v.span;
    if let Some(s) = v.as_str() {
        cx.err(
            span,
            format!("{ctx} must be a table, not a string"),
            Some(format!("write `{{ generator = \"{}\" }}`", shown(s))),
        );
        return None;
    }
    let mut th = cx.table(&mut v, ctx)?;
    let rotation = RotationKeys::take(cx, &mut th, ctx);
    let extras = ExtraKeys::take(cx, &mut th, ctx);
    let sources = SourceKeys::take(cx, &mut th, ctx);
    let gen = cx.take_string(&mut th, "generator", ctx);
    let bytes = cx.take_int(&mut th, "bytes", ctx);
    let length = cx.take_int(&mut th, "length", ctx);
    let classes = cx.take_strings(&mut th, "classes", ctx);
    let marker = cx.take_string(&mut th, "marker", ctx);
    let bits = cx.take_int(&mut th, "bits", ctx);
    let alg = cx.take_string(&mut th, "alg", ctx);
    if gen.is_none() && !th.contains("generator") && !sources.any() {
        cx.err(
            span,
            format!("{ctx} has no `generator`"),
            Some(format!(
                "one of {}; or a value made from others: {}",
                backticked(GENERATOR_NAMES),
                backticked(&derived::SOURCES[1..])
            )),
        );
    }
    cx.finish(th, ctx);
    match sources.build(cx, ctx, span, gen.as_ref(), place) {
        Built::Plain => {}
        Built::Failed => return None,
        Built::Made(g) => {
            let options = [
                ("bytes", bytes.map(|b| b.1)),
                ("length", length.map(|l| l.1)),
                (
                    "classes",
                    classes.as_ref().and_then(|c| c.first().map(|c| c.1)),
                ),
                ("marker", marker.as_ref().map(|m| m.1)),
                ("bits", bits.map(|b| b.1)),
                ("alg", alg.as_ref().map(|a| a.1)),
            ];
            let mut ok = true;
            for (key, at) in options {
                if let Some(at) = at {
                    cx.err(
                        at,
                        format!("{ctx} is a `{}` and takes no `{key}`", g.name()),
                        None,
                    );
                    ok = false;
                }
            }
            for (key, at) in rotation.present() {
                let why = match g {
                    Generator::FromSecret { .. } => {
                        "`vault-seed import` replaces it from the cluster"
                    }
                    _ => "it is made again from its source whenever that changes",
                };
                cx.err(
                    at,
                    format!("`{key}` in {ctx}: {why}"),
                    Some("say how the source field rotates instead".into()),
                );
                ok = false;
            }
            let extras = extras.judge(cx, ctx, place, &g);
            return ok.then_some((g, Rotation::Unstated, extras));
        }
    }
    let (name, gspan) = gen?;
    let class_names: Option<Vec<String>> = classes
        .as_ref()
        .map(|c| c.iter().map(|(n, _)| n.clone()).collect());
    let params = Params {
        name: &name,
        bytes: bytes.map(|b| b.0),
        length: length.map(|l| l.0),
        classes: class_names.as_deref(),
        marker: marker.as_ref().map(|m| m.0.as_str()),
        bits: bits.map(|b| b.0),
        alg: alg.as_ref().map(|a| a.0.as_str()),
    };
    match Generator::from_params(&params, Syntax::Spec) {
        Ok(g) => {
            let rotation = rotation.judge(cx, ctx, place, &g);
            let extras = extras.judge(cx, ctx, place, &g);
            Some((g, rotation, extras))
        }
        Err(errors) => {
            for e in errors {
                let at = match e.param {
                    Param::Generator => gspan,
                    Param::Bytes => bytes.map_or(span, |b| b.1),
                    Param::Length => length.map_or(span, |l| l.1),
                    Param::Classes(i) => classes
                        .as_ref()
                        .and_then(|c| c.get(i))
                        .map_or(span, |c| c.1),
                    Param::Marker => marker.as_ref().map_or(span, |m| m.1),
                    Param::Bits => bits.map_or(span, |b| b.1),
                    Param::Alg => alg.as_ref().map_or(span, |a| a.1),
                };
                cx.err(at, e.message, Some(e.help));
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{load, problems};
    use super::*;

    /// A keyring field keeping `keep` previous keys, its `keep` value at line 7, column 67.
    fn keyring(keep: &str) -> String {
        format!(
            "[vault]\nmount = \"secret\"\npath = \"app/{{env}}\"\n[environments.dev]\n\
             [secrets.RING]\ndescription = \"a keyring\"\n\
             fields.key = {{ generator = \"fernet\", rotation = \"keyring\", keep = {keep} }}\n"
        )
    }

    /// `keep = 0` would let `rotate` drop every previous key: refused where it is written, as
    /// is one past [`MAX_KEEP`]; the ends of the range load.
    #[test]
    fn a_keyring_keeps_1_to_max_keep_previous_keys() {
        for keep in [0, i64::from(MAX_KEEP) + 1, -1] {
            let found = problems(&keyring(&keep.to_string()));
            let want =
                format!("`keep = {keep}` in field `key` of `[secrets.RING]` is out of range");
            assert_eq!(found.len(), 1, "{found:?}");
            let (message, line, col, help) = &found[0];
            assert_eq!((message, *line, *col), (&want, 7, 67));
            assert!(
                help.contains("1 to 10") && help.contains("replace"),
                "{help}"
            );
        }
        for keep in [1, MAX_KEEP] {
            let set = load(&keyring(&keep.to_string())).unwrap();
            let rotation = set.specs[0].secrets[0].fields[0].rotation;
            assert_eq!(rotation, Rotation::Keyring { keep });
        }
    }
}
