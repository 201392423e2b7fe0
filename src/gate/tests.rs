use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};

use super::*;
use crate::generate::{Derived, Generator, KeyType, IMPORT_MARKER};
use crate::spec::{Field, Rotation, Target};

fn secret(v: &str) -> SecretString {
    SecretString::from(v.to_string())
}

/// A target with these fields (the path is `secret/app/dev/S`).
fn target(fields: Vec<Field>, fixed: bool) -> Target {
    let t = crate::write::replace::tests::target("app", "S", &[]);
    let mut t = t;
    t.fields = Arc::from(fields);
    t.fixed = fixed;
    t
}

fn held(fields: &[(&str, &str)], version: u64) -> Held {
    Held {
        version,
        live: true,
        fields: fields
            .iter()
            .map(|(k, v)| (k.to_string(), FieldValue::Text(secret(v))))
            .collect(),
        ..Held::default()
    }
}

fn codes(r: Result<Approved, Vec<Refusal>>) -> Vec<&'static str> {
    match r {
        Ok(_) => Vec::new(),
        Err(refused) => refused
            .iter()
            .map(|r| {
                // The JSON's tag (serde's name of the variant) is the code the docs list.
                assert_eq!(serde_json::to_value(r).unwrap()["code"], r.code());
                r.code()
            })
            .collect(),
    }
}

fn uuid(name: &str) -> Field {
    Field::new(name, Generator::Uuid)
}

fn placeholder(name: &str) -> Field {
    Field::new(
        name,
        Generator::Placeholder {
            marker: "placeholder".into(),
        },
    )
}

const U1: &str = "0b5e4b38-5a2f-4a8b-9d0e-1f2a3b4c5d6e";
const U2: &str = "1c6f5c49-6b3a-4b9c-8e1f-2a3b4c5d6e7f";

/// Issue 42, case 1: a fixed secret that holds its value under another name gains no field,
/// whichever command asks; and a fixed value never changes.
#[test]
fn a_fixed_secret_never_gains_or_changes_a_field() {
    let t = target(vec![uuid("masterkey"), uuid("ADMIN_PASSWORD")], true);
    let h = held(&[("password", U1)], 3);
    for intent in [
        Intent::Set { force: false },
        Intent::Set { force: true },
        Intent::Import { force: true },
        Intent::Extend,
        Intent::Follow,
    ] {
        let r = check(&t, &h, intent, vec![("masterkey".into(), secret(U2))]);
        assert_eq!(codes(r), ["fixed-lacks"], "{intent:?}");
    }
    let h = held(&[("masterkey", U1), ("ADMIN_PASSWORD", U1)], 3);
    for intent in [
        Intent::Set { force: true },
        Intent::Import { force: true },
        Intent::Follow,
    ] {
        let r = check(&t, &h, intent, vec![("masterkey".into(), secret(U2))]);
        assert_eq!(codes(r), ["fixed-changes"], "{intent:?}");
    }
    // The same value is no change.
    let r = check(
        &t,
        &h,
        Intent::Set { force: false },
        vec![("masterkey".into(), secret(U1))],
    );
    assert!(r.is_ok());
    // Only apply creates a fixed secret, whole.
    let r = check(
        &t,
        &Held::default(),
        Intent::Import { force: false },
        vec![("masterkey".into(), secret(U1))],
    );
    assert_eq!(codes(r), ["fixed-not-created"]);
}

/// A fixed field's marker is filled in, once.
#[test]
fn a_fixed_placeholder_is_filled_in_once() {
    let mut f = placeholder("pat");
    f.rotation = Rotation::Never;
    let t = target(vec![f], false);
    let h = held(&[("pat", "placeholder")], 1);
    assert!(check(
        &t,
        &h,
        Intent::Set { force: false },
        vec![("pat".into(), secret("real"))]
    )
    .is_ok());
    let h = held(&[("pat", "real")], 2);
    let r = check(
        &t,
        &h,
        Intent::Set { force: true },
        vec![("pat".into(), secret("other"))],
    );
    assert_eq!(codes(r), ["fixed-changes"]);
}

/// A real value is replaced only with force (or by rotate and follow-ups); a marker never
/// replaces one, and a person never gives the marker as the value.
#[test]
fn real_values_and_markers() {
    let t = target(vec![placeholder("pat")], false);
    let h = held(&[("pat", "real")], 2);
    let r = check(
        &t,
        &h,
        Intent::Set { force: false },
        vec![("pat".into(), secret("new"))],
    );
    assert_eq!(codes(r), ["real-value"]);
    assert!(check(
        &t,
        &h,
        Intent::Set { force: true },
        vec![("pat".into(), secret("new"))]
    )
    .is_ok());
    for intent in [Intent::Set { force: true }, Intent::Follow, Intent::Rotate] {
        let r = check(&t, &h, intent, vec![("pat".into(), secret("placeholder"))]);
        assert!(codes(r).contains(&"marker"), "{intent:?}");
    }
    let h = held(&[("pat", "placeholder")], 1);
    let r = check(
        &t,
        &h,
        Intent::Set { force: false },
        vec![("pat".into(), secret("placeholder"))],
    );
    assert!(r.is_ok(), "the same marker is no change");
    let given = refuse_value(
        &t,
        &h,
        Intent::Set { force: false },
        "pat",
        &secret("placeholder"),
    );
    assert_eq!(
        given.iter().map(Refusal::code).collect::<Vec<_>>(),
        ["marker"],
        "but a person giving the marker is told"
    );
    let h = held(&[], 1);
    let r = check(
        &t,
        &h,
        Intent::Set { force: false },
        vec![("pat".into(), secret("placeholder"))],
    );
    assert_eq!(codes(r), ["marker"]);
    // Issue 42, case 4: import's marker is never stored over a real value, even with --force.
    let imported = Field::new(
        "pw",
        Generator::FromSecret {
            namespace: "db".into(),
            name: "app".into(),
            key: "password".into(),
        },
    );
    let t = target(vec![imported], false);
    let h = held(&[("pw", "a-real-password")], 4);
    let r = check(
        &t,
        &h,
        Intent::Import { force: true },
        vec![("pw".into(), secret(IMPORT_MARKER))],
    );
    assert_eq!(codes(r), ["marker"]);
}

