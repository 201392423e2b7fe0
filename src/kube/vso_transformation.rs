//! Which keys VSO writes into a VaultStaticSecret's destination Secret, and which of them hold
//! one KV field's value as it is, from its `spec.destination.transformation`.
//!
//! VSO v1.4.1's rule (`helpers/secrets.go` `WithVaultData` and `makeK8sData`,
//! `helpers/template.go` `NewSecretTransformationOptionWithTransformation`, `gatherTemplates`,
//! `renderTemplates` and `FilterData`; the fields in `api/v1beta1/common.go` `Transformation`):
//! - every `templates` entry is rendered (Go's `text/template` with some of sprig's functions,
//!   `template/template.go`) and written under its key, whatever the filters say; an entry whose
//!   key is empty is a source only and writes nothing;
//! - each top-level field of the KV data is then written under its own name, its value as it is
//!   (`marshalJSON`: a string unchanged), unless a template already wrote that key, or the
//!   filters drop it: `excludes` first (a field any pattern matches is dropped), then `includes`
//!   (a field no pattern matches is dropped); Go regular expressions, unanchored
//!   (`regexp.MatchString`);
//! - `_raw` (the JSON of Vault's whole response) is written unless `excludeRaw`, or the
//!   operator's `--global-transformation-options=exclude-raw` (also `VSO_GLOBAL_TRANSFORMATION_OPTIONS`,
//!   `main.go`), which is not on the VaultStaticSecret and so is never known here;
//! - `transformationRefs` bring templates and filters from SecretTransformation objects, which
//!   vault-seed does not read: with one, only the inline templates' keys are known.
//!
//! A template error, a duplicate name or a field named `_raw` fails the whole sync
//! (`SecretDataBuilderError`, `TransformationError`): VSO then writes nothing, and the
//! VaultStaticSecret is not Ready, which its own check reports.

use serde_json::Value;

/// `spec.destination.transformation`, as far as it decides the destination Secret's keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Transformation {
    /// `templates`: each destination key and its text (`None`: no text, or not a string).
    pub templates: Vec<(String, Option<String>)>,
    /// `includes`: patterns a field must match to be kept.
    pub includes: Vec<String>,
    /// `excludes`: patterns that drop the fields they match.
    pub excludes: Vec<String>,
    /// `transformationRefs`, as `namespace/name` (the namespace as written, else none).
    pub refs: Vec<String>,
    /// `excludeRaw`.
    pub exclude_raw: bool,
    /// A field of it is not of the shape VSO's CRD gives it: which (never taken as empty).
    pub bad: Option<&'static str>,
}

/// Where one key of the destination Secret takes its value from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// The KV field of this name, its value as it is: the key is the field (no template writes
    /// that key), or a template that is only `{{ get .Secrets "field" }}` (also `index .Secrets
    /// "field"`, `.Secrets.field`, Go's `{{-`/`-}}` trims).
    Field(String),
    /// Rendered by a template that is more than one plain reference, or not known.
    Rendered,
}

/// The keys VSO writes into the destination Secret for a KV secret with given fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationKeys {
    /// Keys VSO surely writes (without `_raw`), sorted, each with where its value comes from.
    pub keys: Vec<(String, KeySource)>,
    /// VSO writes `_raw` too, unless its global `exclude-raw` option is on.
    pub raw: bool,
    /// When the key set is only partly known, why: keys may exist beyond `keys`, and fields
    /// may be written or dropped.
    pub partial: Option<String>,
    /// Fields of the KV secret that the filters surely drop and that no template names: their
    /// values never reach the Secret.
    pub dropped: Vec<String>,
}

impl DestinationKeys {
    /// Each key that is exactly the value of one KV field, with that field:
    /// `(secret key, field)`. A later comparison of the Secret's values with Vault's takes only
    /// these; every other key is rendered or not known.
    pub fn plain(&self) -> Vec<(String, String)> {
        self.keys
            .iter()
            .filter_map(|(k, s)| match s {
                KeySource::Field(f) => Some((k.clone(), f.clone())),
                KeySource::Rendered => None,
            })
            .collect()
    }
}

