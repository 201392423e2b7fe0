//! One YAML document to the JSON the API server stores, read as Kubernetes reads it
//! (`sigs.k8s.io/yaml`, which decodes with go-yaml v2 and converts to JSON), within a budget.
//!
//! - Merge keys (`<<`) are expanded at every level, as go-yaml v2's `decoder.mapping` does: the
//!   entries of a mapping are set in document order, each later one overwriting an earlier one
//!   of the same key, and `<<: MAP` sets all of MAP's entries at its place; `<<: [A, B]` sets B's
//!   then A's, so the first mapping wins. A value that is neither a mapping nor a sequence of
//!   mappings is an error (go-yaml: "map merge requires map or sequence of maps as the value").
//!   A quoted `"<<"` is taken as a merge key too (serde cannot tell it apart): it can only add
//!   what is read, never hide it.
//! - Scalar keys become strings, tags are dropped, as before.
//! - Every node built, aliases' copies included, is counted against a budget shared by the
//!   whole input, and so are the bytes of strings: an alias repeated many times or a mapping of
//!   millions of keys is refused as it is built, not after.
//!
//! The JSON is built as serde_yaml walks its events: there is no serde_yaml value in between.
//! Nesting is bounded by serde_yaml (128 levels, an error beyond), and merging is a loop over
//! values already built, so nothing here recurses further.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// What is left to build: nodes and string bytes, for all the input together.
#[derive(Debug)]
pub struct Budget {
    nodes: Cell<usize>,
    bytes: Cell<usize>,
    exceeded: Cell<bool>,
}

impl Budget {
    /// A budget of `nodes` nodes and `bytes` bytes of strings.
    pub fn new(nodes: usize, bytes: usize) -> Budget {
        Budget {
            nodes: Cell::new(nodes),
            bytes: Cell::new(bytes),
            exceeded: Cell::new(false),
        }
    }

    /// Nodes left.
    pub fn nodes_left(&self) -> usize {
        self.nodes.get()
    }

    /// Whether a conversion failed because the budget ran out.
    pub fn exceeded(&self) -> bool {
        self.exceeded.get()
    }

    fn take<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        match (
            self.nodes.get().checked_sub(1),
            self.bytes.get().checked_sub(bytes),
        ) {
            (Some(n), Some(b)) => {
                self.nodes.set(n);
                self.bytes.set(b);
                Ok(())
            }
            _ => {
                self.exceeded.set(true);
                Err(E::custom("the input holds more YAML than vault-seed reads"))
            }
        }
    }
}

/// Why a document could not be converted.
#[derive(Debug)]
pub enum Error {
    /// Not valid YAML, or not convertible (a key that is not a scalar, a bad merge).
    Yaml(serde_yaml::Error),
    /// The budget ran out.
    TooMuch,
}

/// Parse one document (text without `---` markers) into JSON.
pub fn to_json(text: &str, budget: &Budget) -> Result<Value, Error> {
    let de = serde_yaml::Deserializer::from_str(text);
    match Node(budget).deserialize(de) {
        Ok(v) => Ok(v),
        Err(_) if budget.exceeded() => Err(Error::TooMuch),
        Err(e) => Err(Error::Yaml(e)),
    }
}

#[derive(Clone, Copy)]
struct Node<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::from(i))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::from(u))
    }

    // Integers beyond 64 bits: go-yaml v2 reads them as floats.
    fn visit_i128<E: de::Error>(self, i: i128) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(float(i as f64))
    }

    fn visit_u128<E: de::Error>(self, u: u128) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(float(u as f64))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(float(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.0.take(s.len())?;
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        self.0.take(s.len())?;
        Ok(Value::String(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.take(0)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.take(0)?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.take(0)?;
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            let value = map.next_value_seed(self)?;
            if key == "<<" {
                merge(&mut out, value).map_err(de::Error::custom)?;
            } else {
                out.insert(key, value);
            }
        }
        Ok(Value::Object(out))
    }

    // A tagged node (`!foo x`): the tag is dropped, as the API server's JSON has none.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (_tag, content): (String, _) = data.variant()?;
        de::VariantAccess::newtype_variant_seed(content, self)
    }
}

