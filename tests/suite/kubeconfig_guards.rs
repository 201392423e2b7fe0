//! The kubeconfig's cluster, judged before anything is sent (issue 28 item 13): plain `http://`
//! off loopback is refused as Vault's address is (exit 2, no request reaches the API server);
//! `insecure-skip-tls-verify: true` is said once on stderr. A fake API server listening on this
//! machine's own address off loopback shows by its request log whether anything was sent there.

use crate::common;
use crate::verify::{healthy_cluster, vault_with, RUNBOOK_POLICY};

use std::net::{IpAddr, UdpSocket};
use std::path::{Path, PathBuf};

use common::fake_kube::{kubeconfig_yaml, FakeKube};
use common::{OpenBao, Run};

fn verify(bao: &OpenBao, kubeconfig: &Path, args: &[&str]) -> Run {
    Run::new(bao)
        .real_specs()
        .args(["verify", "auh1-dev", "--kubeconfig"])
        .arg(kubeconfig)
        .args(args)
}

fn write(dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, yaml).unwrap();
    p
}

const WARNING: &str = "TLS verification of the Kubernetes API at";

/// This machine's address on the interface of its default route (no packet is sent: a UDP
/// socket's `connect` only picks the route).
fn own_address() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    socket
        .connect("198.51.100.1:9")
        .expect("a route off loopback (this test needs one)");
    let ip = socket.local_addr().unwrap().ip();
    assert!(!ip.is_loopback(), "{ip}");
    ip
}

#[test]
fn plain_http_to_the_cluster_off_loopback_is_refused_before_anything_is_sent() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = healthy_cluster(&bao);
    let dir = tempfile::tempdir().unwrap();
    // The control: loopback over plain http is allowed, and reaches its server.
    verify(&bao, &kube.kubeconfig(), &[]).output();
    assert!(!kube.requests().is_empty());
    let ip = own_address();
    let off = FakeKube::start_on(ip);
    for (kube, host) in [
        (&off, ip.to_string()),
        // Spellings that look local but that the loopback check does not take.
        (&kube, "localhost.".to_string()),
        (&kube, "[::ffff:127.0.0.1]".to_string()),
    ] {
        let before = kube.requests().len();
        let server = format!("http://{host}:{}", kube.port);
        let kc = write(
            dir.path(),
            "kc",
            &kubeconfig_yaml(&server, &kube.token, "fake"),
        );
        for json in [false, true] {
            let out = verify(&bao, &kc, if json { &["-o", "json"] } else { &[] })
                .status(2)
                .output();
            let err = out.stderr_text();
            assert_eq!(
                kube.requests().len(),
                before,
                "{server}: a request reached the API server: {:?}",
                kube.requests()
            );
            assert!(
                err.contains(&format!(
                    "error: would send the Kubernetes credentials over plain http:// to `{server}`, which is not loopback"
                )),
                "{err}"
            );
            assert!(
                err.contains("help: give the cluster its https:// address"),
                "{err}"
            );
            if json {
                assert_eq!(out.json()["ok"], false);
            }
        }
    }
}

#[test]
fn a_cluster_whose_certificate_is_not_checked_is_said_once() {
    let bao = vault_with(RUNBOOK_POLICY);
    let kube = FakeKube::start_tls();
    let dir = tempfile::tempdir().unwrap();
    // The kubeconfig the server wrote trusts its CA: no warning. The cluster is empty, so the
    // run reached it and found none of the objects: not done.
    let out = verify(&bao, &kube.kubeconfig(), &[])
        .status(1)
        .stdout_has("ExternalSecret `ask/core-service-secret` does not exist")
        .output();
    assert!(
        !out.stderr_text().contains(WARNING),
        "{}",
        out.stderr_text()
    );
    let yaml = kubeconfig_yaml(&kube.addr, &kube.token, "fake").replace(
        "    server: ",
        "    insecure-skip-tls-verify: true\n    server: ",
    );
    let kc = write(dir.path(), "kc", &yaml);
    let before = kube.requests().len();
    let out = verify(&bao, &kc, &[]).status(1).output();
    let err = out.stderr_text();
    assert_eq!(
        err.matches(WARNING).count(),
        1,
        "said once, however many parts use the cluster: {err}"
    );
    assert!(
        err.contains(&format!(
            "warning: TLS verification of the Kubernetes API at `{}` is off (insecure-skip-tls-verify in the kubeconfig): anyone on the path can read the cluster credentials",
            kube.addr
        )),
        "{err}"
    );
    // It still runs, as kubectl would.
    assert!(kube.requests().len() > before, "{err}");
}
