//! `verify`'s ExternalSecret rules beyond Ready: a Ready that is not about the current object
//! (generation, `refreshTime`, conditions, deletion, the target Secret), and mappings that
//! deliver something other than the seeded value (a pinned version, no `property`, a decoding,
//! nothing mapped, `dataFrom`, a template). Each through real OpenBao with the real spec applied
//! and the fake API server; each case but the good one exits 1 and says why.

use crate::common;
use crate::verify::{healthy_cluster, vault_value, vault_with, RUNBOOK_POLICY};

use common::fake_kube::FakeKube;
use common::{has, OpenBao, Run};
use serde_json::{json, Value};

const NS: &str = "ask";
const CORE: &str = "core-service-secret";
const SALT: &str = "ask/core-service/auh1-dev/SECURITY__API_KEY_SALT";

/// `verify auh1-dev` against `kube`, with `args`.
fn verify(bao: &OpenBao, kube: &FakeKube, args: &[&str]) -> Run {
    Run::new(bao)
        .real_specs()
        .args(["verify", "auh1-dev"])
        .arg("--kubeconfig")
        .arg(kube.kubeconfig())
        .args(args)
}

/// The seeded environment and the healthy cluster, with `core-service-secret` changed by `f`.
fn with_core(f: impl FnOnce(&mut Value)) -> (OpenBao, FakeKube) {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    kube.update("ExternalSecret", Some(NS), CORE, f);
    (bao, kube)
}

/// `core-service-secret`'s check in `verify -o json`, which exits with `code`.
fn core_check(bao: &OpenBao, kube: &FakeKube, args: &[&str], code: i32) -> Value {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    let doc = verify(bao, kube, &all).status(code).json();
    doc["kube"]["external_secrets"]
        .as_array()
        .expect("external_secrets")
        .iter()
        .find(|e| e["name"] == CORE)
        .expect("core-service-secret's check")
        .clone()
}

/// A time `minutes` from now, RFC 3339.
fn from_now(minutes: i64) -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::minutes(minutes);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// The salt's remoteRef in `core-service-secret` (its first `spec.data` entry).
fn salt_ref(es: &mut Value) -> &mut Value {
    let r = &mut es["spec"]["data"][0]["remoteRef"];
    assert_eq!(r["key"], SALT);
    r
}

#[test]
fn the_healthy_cluster_is_done_and_its_targets_are_checked() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    verify(&bao, &kube, &[])
        .stdout_has("verify auh1-dev: done")
        .output();
    let check = core_check(&bao, &kube, &[], 0);
    assert_eq!(check["ok"], true, "{check:#}");
    assert_eq!(check["target_checked"], true);
    assert_eq!(check["values_match"], true);
    assert_eq!(check["notes"], json!([]));
}

/// What ESO writes is the proof: a Secret holding Vault's values is delivered even when
/// `refreshTime` (whole seconds, the reconcile's start: external-secrets v2.9.0
/// `externalsecret_controller.go`, `markAsDone`) reads as before the write; one holding an
/// older version's value is not, and says which version it holds.
#[test]
fn delivery_is_judged_by_the_values_the_target_secret_holds() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let created = bao.kv_created("secret", SALT);
    let second_before = (created.replace_nanosecond(0).unwrap() - time::Duration::seconds(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["status"]["refreshTime"] = json!(second_before)
    });
    let check = core_check(&bao, &kube, &[], 0);
    assert_eq!(check["ok"], true, "{check:#}");
    assert_eq!(check["values_match"], true);
    // The machine token rotated; ESO has not synced since: the Secret holds version 1's value.
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["status"]["refreshTime"] = json!(from_now(0))
    });
    Run::new(&bao)
        .real_specs()
        .args([
            "rotate",
            "auh1-dev",
            "APP__CORE_SERVICES_MACHINE_TOKEN",
            "--yes",
        ])
        .output();
    let out = verify(&bao, &kube, &[]).status(1).output();
    has(
        &out.stdout_text(),
        "target Secret `ask/core-service-secret` key `APP__CORE_SERVICES_MACHINE_TOKEN` does not hold the value in Vault (version 2): it holds version 1's",
    );
    assert_eq!(core_check(&bao, &kube, &[], 1)["values_match"], false);
    // ESO syncs: done again.
    crate::verify::delivered(&bao, &kube);
    verify(&bao, &kube, &[]).output();
}