/// Read `spec.destination.transformation` (absent or `{}`: none).
pub fn transformation_of(obj: &Value) -> Transformation {
    let mut t = Transformation::default();
    let Some(v) = obj.pointer("/spec/destination/transformation") else {
        return t;
    };
    let mut bad = |field| {
        t.bad.get_or_insert(field);
    };
    let mut templates = Vec::new();
    match v.get("templates") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (key, tmpl) in m {
                let text = tmpl.get("text").and_then(Value::as_str).map(str::to_string);
                templates.push((key.clone(), text));
            }
        }
        Some(_) => bad("spec.destination.transformation.templates"),
    }
    let mut strings = |field: &'static str, name: &str| -> Vec<String> {
        match v.get(name) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(_) => {
                bad(field);
                Vec::new()
            }
        }
    };
    let includes = strings("spec.destination.transformation.includes", "includes");
    let excludes = strings("spec.destination.transformation.excludes", "excludes");
    let refs = match v.get("transformationRefs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|r| {
                let name = r.get("name").and_then(Value::as_str).unwrap_or("?");
                match r.get("namespace").and_then(Value::as_str) {
                    Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
                    _ => name.to_string(),
                }
            })
            .collect(),
        Some(_) => {
            bad("spec.destination.transformation.transformationRefs");
            vec!["?".to_string()]
        }
    };
    templates.sort();
    Transformation {
        templates,
        includes,
        excludes,
        refs,
        exclude_raw: v
            .get("excludeRaw")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        bad: t.bad,
    }
}

impl Transformation {
    /// Whether it changes anything about the keys (a transformation of `{}`, which VSO's own
    /// finalizer update stores, does not).
    pub fn changes_keys(&self) -> bool {
        !self.templates.is_empty()
            || !self.includes.is_empty()
            || !self.excludes.is_empty()
            || !self.refs.is_empty()
            || self.bad.is_some()
    }

    /// The keys VSO writes for a KV secret with `fields` (VSO's rule above).
    pub fn destination_keys(&self, fields: &[&str]) -> DestinationKeys {
        let mut out = DestinationKeys {
            raw: !self.exclude_raw,
            ..DestinationKeys::default()
        };
        let written: Vec<&(String, Option<String>)> = self
            .templates
            .iter()
            .filter(|(k, _)| !k.is_empty())
            .collect();
        for (key, text) in &written {
            // With a SecretTransformation, one of its templates may write the same key.
            let source = match (self.refs.is_empty(), text.as_deref().and_then(plain_field)) {
                (true, Some(f)) => KeySource::Field(f),
                _ => KeySource::Rendered,
            };
            out.keys.push((key.clone(), source));
        }
        out.partial = if let Some(field) = self.bad {
            Some(format!("`{field}` is not of the shape VSO's CRD gives it"))
        } else if !self.refs.is_empty() {
            Some(format!(
                "it takes templates and filters from SecretTransformation `{}`, which vault-seed does not read",
                self.refs.join("`, `")
            ))
        } else {
            let unsure = self
                .excludes
                .iter()
                .chain(&self.includes)
                .find(|p| matcher(p).is_none());
            unsure.map(|p| format!("pattern `{p}` is not one vault-seed evaluates as Go does"))
        };
        if out.partial.is_some() {
            out.keys.sort_by(|a, b| a.0.cmp(&b.0));
            return out;
        }
        for field in fields {
            if written.iter().any(|(k, _)| k == field) {
                continue;
            }
            if self.keeps(field) {
                out.keys
                    .push((field.to_string(), KeySource::Field(field.to_string())));
            } else if !self.mentioned(field) {
                out.dropped.push(field.to_string());
            }
        }
        out.keys.sort_by(|a, b| a.0.cmp(&b.0));
        out.dropped.sort();
        out
    }

    /// Whether a template (source-only ones too) may read `field`: its name is in the text, or
    /// the text is not known.
    fn mentioned(&self, field: &str) -> bool {
        self.templates
            .iter()
            .any(|(_, text)| text.as_deref().is_none_or(|t| t.contains(field)))
    }

    /// Whether the filters keep `field` (`FilterData`); every pattern compiles ([`matcher`]).
    fn keeps(&self, field: &str) -> bool {
        let any = |pats: &[String]| {
            pats.iter()
                .any(|p| matcher(p).is_some_and(|r| r.is_match(field)))
        };
        if any(&self.excludes) {
            return false;
        }
        self.includes.is_empty() || any(&self.includes)
    }
}

/// A pattern as Go's `regexp` reads it, when Rust's `regex` reads it the same way on a field
/// name (ASCII letters, digits, `_`, `-`, `.`: `spec::load::names::check_segment`); `None`
/// when it does not compile or uses syntax the two read differently (Rust's class set
/// operations `&&`, `--`, `~~` and nested classes, which Go takes literally; `\<`, `\>`,
/// `\b{...}` word boundaries and `{,n}`, which Go takes literally; flags other than `i`, `m`,
/// `s`, `U`). On ASCII text both engines' Perl classes (`\d`, `\w`, `\s`, `\b`) agree.
fn matcher(pattern: &str) -> Option<regex::Regex> {
    if !go_reads_it_alike(pattern) {
        return None;
    }
    regex::Regex::new(pattern).ok()
}