/// go-yaml v2's `decoder.merge`: set a mapping's entries, or those of a sequence of mappings
/// from the last to the first, so that the first wins.
fn merge(out: &mut Map<String, Value>, value: Value) -> Result<(), &'static str> {
    const WANT: &str = "map merge requires map or sequence of maps as the value";
    let maps = match value {
        Value::Object(m) => vec![m],
        Value::Array(items) => items
            .into_iter()
            .rev()
            .map(|v| match v {
                Value::Object(m) => Ok(m),
                _ => Err(WANT),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(WANT),
    };
    for m in maps {
        out.extend(m);
    }
    Ok(())
}

/// A mapping key: a scalar, as a string (`sigs.k8s.io/yaml` converts them so).
struct Key<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping key that is a scalar")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<String, E> {
        self.visit_string(b.to_string())
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<String, E> {
        self.visit_string(i.to_string())
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<String, E> {
        self.visit_string(u.to_string())
    }

    fn visit_i128<E: de::Error>(self, i: i128) -> Result<String, E> {
        self.visit_string(i.to_string())
    }

    fn visit_u128<E: de::Error>(self, u: u128) -> Result<String, E> {
        self.visit_string(u.to_string())
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<String, E> {
        self.visit_string(serde_yaml::Number::from(f).to_string())
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        self.visit_string(s.to_string())
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<String, E> {
        self.0.take(s.len())?;
        Ok(s)
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        self.visit_string("null".to_string())
    }

    fn visit_none<E: de::Error>(self) -> Result<String, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(de::Error::custom(
            "a mapping has a key that is not a scalar",
        ))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(de::Error::custom(
            "a mapping has a key that is not a scalar",
        ))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<String, A::Error> {
        let (_tag, content): (String, _) = data.variant()?;
        de::VariantAccess::newtype_variant_seed(content, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Value {
        to_json(text, &Budget::new(1 << 20, 1 << 20)).unwrap()
    }

    #[test]
    fn scalars_keys_and_tags_as_the_api_server_stores_them() {
        assert_eq!(
            read("a: 1\nb: -2\nc: 1.5\nd: true\ne: ~\nf: !custom x\n80: http\ntrue: y\n"),
            json!({"a": 1, "b": -2, "c": 1.5, "d": true, "e": null, "f": "x", "80": "http", "true": "y"})
        );
        // A repeated key: the last wins, as in go-yaml v2 (not strict) and so in kubectl.
        assert_eq!(
            read("envFrom: [{secretRef: {name: s}}]\nenvFrom: []\n"),
            json!({"envFrom": []})
        );
        let e = to_json("{[a]: b}\n", &Budget::new(100, 100)).unwrap_err();
        assert!(
            matches!(&e, Error::Yaml(e) if e.to_string().contains("key")),
            "{e:?}"
        );
    }

    #[test]
    fn merge_keys_are_expanded_at_every_level_as_go_yaml_v2_does() {
        let v = read(
            "\
base: &base {envFrom: [{secretRef: {name: s}}], name: base}
other: &other {name: other, image: o}
one:
  <<: *base
  name: mine
nested:
  spec:
    containers:
    - <<: *base
chain:
  <<: {<<: *base, image: chained}
list:
  <<: [*other, *base]
explicit_first:
  name: mine
  <<: *base
",
        );
        let s = json!([{"secretRef": {"name": "s"}}]);
        assert_eq!(v["one"], json!({"envFrom": s, "name": "mine"}));
        assert_eq!(
            v["nested"]["spec"]["containers"][0],
            json!({"envFrom": s, "name": "base"})
        );
        assert_eq!(
            v["chain"],
            json!({"envFrom": s, "name": "base", "image": "chained"})
        );
        // In a sequence the first mapping wins.
        assert_eq!(
            v["list"],
            json!({"envFrom": s, "name": "other", "image": "o"})
        );
        // Entries are set in document order: a later merge overwrites an earlier key.
        assert_eq!(v["explicit_first"], json!({"envFrom": s, "name": "base"}));
        assert!(!v.to_string().contains("<<"), "{v}");
    }

    #[test]
    fn merging_a_scalar_is_an_error() {
        for text in ["a:\n  <<: 3\n", "a:\n  <<: [{x: 1}, 2]\n", "a:\n  <<:\n"] {
            let e = to_json(text, &Budget::new(100, 100)).unwrap_err();
            assert!(
                matches!(&e, Error::Yaml(e) if e.to_string().contains("map merge requires")),
                "{text}: {e:?}"
            );
        }
    }

    #[test]
    fn deep_merges_are_an_error_not_a_stack_overflow() {
        let depth = 1_000;
        let text = format!("{}x: 1{}", "<<: {".repeat(depth), "}".repeat(depth));
        assert!(matches!(
            to_json(&text, &Budget::new(usize::MAX, usize::MAX)),
            Err(Error::Yaml(_))
        ));
    }

    #[test]
    fn the_budget_counts_copies_made_by_aliases_and_merges() {
        // Ten entries, copied by a hundred aliases: 2,100 nodes from a few lines.
        let mut text = String::from("a: &a {");
        text.push_str(
            &(0..10)
                .map(|i| format!("k{i}: v"))
                .collect::<Vec<_>>()
                .join(", "),
        );
        text.push_str("}\nb: [");
        text.push_str(&vec!["*a"; 100].join(", "));
        text.push_str("]\nc: {<<: *a}\n");
        let budget = Budget::new(2_200, 1 << 20);
        assert!(to_json(&text, &budget).is_ok());
        let budget = Budget::new(2_000, 1 << 20);
        assert!(matches!(to_json(&text, &budget), Err(Error::TooMuch)));
        assert!(budget.exceeded());
        // Bytes of strings count too: a long string copied by aliases.
        let long = format!("a: &a {}\nb: [*a, *a, *a, *a]\n", "x".repeat(1000));
        assert!(matches!(
            to_json(&long, &Budget::new(100, 4_000)),
            Err(Error::TooMuch)
        ));
        assert!(to_json(&long, &Budget::new(100, 6_000)).is_ok());
    }
}