// ----- 2. A Ready that is not about the current object -----

#[test]
fn a_ready_for_an_older_generation_is_not_done() {
    // The spec was edited (generation 2); ESO's last sync was of generation 1.
    let (bao, kube) = with_core(|es| es["metadata"]["generation"] = json!(2));
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("ESO has not processed the current spec: it synced generation 1 (`status.syncedResourceVersion`), the object is at generation 2")
        .output();
}

#[test]
fn a_refresh_time_in_the_future_is_not_done() {
    let (bao, kube) = with_core(|es| es["status"]["refreshTime"] = json!(from_now(60)));
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("is later than now")
        .stdout_has("it does not prove a sync")
        .output();
}

#[test]
fn ready_conditions_that_disagree_are_not_done() {
    let (bao, kube) = with_core(|es| {
        let at = es["status"]["refreshTime"].clone();
        let conditions = es["status"]["conditions"].as_array_mut().unwrap();
        conditions.push(json!({
            "lastTransitionTime": at, "message": "could not get secret data from provider",
            "reason": "SecretSyncedError", "status": "False", "type": "Ready",
        }));
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("it has 2 `Ready` conditions that disagree (True, False)")
        .output();
}

#[test]
fn an_external_secret_being_deleted_is_not_done() {
    let (bao, kube) = with_core(|es| {
        es["metadata"]["deletionTimestamp"] = json!("2026-01-02T00:00:00Z");
        es["metadata"]["finalizers"] =
            json!(["externalsecrets.external-secrets.io/externalsecret-cleanup"]);
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("it is being deleted (`deletionTimestamp` 2026-01-02T00:00:00Z)")
        .output();
}

#[test]
fn the_target_named_by_spec_target_name_must_exist_whatever_the_binding_says() {
    // Renamed to a Secret ESO has not written yet; `status.binding` still names the old one.
    let (bao, kube) =
        with_core(|es| es["spec"]["target"]["name"] = json!("core-service-secret-v2"));
    assert_eq!(
        kube.get("ExternalSecret", Some(NS), CORE).unwrap()["status"]["binding"]["name"],
        CORE
    );
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("target Secret `ask/core-service-secret-v2` does not exist")
        .output();
}

#[test]
fn a_target_key_with_an_empty_value_is_not_done() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    kube.update("Secret", Some(NS), CORE, |s| {
        s["data"]["SECURITY__API_KEY_SALT"] = json!("");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has(
            "target Secret `ask/core-service-secret` has empty value(s) for key(s) `SECURITY__API_KEY_SALT`",
        )
        .output();
}

#[test]
fn skipped_target_secrets_are_said_not_checked_never_fine() {
    // A missing target and an empty value are not seen without reading Secrets: said unchecked.
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    kube.update("Secret", Some(NS), "zitadel-secret", |s| {
        s["data"]["masterkey"] = json!("");
    });
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["spec"]["target"]["name"] = json!("nowhere");
    });
    verify(&bao, &kube, &["--skip-target-secrets"])
        .stdout_has(": 2 ExternalSecret(s) Ready and fresh, target Secrets not checked")
        .output();
    verify(&bao, &kube, &["--skip-target-secrets", "--all"])
        .stdout_has("ExternalSecret ask/core-service-secret: Ready (SecretSynced), target Secret not checked")
        .stdout_has("note: target Secret `ask/nowhere` not checked (--skip-target-secrets)")
        .stdout_has("ExternalSecret ask/zitadel-secret: Ready (SecretSynced), target Secret not checked")
        .output();
    assert!(
        !kube.requests().iter().any(|r| r.path.contains("/secrets/")),
        "no Secret read"
    );
    let check = core_check(&bao, &kube, &["--skip-target-secrets"], 0);
    assert_eq!(check["target_checked"], false, "{check:#}");
    assert!(check["notes"][0]
        .as_str()
        .unwrap()
        .contains("not checked (--skip-target-secrets)"));
}

// ----- 3. Mappings that deliver something other than the seeded value -----

#[test]
fn a_version_pinned_before_a_rotate_is_not_done_naming_both_versions() {
    let bao = vault_with(RUNBOOK_POLICY);
    // The real spec never rotates the salt: a second version made by hand, as a person would.
    bao.kv_put("secret", SALT, json!({ "password": "5a17".repeat(16) }));
    assert_eq!(bao.kv_version("secret", SALT), Some(2));
    let kube = healthy_cluster(&bao);
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        salt_ref(es)["version"] = json!("1");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has(format!("remoteRef `{SALT}` pins version 1 (`remoteRef.version`), but the current version in Vault is 2: ESO keeps serving version 1"))
        .output();
    // Pinned to the current version: fine.
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        salt_ref(es)["version"] = json!("2");
    });
    verify(&bao, &kube, &[]).output();
}

#[test]
fn a_remote_ref_without_property_or_with_a_field_the_spec_lacks_is_an_error() {
    let (bao, kube) = with_core(|es| {
        salt_ref(es).as_object_mut().unwrap().remove("property");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has(format!("remoteRef `{SALT}` (secretKey `SECURITY__API_KEY_SALT`) has no `property`: ESO delivers the whole secret as a JSON object, not a value; set `property: password`"))
        .output();
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        salt_ref(es)["property"] = json!("value");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has(format!(
            "remoteRef `{SALT}` property `value` is not a field of the spec"
        ))
        .output();
}

#[test]
fn base64_decoding_of_a_hex_value_is_an_error_and_auto_too() {
    let (bao, kube) = with_core(|es| salt_ref(es)["decodingStrategy"] = json!("Base64"));
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has(format!("remoteRef `{SALT}` property `password`: decodingStrategy `Base64` decodes the value, but generator `hex` makes hex"))
        .output();
    // 64 hex characters read as base64: ESO's Auto decodes them.
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        salt_ref(es)["decodingStrategy"] = json!("Auto");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("decodingStrategy `Auto` decodes the value")
        .output();
    // The Fernet key is URL-safe base64: Base64URL decodes what it was made from.
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        salt_ref(es)["decodingStrategy"] = json!("None");
        let fernet = &mut es["spec"]["data"][1]["remoteRef"];
        assert_eq!(
            fernet["key"],
            "ask/core-service/auh1-dev/SECURITY__MASTER_ENCRYPTION_KEY"
        );
        fernet["decodingStrategy"] = json!("Base64URL");
    });
    // ESO then writes the decoded bytes into the Secret (the API server holds them base64).
    let fernet = vault_value(
        &bao,
        "ask/core-service/auh1-dev/SECURITY__MASTER_ENCRYPTION_KEY",
        "password",
    );
    kube.update("Secret", Some(NS), CORE, |s| {
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::URL_SAFE
            .decode(&fernet)
            .unwrap();
        s["data"]["SECURITY__MASTER_ENCRYPTION_KEY"] =
            json!(base64::engine::general_purpose::STANDARD.encode(raw));
    });
    verify(&bao, &kube, &[]).output();
}

#[test]
fn an_external_secret_that_maps_nothing_is_an_error() {
    let (bao, kube) = with_core(|es| es["spec"]["data"] = json!([]));
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("`spec.data` is empty and there is no `dataFrom`: it maps nothing from Vault")
        .output();
}

#[test]
fn data_from_extract_of_a_spec_path_is_checked_and_find_is_not_judged() {
    // Extract of the salt's path maps its field `password`: a key the target Secret must have.
    let (bao, kube) = with_core(|es| {
        es["spec"]["data"] = json!([]);
        es["spec"]["dataFrom"] = json!([{"extract": {"key": SALT, "conversionStrategy": "Default",
            "decodingStrategy": "None", "metadataPolicy": "None"}}]);
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("target Secret `ask/core-service-secret` lacks key(s) `password`")
        .output();
    let salt = vault_value(&bao, SALT, "password");
    kube.update("Secret", Some(NS), CORE, |s| {
        use base64::Engine as _;
        s["data"]["password"] = json!(base64::engine::general_purpose::STANDARD.encode(&salt));
    });
    verify(&bao, &kube, &[]).output();
    // A path the spec does not have is an error.
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["spec"]["dataFrom"][0]["extract"]["key"] = json!("ask/somewhere-else");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("`dataFrom.extract` key `ask/somewhere-else` is not a path of the spec")
        .output();
    // `find` is said not judged, and fails nothing.
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["spec"]["dataFrom"] = json!([{"find": {"name": {"regexp": "^ask/"}}}]);
    });
    verify(&bao, &kube, &[])
        .stdout_has("note: `dataFrom.find` is not judged")
        .output();
}

#[test]
fn a_template_entry_with_static_text_is_a_warning_naming_the_key() {
    let (bao, kube) = with_core(|es| {
        es["spec"]["target"]["template"] = json!({"engineVersion": "v2", "mergePolicy": "Merge", "data": {
            "SECURITY__API_KEY_SALT": "not-the-salt",
            "SECURITY__MASTER_ENCRYPTION_KEY": "{{ .SECURITY__MASTER_ENCRYPTION_KEY }}",
        }});
    });
    let out = verify(&bao, &kube, &[])
        .stdout_has("note: warning: `target.template.data` entry `SECURITY__API_KEY_SALT` does not read the value fetched for it")
        .output();
    assert!(
        !out.stdout_text()
            .contains("entry `SECURITY__MASTER_ENCRYPTION_KEY`"),
        "{}",
        out.stdout_text()
    );
    assert!(
        !out.stdout_text().contains("not-the-salt"),
        "template text is never shown"
    );
}

// ----- Bad input -----

#[test]
fn malformed_fields_are_named_with_their_object_never_taken_as_matching() {
    let (bao, kube) = with_core(|es| {
        es["status"]["syncedResourceVersion"] = json!("f47fe3c0b255");
        salt_ref(es)["version"] = json!(1);
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("field `/status/syncedResourceVersion` of ExternalSecret `ask/core-service-secret` is not `<generation>-<hash>`: not taken as matching anything")
        .stdout_has("field `/spec/data/0/remoteRef/version` of ExternalSecret `ask/core-service-secret` is not a string")
        .output();
}

/// The whole second Vault created the salt's current version in, and `seconds` after it.
fn salt_second(bao: &OpenBao, seconds: i64) -> String {
    let created = bao
        .kv_created("secret", SALT)
        .replace_nanosecond(0)
        .unwrap();
    (created + time::Duration::seconds(seconds))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// With `spec.target.template.data` and the default `mergePolicy: Replace`, ESO writes only the
/// template's keys (external-secrets v2.9.0
/// `pkg/controllers/externalsecret/externalsecret_controller_template.go`, `ApplyTemplate`;
/// the default in `apis/externalsecrets/v1/externalsecret_types.go`). A key that is one plain
/// reference holds the fetched value, which is compared.
#[test]
fn a_template_writes_only_its_keys_and_a_plain_reference_is_compared() {
    let (bao, kube) = with_core(|es| {
        es["spec"]["target"]["template"] = json!({"engineVersion": "v2", "data": {
            "DB_SALT": "{{ .SECURITY__API_KEY_SALT }}",
            "URL": "https://core/?t={{ .APP__CORE_SERVICES_MACHINE_TOKEN }}",
        }});
    });
    let salt = vault_value(&bao, SALT, "password");
    kube.put(common::fake_kube::secret(
        NS,
        CORE,
        &[("DB_SALT", &salt), ("URL", "https://core/?t=rendered")],
    ));
    let check = core_check(&bao, &kube, &[], 0);
    assert_eq!(check["ok"], true, "{check:#}");
    assert!(
        check["notes"]
            .to_string()
            .contains("key `URL` (rendered by the target's template)"),
        "{check:#}"
    );
    // The template's key holding another value than the one it references: not done.
    kube.update("Secret", Some(NS), CORE, |s| {
        s["data"]["DB_SALT"] = json!("b3RoZXI=");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("key `DB_SALT` does not hold the value in Vault")
        .output();
    // Its twin: a template key the Secret lacks.
    kube.update("Secret", Some(NS), CORE, |s| {
        s["data"].as_object_mut().unwrap().remove("DB_SALT");
    });
    verify(&bao, &kube, &[])
        .status(1)
        .stdout_has("target Secret `ask/core-service-secret` lacks key(s) `DB_SALT`")
        .output();
}

/// `refreshTime` is whole seconds (`metav1.Time`); Vault's `created_time` has nanoseconds. A
/// sync in the write's own second is not "before" it; one a second earlier is. Without the
/// Secret's values (`--skip-target-secrets`) the times are all there is.
#[test]
fn a_sync_in_the_same_second_as_the_write_is_not_before_it() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let same = salt_second(&bao, 0);
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["status"]["refreshTime"] = json!(same)
    });
    let check = core_check(&bao, &kube, &["--skip-target-secrets"], 0);
    assert_eq!(check["ok"], true, "{check:#}");
    let earlier = salt_second(&bao, -1);
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["status"]["refreshTime"] = json!(earlier)
    });
    verify(&bao, &kube, &["--skip-target-secrets"])
        .status(1)
        .stdout_has("the Ready is from before seeding (try --force-sync)")
        .output();
}

/// ESO refreshes a `refreshPolicy: CreatedOnce` ExternalSecret only while it never synced,
/// whatever its annotations (external-secrets v2.9.0 `externalsecret_controller.go`,
/// `shouldRefresh`): no `--force-sync` hint, and `--force-sync` leaves it alone.
#[test]
fn created_once_gets_no_force_sync_hint() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let earlier = salt_second(&bao, -1);
    kube.update("ExternalSecret", Some(NS), CORE, |es| {
        es["spec"]["refreshPolicy"] = json!("CreatedOnce");
        es["status"]["refreshTime"] = json!(earlier);
    });
    let out = verify(&bao, &kube, &["--skip-target-secrets", "--force-sync"])
        .status(1)
        .stdout_has("its `refreshPolicy: CreatedOnce` makes ESO ignore --force-sync")
        .output();
    assert!(!out.stdout_text().contains("try --force-sync"));
    has(
        &out.all_text(),
        "did not annotate ExternalSecret `ask/core-service-secret`: its `refreshPolicy: CreatedOnce` makes ESO ignore force-sync",
    );
    let patched = kube.get("ExternalSecret", Some(NS), CORE).unwrap();
    assert!(patched["metadata"]["annotations"]["force-sync"].is_null());
}

/// Each path is read from Vault once a pass: comparing the target Secrets with Vault uses the
/// reads that judged the values, and reads a path again only for a key that does not hold what
/// was read (then Vault as it is after the Secret was read decides, as the delivery test above
/// shows).
#[test]
fn each_path_is_read_from_vault_once_a_pass() {
    let bao = vault_with(RUNBOOK_POLICY);
    let (proxy, events) = common::proxy::recording(&bao.addr, |_, _| {});
    let kube = healthy_cluster(&bao);
    // The store names the Vault verify talks to: the recording proxy.
    kube.put(common::fake_kube::real_spec_store(&proxy.addr));
    verify(&bao, &kube, &[])
        .addr(&proxy.addr)
        .stdout_has("verify auh1-dev: done")
        .output();
    let mut reads: std::collections::BTreeMap<String, usize> = Default::default();
    for e in events.log() {
        if let Some(path) = e.strip_prefix("sent GET /v1/secret/data/") {
            *reads.entry(path.to_string()).or_default() += 1;
        }
    }
    assert!(reads.contains_key(SALT), "{reads:?}");
    let twice: Vec<_> = reads.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "read more than once: {twice:?}");
}
