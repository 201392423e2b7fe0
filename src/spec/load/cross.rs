//! The checks across every spec loaded: per environment, paths and the names `set` and
//! `rotate` accept, each with one owner.

use super::*;

/// A secret of the spec set: (spec index, secret index), as `u32`s: the cross-file checks hold
/// one per path and field.
pub(super) type Owner = (u32, u32);

/// Per environment, across every spec that defines it: two secrets at one Vault path, and two
/// secrets or fields that `set` and `rotate` could not tell apart (secret `a.b` field `c`, secret
/// `a` field `b.c`). Each pair is reported once, however many environments it appears in.
///
/// One environment at a time: its targets made once, and a map from each path, and each name
/// `set` and `rotate` accept, to its first owner.
#[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
pub(super) fn check_environments(specs: &[Spec], diags: &mut Vec<Diagnostic>) {
    let env_names: BTreeSet<&str> = specs
        .iter()
        .flat_map(|s| s.environments.keys().map(String::as_str))
        .collect();
    let secret = |(s, k): Owner| &specs[s as usize].secrets[k as usize];
    // (kind, first, later) -> (the first environment's diagnostic, how many more environments)
    let mut found: HashMap<(bool, Owner, Owner), (Diagnostic, usize)> = HashMap::new();
    let mut order = Vec::new();
    let mut note =
        |key: (bool, Owner, Owner), make: &dyn Fn() -> Diagnostic| match found.get_mut(&key) {
            Some((_, more)) => *more += 1,
            None => {
                order.push(key);
                found.insert(key, (make(), 0));
            }
        };
    // The source problems already reported (owner, field, message): once, not per environment.
    let mut sources_seen: HashSet<(Owner, String, String)> = HashSet::new();
    for env in env_names {
        let mut targets: Vec<(Owner, Target)> = Vec::new();
        for (si, spec) in specs.iter().enumerate() {
            let Some(e) = spec.environments.get(env) else {
                continue;
            };
            let origin = spec.origin().in_env(env);
            for (ki, s) in spec.secrets.iter().enumerate() {
                if let Some(t) = spec.target(&origin, e, s) {
                    targets.push(((si as u32, ki as u32), t));
                }
            }
        }
        check_sources(env, specs, &targets, &mut sources_seen, diags);
        // Each path's first owner, by the path.
        // Sized at once: a map grown by doubling leaves its old tables in the allocator's heap.
        let mut paths: HashMap<String, Owner> = HashMap::with_capacity(targets.len());
        for (later, t) in &targets {
            let path = t.full_path();
            match paths.get(&path) {
                Some(&first) => note((true, first, *later), &|| {
                    Diagnostic::at(
                        secret(*later).location.clone(),
                        format!("duplicate path `{}` in environment `{env}`", shown(&path)),
                    )
                    .with_help(format!(
                        "also defined at {}; each path must have one owner",
                        secret(first).location
                    ))
                }),
                None => {
                    paths.insert(path, *later);
                }
            }
        }
        // What `set`/`rotate` accept for a secret: its path (the whole secret), and its path, a
        // dot and a field. Two different secrets answering to one name are ambiguous; a path
        // claimed twice is the duplicate above. Each name's first claim: (target, field).
        let field_name = |(t, f): (usize, Option<usize>)| f.map(|i| &*targets[t].1.fields[i].name);
        drop(paths);
        // Two claims can be alike only through a dot in a path or a field name. Without one,
        // a claim is a path (no dot) or a path, a dot and a field (one dot, read one way only):
        // claims alike are then one path and one field, the duplicate above. The common case, so
        // no name (a string per field) is made for it.
        let dotted = |t: &Target| {
            t.mount().contains('.')
                || t.path.contains('.')
                || t.fields.iter().any(|f| f.name.contains('.'))
        };
        if !targets.iter().any(|(_, t)| dotted(t)) {
            continue;
        }
        let n_names = targets.iter().map(|(_, t)| 1 + t.fields.len()).sum();
        let mut names: HashMap<String, (usize, Option<usize>)> = HashMap::with_capacity(n_names);
        for (ti, (_, t)) in targets.iter().enumerate() {
            let full = t.full_path();
            let fields = t.fields.iter().enumerate();
            let claims = fields.map(|(i, f)| (format!("{full}.{}", f.name), Some(i)));
            for (name, lf) in std::iter::once((full.clone(), None)).chain(claims) {
                let Some(&(fi, ff)) = names.get(&name) else {
                    names.insert(name, (ti, lf));
                    continue;
                };
                let (first, later) = (targets[fi].0, targets[ti].0);
                // The same field (or none) on both sides means the same path: a duplicate, above.
                if first == later || field_name((fi, ff)) == field_name((ti, lf)) {
                    continue;
                }
                let what = |claim: (usize, Option<usize>)| {
                    let s = secret(targets[claim.0].0);
                    match field_name(claim) {
                        Some(field) => {
                            format!("secret `{}` field `{}`", shown(&s.name), shown(field))
                        }
                        None => format!("secret `{}`", shown(&s.name)),
                    }
                };
                note((false, first, later), &|| {
                    Diagnostic::at(
                        secret(later).location.clone(),
                        format!(
                            "`set` and `rotate` could not tell apart {} and {}: both are `{}` in environment `{env}`",
                            what((fi, ff)),
                            what((ti, lf)),
                            shown(&name)
                        ),
                    )
                    .with_help(format!(
                        "the other is at {}; rename a secret or a field (dots in field names are fine where they clash with nothing)",
                        secret(first).location
                    ))
                });
            }
        }
    }
    for key in order {
        let (mut d, more) = found.remove(&key).unwrap_or_else(|| unreachable!());
        if more > 0 {
            d.message.push_str(&format!(" and {more} other(s)"));
        }
        diags.push(d);
    }
}

