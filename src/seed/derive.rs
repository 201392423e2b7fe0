//! Derived fields in the engine: their values made after their inputs, and a stored value judged
//! against its inputs. A derived field is never written without its inputs' values; one whose
//! input is still a placeholder is pending like the placeholder.

use std::collections::{BTreeMap, HashMap};

use secrecy::SecretString;

use crate::base::kv::KvMount;
use crate::generate::{FieldRef, Validity};
use crate::spec::mounts::Mounts;
use crate::spec::{Field, Source, Target};
use crate::vault::{Existing, FieldValue, Vault};

/// Values made for fields, by field name.
pub type Made = Vec<(String, SecretString)>;

/// An input's value and what its own field's generator thinks of it.
type Judged = (SecretString, Validity);

/// The values of other secrets' fields that a target's derived fields are made from, read
/// just before the target is seeded or judged.
#[derive(Default)]
pub struct Outside {
    values: HashMap<FieldRef, Judged>,
}

/// Each source of `t` with its mount, when the mount can be used; `Err` names one that cannot.
pub fn source_mounts(t: &Target, mounts: &Mounts) -> Result<Vec<(Source, KvMount)>, String> {
    let Some(sources) = &t.sources else {
        return Ok(Vec::new());
    };
    sources
        .iter()
        .map(|s| match mounts.get(&s.mount) {
            Some(m) => Ok((s.clone(), m.clone())),
            None => Err(format!(
                "its source `{}` is on mount `{}`, which cannot be used",
                s.full_path(),
                s.mount
            )),
        })
        .collect()
}

/// Read the sources of a target (one read each). Err: which could not be read, and why.
pub async fn read_sources(vault: &Vault, sources: &[(Source, KvMount)]) -> Result<Outside, String> {
    let mut out = Outside::default();
    for (s, mount) in sources {
        let existing = vault
            .kv_read(mount, &s.path)
            .await
            .map_err(|e| format!("cannot read its source `{}`: {e}", s.full_path()))?;
        let Existing::Present(p) = existing else {
            continue;
        };
        for (name, judged) in own_values(&p.fields, &s.fields) {
            let at = FieldRef {
                secret: Some(s.name.to_string()),
                field: name,
            };
            out.values.insert(at, judged);
        }
    }
    Ok(out)
}

/// The inputs of one secret's derived fields: its own fields' values (those stored, and those
/// made in this run), judged by their generators, and [`Outside`]'s.
struct Values<'a> {
    fields: &'a [Field],
    own: HashMap<String, Judged>,
    outside: &'a Outside,
}

impl Values<'_> {
    fn get(&self, r: &FieldRef) -> Option<&Judged> {
        match r.secret {
            None => self.own.get(&r.field),
            Some(_) => self.outside.values.get(r),
        }
    }

    fn add(&mut self, name: &str, v: SecretString) {
        let validity = self
            .fields
            .iter()
            .find(|f| f.name == name)
            .map_or(Validity::Valid, |f| f.validate(&v));
        self.own.insert(name.to_string(), (v, validity));
    }
}

fn own_values(p: &BTreeMap<String, FieldValue>, fields: &[Field]) -> HashMap<String, Judged> {
    let mut own = fields
        .iter()
        .filter_map(|f| match p.get(&f.name) {
            Some(FieldValue::Text(v)) => Some((f.name.clone(), (v.clone(), f.validate(v)))),
            _ => None,
        })
        .collect();
    pending_through(fields, &mut own);
    own
}