/// The syntax check of [`matcher`].
fn go_reads_it_alike(p: &str) -> bool {
    let chars: Vec<char> = p.chars().collect();
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\\' => {
                if matches!(next, Some('<' | '>')) {
                    return false;
                }
                if matches!(next, Some('b' | 'B')) && chars.get(i + 2) == Some(&'{') {
                    return false;
                }
                i += 2;
                continue;
            }
            '[' if in_class => {
                if next != Some(':') {
                    return false;
                }
                // A POSIX class `[:alpha:]`: skip to its end.
                match chars[i + 1..].windows(2).position(|w| w == [':', ']']) {
                    Some(end) => i += end + 3,
                    None => return false,
                }
                continue;
            }
            '[' => {
                in_class = true;
                // `[]a]` and `[^]a]`: a `]` first is a literal.
                if next == Some('^') {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    i += 1;
                }
            }
            ']' if in_class => in_class = false,
            '&' | '-' | '~' if in_class && next == Some(c) => return false,
            '{' if !in_class && next == Some(',') => return false,
            '(' if !in_class && next == Some('?') => {
                let flags: String = chars[i + 2..]
                    .iter()
                    .take_while(|f| f.is_ascii_alphabetic() || **f == '-')
                    .collect();
                if flags
                    .chars()
                    .any(|f| !matches!(f, 'i' | 'm' | 's' | 'U' | '-'))
                {
                    // `(?P<name>` is both engines' named group.
                    if !(flags == "P" && chars.get(i + 3) == Some(&'<')) {
                        return false;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    !in_class
}

/// The KV field a template text is exactly the value of: one action that is `get .Secrets
/// "f"`, `index .Secrets "f"` or `.Secrets.f`, with nothing around it but whitespace that Go's
/// trim markers (`{{- `, ` -}}`) remove. Go's `text/template` prints a string value as it is;
/// `get` is sprig's (`template/funcs.go`). Anything else (a pipe, a second action, text, a
/// trailing newline from a YAML block) is rendered.
pub fn plain_field(text: &str) -> Option<String> {
    let open = text.find("{{")?;
    let (before, rest) = text.split_at(open);
    let rest = &rest[2..];
    let close = rest.find("}}")?;
    let (action, after) = (&rest[..close], &rest[close + 2..]);
    let trim_left = action.starts_with("- ");
    let trim_right = action.ends_with(" -");
    let surrounding_ok = |s: &str, trimmed: bool| s.is_empty() || (trimmed && s.trim().is_empty());
    if !surrounding_ok(before, trim_left) || !surrounding_ok(after, trim_right) {
        return None;
    }
    let mut inner = action;
    if trim_left {
        inner = &inner[2..];
    }
    if trim_right {
        inner = &inner[..inner.len() - 2];
    }
    let words: Vec<&str> = inner.split_whitespace().collect();
    match words.as_slice() {
        ["get" | "index", ".Secrets", literal] => go_string(literal),
        [chain] => {
            let name = chain.strip_prefix(".Secrets.")?;
            let mut chars = name.chars();
            let first = chars.next()?;
            ((first.is_ascii_alphabetic() || first == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| name.to_string())
        }
        _ => None,
    }
}

/// A Go string literal without escapes: `"f"` or `` `f` ``.
fn go_string(literal: &str) -> Option<String> {
    let body = literal
        .strip_prefix('"')
        .and_then(|l| l.strip_suffix('"'))
        .filter(|b| !b.contains(['\\', '"']))
        .or_else(|| {
            literal
                .strip_prefix('`')
                .and_then(|l| l.strip_suffix('`'))
                .filter(|b| !b.contains('`'))
        })?;
    (!body.is_empty()).then(|| body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(transformation: Value) -> Transformation {
        transformation_of(&json!({"spec": {"destination": {"transformation": transformation}}}))
    }

    fn keys(d: &DestinationKeys) -> Vec<&str> {
        d.keys.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn no_transformation_writes_every_field_and_raw() {
        let t = of(json!({}));
        assert!(!t.changes_keys());
        let d = t.destination_keys(&["password", "user"]);
        assert_eq!(keys(&d), ["password", "user"]);
        assert!(d.raw && d.partial.is_none() && d.dropped.is_empty());
        assert_eq!(
            d.plain(),
            [
                ("password".into(), "password".into()),
                ("user".into(), "user".into())
            ]
        );
        let none = transformation_of(&json!({"spec": {"destination": {"name": "x"}}}));
        assert_eq!(none, Transformation::default());
    }

    /// The fixtures' README's rename: `masterkey` from `password`, every field excluded, no `_raw`.
    #[test]
    fn a_template_renames_a_field_and_excludes_drop_the_rest() {
        let t = of(json!({
            "templates": {"masterkey": {"text": "{{- get .Secrets \"password\" -}}"}},
            "excludes": [".*"],
            "excludeRaw": true,
        }));
        assert!(t.changes_keys());
        let d = t.destination_keys(&["password"]);
        assert_eq!(
            d.keys,
            [("masterkey".into(), KeySource::Field("password".into()))]
        );
        assert!(!d.raw && d.partial.is_none());
        // `password` is read by the template: not dropped.
        assert!(d.dropped.is_empty());
        let d = t.destination_keys(&["password", "unused"]);
        assert_eq!(d.dropped, ["unused"]);
    }

    #[test]
    fn a_template_key_wins_over_the_field_of_its_name_and_rendered_text_is_not_plain() {
        let t = of(json!({
            "templates": {
                "password": {"text": "{{ get .Secrets \"password\" | upper }}"},
                "url": {"text": "postgres://u:{{ .Secrets.password }}@db/x"},
            },
        }));
        let d = t.destination_keys(&["password", "user"]);
        assert_eq!(
            d.keys,
            [
                ("password".into(), KeySource::Rendered),
                ("url".into(), KeySource::Rendered),
                ("user".into(), KeySource::Field("user".into())),
            ]
        );
        assert_eq!(d.plain(), [("user".into(), "user".into())]);
    }

    #[test]
    fn includes_keep_only_what_they_match_after_excludes() {
        let t = of(json!({"includes": ["^DB_"], "excludes": ["_OLD$"]}));
        let d = t.destination_keys(&["DB_PASSWORD", "DB_PASSWORD_OLD", "API_KEY"]);
        assert_eq!(keys(&d), ["DB_PASSWORD"]);
        assert_eq!(d.dropped, ["API_KEY", "DB_PASSWORD_OLD"]);
        // Unanchored, as Go's MatchString: `word` matches inside `password`.
        let d = of(json!({"excludes": ["word"]})).destination_keys(&["password", "user"]);
        assert_eq!(keys(&d), ["user"]);
    }

    #[test]
    fn refs_and_patterns_read_otherwise_leave_the_key_set_partly_known() {
        let t = of(json!({
            "templates": {"masterkey": {"text": "{{ get .Secrets \"password\" }}"}},
            "transformationRefs": [{"name": "shared", "namespace": "platform"}],
        }));
        let d = t.destination_keys(&["password"]);
        assert_eq!(d.keys, [("masterkey".into(), KeySource::Rendered)]);
        assert!(d
            .partial
            .unwrap()
            .contains("SecretTransformation `platform/shared`"));
        for p in [
            "[a&&b]",
            "[a[b]]",
            r"\<pass",
            r"\bpass\b{end}",
            "a{,2}",
            "(?x) a",
            "(",
            "[a",
        ] {
            let d = of(json!({"excludes": [p]})).destination_keys(&["password"]);
            assert!(d.keys.is_empty(), "{p}");
            assert!(d.partial.is_some(), "{p}");
        }
        for p in [
            r"^[[:alpha:]_]+$",
            "(?i)PASS",
            "(?P<n>x)|pass",
            r"\bpass",
            "[]a]",
            "[-a]",
            r"\d{2,}",
        ] {
            assert!(matcher(p).is_some(), "{p}");
        }
        let bad = of(json!({"includes": "password"}));
        assert!(bad.changes_keys());
        assert!(bad
            .destination_keys(&["password"])
            .partial
            .unwrap()
            .contains("includes"));
    }

    #[test]
    fn a_plain_reference_is_one_action_and_nothing_else() {
        for (text, field) in [
            ("{{ get .Secrets \"password\" }}", Some("password")),
            ("{{- get .Secrets `password` -}}", Some("password")),
            ("  {{- index .Secrets \"a-b.c\" -}}\n", Some("a-b.c")),
            ("{{ .Secrets.password }}", Some("password")),
            ("{{get .Secrets \"password\"}}", Some("password")),
            ("{{ get .Secrets \"password\" }}\n", None),
            ("\n{{ get .Secrets \"password\" -}}", None),
            ("x{{ get .Secrets \"password\" }}", None),
            ("{{ get .Secrets \"password\" | b64enc }}", None),
            ("{{ get .Secrets \"pass\\\"word\" }}", None),
            ("{{ .Secrets.password }}{{ .Secrets.user }}", None),
            ("{{ .Secrets.a.b }}", None),
            ("{{ get .Metadata \"version\" }}", None),
            ("{{ template \"x\" . }}", None),
            ("password", None),
        ] {
            assert_eq!(plain_field(text).as_deref(), field, "{text:?}");
        }
    }
}
