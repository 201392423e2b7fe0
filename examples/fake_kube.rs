//! The tests' fake Kubernetes API server (`tests/suite/common/fake_kube.rs`) as a program, for
//! `bench/verify-scale`: it serves a synthetic platform of `--apps` applications, ten to a
//! namespace, each an ExternalSecret mapping its six keys through one ClusterSecretStore, its
//! target Secret holding the values Vault has (`--values`), and a Deployment reading it through
//! `envFrom` with its ReplicaSet and two pods started after the Secret's data changed. It prints
//! `kubeconfig <path>`, serves until its standard input closes, then prints each request pattern
//! it received and how many times (`<count> <METHOD> <path pattern>`).
//!
//!   fake_kube --apps N --vault URL --values FILE --at RFC3339 --started RFC3339

// The bench uses a few of the tests' helpers; the rest is the tests'.
#[allow(dead_code)]
#[path = "../tests/suite/common/fake_kube.rs"]
mod fake_kube;

use std::collections::BTreeMap;
use std::io::{Read, Write};

use serde_json::json;

/// The six keys of each application: (Vault secret, field).
const KEYS: [(&str, &str); 6] = [
    ("SECURITY__API_KEY_SALT", "password"),
    ("SECURITY__MASTER_ENCRYPTION_KEY", "password"),
    ("APP__CORE_SERVICES_MACHINE_TOKEN", "password"),
    ("ZITADEL_MASTERKEY", "password"),
    ("IAM_SERVICE__PAT", "value"),
    ("HATCHET__CLIENT_TOKEN", "value"),
];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| -> anyhow::Result<String> {
        let at = args
            .iter()
            .position(|a| a == name)
            .ok_or_else(|| anyhow::anyhow!("missing {name}"))?;
        args.get(at + 1)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("{name} needs a value"))
    };
    let apps: usize = arg("--apps")?.parse()?;
    let values: BTreeMap<String, BTreeMap<String, String>> =
        serde_json::from_str(&std::fs::read_to_string(arg("--values")?)?)?;
    let (at, started) = (arg("--at")?, arg("--started")?);
    let kube = fake_kube::FakeKube::start();
    kube.put(fake_kube::at_vault(
        fake_kube::cluster_secret_store("vault-backend", true, "Valid", "store validated"),
        &arg("--vault")?,
    ));
    for i in 1..=apps {
        put_app(&kube, i, &values, &at, &started);
    }
    println!("kubeconfig {}", kube.kubeconfig().display());
    std::io::stdout().flush()?;
    std::io::stdin().read_to_end(&mut Vec::new())?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in kube.requests() {
        *counts.entry(pattern(&r)).or_default() += 1;
    }
    for (p, n) in counts {
        println!("{n} {p}");
    }
    Ok(())
}

/// Application `i`: `app-NNNNN` in namespace `apps-NNNN` (ten a namespace).
fn put_app(
    kube: &fake_kube::FakeKube,
    i: usize,
    values: &BTreeMap<String, BTreeMap<String, String>>,
    at: &str,
    started: &str,
) {
    let app = format!("app-{i:05}");
    let ns = format!("apps-{:04}", (i - 1) / 10);
    let es = format!("{app}-secret");
    let paths: Vec<(String, &str)> = KEYS
        .iter()
        .map(|(k, field)| (format!("ask/{app}/bench/{k}"), *field))
        .collect();
    let refs: Vec<(&str, &str, Option<&str>)> = KEYS
        .iter()
        .zip(&paths)
        .map(|((k, _), (path, field))| (*k, path.as_str(), Some(*field)))
        .collect();
    kube.put(
        fake_kube::external_secret(&ns, &es, &refs)
            .store("ClusterSecretStore", "vault-backend")
            .ready_synced(at),
    );
    let held = values.get(&app);
    let data: Vec<(&str, &str)> = KEYS
        .iter()
        .map(|(k, _)| {
            let v = held.and_then(|h| h.get(*k)).map_or("", String::as_str);
            (*k, v)
        })
        .collect();
    let manager = format!("externalsecrets.external-secrets.io/{es}");
    kube.put(fake_kube::with_data_manager(
        fake_kube::secret(&ns, &es, &data),
        &manager,
        at,
    ));
    let pod = json!({"containers": [{"name": "app", "envFrom": [{"secretRef": {"name": es}}]}]});
    let deployment = fake_kube::workload("Deployment", &ns, &app, pod);
    kube.put(deployment.clone());
    for p in ["a", "b"] {
        kube.run(&deployment, &format!("{app}-5d8f7c9b6-{p}"), started);
    }
}

/// A request as a pattern: namespace and object names replaced, a continued page marked.
fn pattern(r: &fake_kube::SeenRequest) -> String {
    let segs: Vec<&str> = r.path.trim_matches('/').split('/').collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        out.push(segs[i].to_string());
        if segs[i] == "namespaces" && i + 1 < segs.len() {
            out.push("{ns}".into());
            i += 1;
        }
        i += 1;
    }
    // `/api/v1/namespaces/{ns}/<plural>/<name>`, `/apis/<g>/<v>/namespaces/{ns}/<plural>/<name>`.
    let named = match out.first().map(String::as_str) {
        Some("api") => out.len() == 6,
        Some("apis") => out.len() == 7 || (out.len() == 5 && out[3] != "namespaces"),
        _ => false,
    };
    if named {
        if let Some(last) = out.last_mut() {
            *last = "{name}".into();
        }
    }
    let continued = if r.query.contains("continue=") {
        " (continued page)"
    } else {
        ""
    };
    format!("{} /{}{continued}", r.method, out.join("/"))
}