/// A derived field made from a pending one (a placeholder still holding its marker, or another
/// field made from one) is pending too, however long the chain.
fn pending_through(fields: &[Field], own: &mut HashMap<String, Judged>) {
    loop {
        let mut changed = false;
        for f in fields {
            let Some(d) = f.generator.derived() else {
                continue;
            };
            let from_pending = d.inputs().iter().any(|r| {
                r.secret.is_none() && matches!(own.get(&r.field), Some((_, Validity::Pending)))
            });
            if let Some((_, v)) = own.get_mut(&f.name) {
                if from_pending && *v != Validity::Pending {
                    *v = Validity::Pending;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
}

/// Values for the fields `wanted` of `t` (all of them for a new path, the missing ones for an
/// existing one whose stored values are `stored`): generated fields first, then each derived
/// field once its inputs have values. The fields that cannot be made yet are returned apart,
/// each with why (an input with no value). Err: the OS's random generator failed.
pub fn make(
    t: &Target,
    wanted: &[&Field],
    stored: &BTreeMap<String, FieldValue>,
    outside: &Outside,
) -> Result<(Made, Vec<(String, String)>), String> {
    let mut values = Values {
        fields: &t.fields,
        own: own_values(stored, &t.fields),
        outside,
    };
    let mut made = Vec::new();
    let mut left: Vec<&Field> = Vec::new();
    for f in wanted {
        if f.generator.derived().is_some() {
            left.push(f);
            continue;
        }
        let v = f.generator.generate().map_err(|e| e.to_string())?;
        values.add(&f.name, v.clone());
        made.push((f.name.clone(), v));
    }
    let left = rounds(&mut values, left, &mut made)?;
    let unmade = left
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                format!(
                    "not written: made from {}, which has no value yet (run again once it has)",
                    absent_inputs(f, &values)
                ),
            )
        })
        .collect();
    Ok((made, unmade))
}

/// Make each derived field of `left` whose inputs all have values, in rounds (a field made in
/// one round is an input of the next); lint rules out cycles, so a round that makes nothing
/// leaves only fields waiting for a value this run cannot make: those are returned.
fn rounds<'f>(
    values: &mut Values<'_>,
    mut left: Vec<&'f Field>,
    made: &mut Made,
) -> Result<Vec<&'f Field>, String> {
    while !left.is_empty() {
        let before = left.len();
        let mut waiting = Vec::new();
        for f in left {
            let d = f.generator.derived().unwrap_or_else(|| unreachable!());
            if !d.inputs().iter().all(|r| values.get(r).is_some()) {
                waiting.push(f);
                continue;
            }
            let v = d
                .make(&|r: &FieldRef| values.get(r).map(|j| j.0.clone()))
                .map_err(|e| format!("field `{}`: {e}", f.name))?;
            values.add(&f.name, v.clone());
            made.push((f.name.clone(), v));
        }
        left = waiting;
        if left.len() == before {
            break;
        }
    }
    Ok(left)
}

/// The inputs of derived field `f` with no value, as "`a`, `b`".
fn absent_inputs(f: &Field, values: &Values<'_>) -> String {
    let d = f.generator.derived().unwrap_or_else(|| unreachable!());
    let absent: Vec<String> = d
        .inputs()
        .iter()
        .filter(|r| values.get(r).is_none())
        .map(|r| format!("`{r}`"))
        .collect();
    absent.join(", ")
}

/// What a stored derived field's inputs say of it ([`judge`]).
pub enum Judgement {
    /// An input is still a placeholder: the field is pending too, and this says on what.
    Pending(String),
    /// It is not what its inputs make: why.
    Disagrees(String),
}

/// What a stored derived field's inputs say of it, beyond its shape: pending when an input is
/// still a placeholder, `Invalid` when it is not what its inputs make, `None` when it agrees or
/// an input has no value to compare with (the input's own result says so).
pub fn judge(
    field: &Field,
    value: &SecretString,
    stored: &BTreeMap<String, FieldValue>,
    fields: &[Field],
    outside: &Outside,
) -> Option<Judgement> {
    let d = field.generator.derived()?;
    let values = Values {
        fields,
        own: own_values(stored, fields),
        outside,
    };
    let pending: Vec<String> = d
        .inputs()
        .iter()
        .filter(|r| matches!(values.get(r), Some((_, Validity::Pending))))
        .map(|r| format!("`{r}`"))
        .collect();
    if !pending.is_empty() {
        return Some(Judgement::Pending(format!(
            "made from {}, still to be filled in; it follows when that is set",
            pending.join(", ")
        )));
    }
    match d.agrees(value, &|r: &FieldRef| values.get(r).map(|j| j.0.clone()))? {
        Validity::Invalid(why) => Some(Judgement::Disagrees(why)),
        Validity::Valid | Validity::Pending => None,
    }
}