/// Issue 42, case 3: a keyring never holds more than `keep` previous keys after a write.
#[test]
fn a_keyring_longer_than_keep_is_refused() {
    let mut f = Field::new("k", Generator::Fernet);
    f.rotation = Rotation::Keyring { keep: 2 };
    let t = target(vec![f], false);
    let key = || {
        Generator::Fernet
            .generate()
            .unwrap()
            .expose_secret()
            .to_string()
    };
    let ring = |n: usize| secret(&(0..n).map(|_| key()).collect::<Vec<_>>().join(","));
    let h = held(&[("k", &key())], 1);
    assert!(check(
        &t,
        &h,
        Intent::Set { force: true },
        vec![("k".into(), ring(3))]
    )
    .is_ok());
    let r = check(
        &t,
        &h,
        Intent::Set { force: true },
        vec![("k".into(), ring(4))],
    );
    assert_eq!(codes(r), ["invalid"]);
}

/// Issue 42, case 2: an input never gets a new value while a stored value made from it stays.
#[test]
fn no_key_is_made_under_an_existing_certificate() {
    let k = Field::new("k", Generator::Key(KeyType::EcdsaP256));
    let c = Field::new(
        "c",
        Generator::Derived(Derived::X509 {
            key: "k".into(),
            cn: "x".into(),
            sans: vec![],
            days: 30,
        }),
    );
    let p = Field::new(
        "p",
        Generator::Derived(Derived::PublicKey { from: "k".into() }),
    );
    let t = target(vec![k, c, p], false);
    let h = held(&[("c", "-----BEGIN CERTIFICATE-----")], 1);
    let key = Generator::Key(KeyType::EcdsaP256).generate().unwrap();
    let r = check(
        &t,
        &h,
        Intent::Extend,
        vec![("k".into(), key.clone()), ("p".into(), secret("pub"))],
    );
    assert_eq!(codes(r), ["derived-stale"]);
    assert_eq!(
        refuse_change(&t, &h, Intent::Extend, &["k".into(), "p".into()])
            .iter()
            .map(Refusal::code)
            .collect::<Vec<_>>(),
        ["derived-stale"],
        "plan predicts it without a value"
    );
    // rotate makes the certificate again in the same write: allowed.
    let h = held(&[("k", "old"), ("c", "cert"), ("p", "pub")], 2);
    let r = check(
        &t,
        &h,
        Intent::Rotate,
        vec![
            ("k".into(), key.clone()),
            ("c".into(), secret("cert2")),
            ("p".into(), secret("pub2")),
        ],
    );
    assert!(r.is_ok());
    // ... but not when it leaves one out.
    let r = check(
        &t,
        &h,
        Intent::Rotate,
        vec![("k".into(), key), ("p".into(), secret("pub2"))],
    );
    assert_eq!(codes(r), ["derived-stale"]);
}

/// The approved data keeps the fields held and not written, and checks-and-sets against the
/// version read.
#[test]
fn the_approved_data_is_the_whole_new_version() {
    let t = target(vec![placeholder("a"), uuid("b")], false);
    let h = held(&[("a", "placeholder"), ("b", U1), ("extra", "kept")], 7);
    let a = check(
        &t,
        &h,
        Intent::Set { force: false },
        vec![("a".into(), secret("real"))],
    )
    .unwrap_or_else(|r| panic!("{r:?}"));
    assert_eq!(a.base_version(), 7);
    let mut names: Vec<&str> = a.data.iter().map(|(k, _)| k.as_str()).collect();
    names.sort();
    assert_eq!(names, ["a", "b", "extra"]);
}

/// A secret with a field that is not a string is not rewritten.
#[test]
fn a_secret_with_a_non_string_field_is_not_rewritten() {
    let t = target(vec![placeholder("a")], false);
    let mut h = held(&[("a", "placeholder")], 1);
    h.fields.insert("n".into(), FieldValue::NotText("a number"));
    let r = check(
        &t,
        &h,
        Intent::Set { force: false },
        vec![("a".into(), secret("real"))],
    );
    assert_eq!(codes(r), ["not-text"]);
}