/// In `env`, every field of another secret that a derived field names (`copy`,
/// `{SECRET.field}`) is found, as [`crate::spec::find_source`] finds it at run time, and has that
/// field; and no field is made, through others and across secrets, from itself.
#[allow(clippy::too_many_lines)] // one spec table read key by key, each problem at its span
fn check_sources(
    env: &str,
    specs: &[Spec],
    targets: &[(Owner, Target)],
    seen: &mut HashSet<(Owner, String, String)>,
    diags: &mut Vec<Diagnostic>,
) {
    let all: Vec<&Target> = targets.iter().map(|(_, t)| t).collect();
    let secret = |(s, k): Owner| &specs[s as usize].secrets[k as usize];
    let mut report = |owner: Owner, field: &str, message: String, help: Option<String>| {
        if seen.insert((owner, field.to_string(), message.clone())) {
            let d = Diagnostic::at(secret(owner).location.clone(), message);
            diags.push(match help {
                Some(h) => d.with_help(h),
                None => d,
            });
        }
    };
    // Nodes: (target, field); a node's index is its place in this list.
    let mut node: HashMap<(usize, &str), usize> = HashMap::new();
    let mut nodes: Vec<(usize, &str)> = Vec::new();
    for (ti, (_, t)) in targets.iter().enumerate() {
        if t.fields.iter().any(|f| f.generator.derived().is_some()) {
            for f in t.fields.iter() {
                node.insert((ti, &f.name), nodes.len());
                nodes.push((ti, &f.name));
            }
        }
    }
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut crossing: HashSet<(usize, usize)> = HashSet::new();
    for (ti, (owner, t)) in targets.iter().enumerate() {
        for f in t.fields.iter() {
            let Some(d) = f.generator.derived() else {
                continue;
            };
            let from = node[&(ti, f.name.as_str())];
            for r in d.inputs() {
                let Some(name) = &r.secret else {
                    if let Some(&to) = node.get(&(ti, r.field.as_str())) {
                        edges[from].push(to);
                    }
                    continue;
                };
                let at = format!("field `{}` of secret `{}`", shown(&f.name), shown(&t.name));
                let source = match crate::spec::find_source(&all, t, name) {
                    Ok(s) => s,
                    Err(crate::spec::SourceLookup::Absent) => {
                        // `{a.b}` read as secret `a`, field `b`, where the secret has a field `a.b`.
                        let dotted = format!("{name}.{}", r.field);
                        let help = if t.fields.iter().any(|sf| sf.name == dotted) {
                            format!("secret `{}` has a field `{}`: write `{{.{}}}` for it (a leading `.` names a field of the same secret by its whole name)", shown(&t.name), shown(&dotted), shown(&dotted))
                        } else {
                            "name a secret of this spec, or of another spec that defines the environment, as `SECRET.field`".into()
                        };
                        report(*owner, &f.name, format!("{at} is made from `{}`, but environment `{env}` has no secret `{}`", shown(&r.to_string()), shown(name)), Some(help));
                        continue;
                    }
                    Err(crate::spec::SourceLookup::Ambiguous(files)) => {
                        report(*owner, &f.name, format!("{at} is made from `{}`, and environment `{env}` has a secret `{}` in more than one other spec: {}", shown(&r.to_string()), shown(name), files.join(", ")), Some("rename one of them; a secret of the field's own spec is found first".into()));
                        continue;
                    }
                };
                let Some(sf) = source.fields.iter().find(|sf| sf.name == r.field) else {
                    let names: Vec<String> = source.fields.iter().map(|f| f.name.clone()).collect();
                    report(*owner, &f.name, format!("{at} is made from `{}`, but secret `{}` has no field `{}` in environment `{env}`", shown(&r.to_string()), shown(name), shown(&r.field)), Some(format!("its fields: {}", crate::spec::few(&names))));
                    continue;
                };
                let si = all
                    .iter()
                    .position(|c| std::ptr::eq(*c, source))
                    .unwrap_or(ti);
                let to = match node.get(&(si, sf.name.as_str())) {
                    Some(&n) => n,
                    None => {
                        // A plain field of a secret with no derived ones: a leaf.
                        let n = nodes.len();
                        node.insert((si, &sf.name), n);
                        nodes.push((si, &sf.name));
                        edges.push(Vec::new());
                        n
                    }
                };
                edges[from].push(to);
                crossing.insert((from, to));
            }
        }
    }
    if let Some(cycle) = super::derived::find_cycle(&edges) {
        let across = cycle
            .iter()
            .zip(cycle.iter().cycle().skip(1))
            .any(|(a, b)| crossing.contains(&(*a, *b)));
        // A cycle inside one secret was reported where its fields are read.
        if across {
            let named: Vec<String> = cycle
                .iter()
                .map(|&n| {
                    let (ti, field) = nodes[n];
                    format!("`{}.{}`", shown(&targets[ti].1.name), shown(field))
                })
                .collect();
            let (owner, first) = (targets[nodes[cycle[0]].0].0, nodes[cycle[0]].1);
            report(
                owner,
                first,
                format!(
                    "fields are made from each other in environment `{env}`: {} -> {}",
                    named.join(" -> "),
                    named[0]
                ),
                Some(
                    "one field of the cycle must be generated, not copied or made from the others"
                        .into(),
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_text(secrets: &str) -> Vec<(PathBuf, Vec<u8>)> {
        let text = format!(
            "[vault]\nmount = \"secret\"\npath = \"app/{{env}}\"\n[environments.dev]\n[environments.prod]\n{secrets}"
        );
        vec![(PathBuf::from("specs/app.toml"), text.into_bytes())]
    }

    #[test]
    fn many_secrets_in_one_file_load_and_clashes_are_found_once() {
        let mut secrets = String::new();
        for i in 0..20_000 {
            secrets.push_str(&format!(
                "[secrets.S{i}]\ndescription = \"d\"\nfields.v = {{ generator = \"uuid\" }}\n"
            ));
        }
        let set = load_sources(spec_text(&secrets), Vec::new()).unwrap();
        assert_eq!(set.specs[0].secrets.len(), 20_000);
        // `S1.v` (the whole secret) against `S1` field `v`: one problem, not one per environment.
        secrets.push_str(
            "[secrets.\"S1.v\"]\ndescription = \"d\"\nfields.x = { generator = \"uuid\" }\n",
        );
        let Err(LoadError::Invalid(d)) = load_sources(spec_text(&secrets), Vec::new()) else {
            panic!("the clash was not found");
        };
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message
                .contains("secret `S1` field `v` and secret `S1.v`"),
            "{}",
            d[0]
        );
        assert!(
            d[0].message
                .ends_with("in environment `dev` and 1 other(s)"),
            "{}",
            d[0]
        );
    }
}