/// Which targets of a run wait for others: a target whose derived fields read another secret
/// of the run is seeded after that secret's result is in, so that it reads the value written.
#[derive(Default)]
pub struct Waits {
    /// Per waiting target, how many of its sources' results are not in yet.
    left: HashMap<usize, usize>,
    /// Per source target, the targets waiting for it.
    followers: HashMap<usize, Vec<usize>>,
}

impl Waits {
    /// The waits among `targets` (by index).
    pub fn new(targets: &[Target]) -> Waits {
        let mut w = Waits::default();
        if targets.iter().all(|t| t.sources.is_none()) {
            return w;
        }
        let at: HashMap<(&str, &str), usize> = targets
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.mount(), &*t.path), i))
            .collect();
        for (i, t) in targets.iter().enumerate() {
            for s in t.sources.iter().flat_map(|s| s.iter()) {
                if let Some(&j) = at.get(&(&*s.mount, &*s.path)) {
                    if j != i {
                        *w.left.entry(i).or_default() += 1;
                        w.followers.entry(j).or_default().push(i);
                    }
                }
            }
        }
        w
    }

    /// Whether target `i` still waits for a source's result.
    pub fn waits(&self, i: usize) -> bool {
        self.left.get(&i).is_some_and(|n| *n > 0)
    }

    /// Target `i`'s result is in: the targets that no longer wait.
    pub fn done(&mut self, i: usize) -> Vec<usize> {
        let mut free = Vec::new();
        for f in self.followers.remove(&i).unwrap_or_default() {
            if let Some(n) = self.left.get_mut(&f) {
                *n -= 1;
                if *n == 0 {
                    self.left.remove(&f);
                    free.push(f);
                }
            }
        }
        free
    }
}

/// The derived fields of `t` to make again after its fields `changed` took the values `new`:
/// those made from a changed field, through others too, and `also` (a `rotate` of a derived
/// field itself). Made from the values after the change (`stored`, with `new` over it), each
/// after its inputs. Err: an input with no value, or one a derivation cannot use.
pub fn follow(
    t: &Target,
    stored: &BTreeMap<String, FieldValue>,
    new: &[(String, SecretString)],
    also: &[String],
    outside: &Outside,
) -> Result<Vec<(String, SecretString)>, String> {
    let mut again: Vec<&Field> = t.fields.iter().filter(|f| also.contains(&f.name)).collect();
    loop {
        let before = again.len();
        for f in t.fields.iter() {
            let Some(d) = f.generator.derived() else {
                continue;
            };
            if again.iter().any(|a| a.name == f.name) {
                continue;
            }
            let moved = d.inputs().iter().any(|r| {
                r.secret.is_none()
                    && (new.iter().any(|(n, _)| *n == r.field)
                        || again.iter().any(|a| a.name == r.field))
            });
            if moved {
                again.push(f);
            }
        }
        if again.len() == before {
            break;
        }
    }
    if again.is_empty() {
        return Ok(Vec::new());
    }
    let mut values = Values {
        fields: &t.fields,
        own: own_values(stored, &t.fields),
        outside,
    };
    for (n, v) in new {
        values.add(n, v.clone());
    }
    // Those made again have no value until made: each waits for its inputs.
    for f in &again {
        values.own.remove(&f.name);
    }
    let mut made = Vec::new();
    if let Some(f) = rounds(&mut values, again, &mut made)?.first() {
        return Err(format!(
            "field `{}` is made from {}, which has no value; nothing was written",
            f.name,
            absent_inputs(f, &values)
        ));
    }
    Ok(made)
}

/// Each target's followers (the targets whose derived fields read it: copies, templates), by
/// its mount and path: made once per run, so a source finds its followers without a scan.
pub fn follower_index(targets: &[Target]) -> HashMap<(&str, &str), Vec<usize>> {
    let mut out: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, t) in targets.iter().enumerate() {
        for s in t.sources.iter().flat_map(|s| s.iter()) {
            let at = out.entry((&*s.mount, &*s.path)).or_default();
            if !at.contains(&i) {
                at.push(i);
            }
        }
    }
    out
}
