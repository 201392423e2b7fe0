//! The OpenBao harness works: a real dev server, a KV v2 write and read through vaultrs.

use crate::common;

use std::collections::HashMap;

use vaultrs::client::{VaultClient, VaultClientSettingsBuilder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv2_write_and_read_through_vaultrs() {
    vault_seed::init_crypto();
    let bao = common::OpenBao::dev();
    let client = VaultClient::new(
        VaultClientSettingsBuilder::default()
            .address(&bao.addr)
            .token(&bao.token)
            .build()
            .unwrap(),
    )
    .unwrap();
    let mut data = HashMap::new();
    data.insert("password", "s3cr3t-harness");
    let meta = vaultrs::kv2::set(&client, "secret", "harness/check", &data)
        .await
        .unwrap();
    assert_eq!(meta.version, 1);
    let back: HashMap<String, String> = vaultrs::kv2::read(&client, "secret", "harness/check")
        .await
        .unwrap();
    assert_eq!(back["password"], "s3cr3t-harness");
    // And the same through the raw HTTP API the other tests use to read back.
    let (fields, version) = bao.kv_get("secret", "harness/check").unwrap();
    assert_eq!(
        (fields["password"].as_str(), version),
        (Some("s3cr3t-harness"), 1)
    );
}

#[test]
fn server_stops_on_drop() {
    let addr = {
        let bao = common::OpenBao::dev();
        assert!(common::raw_http(&bao.addr, "GET", "/v1/sys/health", None, None).is_some());
        bao.addr.clone()
    };
    assert!(common::raw_http(&addr, "GET", "/v1/sys/health", None, None).is_none());
}
