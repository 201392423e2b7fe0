//! Reads by LIST: the real `Cluster` lists a kind once for the namespaces asked, page by page
//! as client-go's pager (`tools/pager/pager.go`), and answers per-object reads from it.

use crate::common;

use std::collections::BTreeSet;

use common::fake_kube::{external_secret, pod_of, secret, FakeKube, SeenRequest};
use vault_seed::kube::{KubeError, ReadKind};

/// ExternalSecrets `es-0`..`es-4` in `apps` and `es-0`..`es-2` in `web`, synced (the shape of
/// tests/fixtures/eso/, as ESO v2.9.0 writes its status), each with its target Secret.
fn put_platform(kube: &FakeKube) {
    for (ns, n) in [("apps", 5), ("web", 3)] {
        for i in 0..n {
            let name = format!("es-{i}");
            kube.put(
                external_secret(ns, &name, &[("KEY", "app/path", Some("key"))])
                    .ready_synced("2026-03-01T10:00:00Z"),
            );
            kube.put(secret(ns, &name, &[("KEY", "value")]));
        }
    }
}

fn namespaces(all: &[&str]) -> BTreeSet<String> {
    all.iter().map(|s| s.to_string()).collect()
}

async fn list_external_secrets(cluster: &vault_seed::kube::Cluster) {
    let all = namespaces(&["apps", "web"]);
    cluster
        .read_by_list(&[ReadKind::ExternalSecrets], &all, None, 4)
        .await;
}

fn lists_of(kube: &FakeKube, plural: &str) -> Vec<SeenRequest> {
    kube.requests()
        .into_iter()
        .filter(|r| r.path.ends_with(&format!("/{plural}")))
        .collect()
}

/// Every ExternalSecret of both namespaces is read, found or known absent, with no GET.
async fn every_one_is_answered(cluster: &vault_seed::kube::Cluster, kube: &FakeKube) {
    let before = kube.requests().len();
    for (ns, n) in [("apps", 5), ("web", 3)] {
        for i in 0..n {
            let es = cluster
                .external_secret(ns, &format!("es-{i}"))
                .await
                .unwrap();
            assert_eq!(es.unwrap().name, format!("es-{i}"));
        }
    }
    assert!(cluster
        .external_secret("web", "es-9")
        .await
        .unwrap()
        .is_none());
    assert_eq!(kube.requests().len(), before, "{:?}", kube.requests());
}

#[tokio::test]
async fn the_pager_walks_every_page_of_one_list_across_namespaces() {
    let kube = FakeKube::start();
    put_platform(&kube);
    kube.cap_pages(3);
    let cluster = kube.connect().await;
    list_external_secrets(&cluster).await;
    let lists = lists_of(&kube, "externalsecrets");
    // 8 objects at most 3 a page: three requests, each after the first with the token before.
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(lists
        .iter()
        .all(|r| r.path == "/apis/external-secrets.io/v1/externalsecrets"));
    assert!(lists.iter().all(|r| r.query.contains("limit=500")));
    assert!(!lists[0].query.contains("continue="));
    assert!(lists[1..].iter().all(|r| r.query.contains("continue=")));
    every_one_is_answered(&cluster, &kube).await;
}

#[tokio::test]
async fn an_expired_continue_token_starts_the_list_again_in_one_request() {
    let kube = FakeKube::start();
    put_platform(&kube);
    kube.cap_pages(3);
    // The first page's token expires before the second page is asked for.
    kube.expire_continue_after(0);
    let cluster = kube.connect().await;
    list_external_secrets(&cluster).await;
    let lists = lists_of(&kube, "externalsecrets");
    // Page one, the 410 `Expired` of page two, then one unpaged LIST (pager.go's full list).
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(lists[1].query.contains("continue="));
    assert!(
        !lists[2].query.contains("limit=") && !lists[2].query.contains("continue="),
        "{:?}",
        lists[2]
    );
    // Nothing of the pages before is kept twice, and nothing is missing.
    every_one_is_answered(&cluster, &kube).await;
}

#[tokio::test]
async fn a_list_across_namespaces_that_rbac_refuses_is_made_per_namespace() {
    let kube = FakeKube::start();
    put_platform(&kube);
    kube.deny_cluster_wide("externalsecrets");
    let cluster = kube.connect().await;
    list_external_secrets(&cluster).await;
    let mut paths: Vec<String> = lists_of(&kube, "externalsecrets")
        .into_iter()
        .map(|r| r.path)
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/apis/external-secrets.io/v1/externalsecrets",
            "/apis/external-secrets.io/v1/namespaces/apps/externalsecrets",
            "/apis/external-secrets.io/v1/namespaces/web/externalsecrets",
        ]
    );
    every_one_is_answered(&cluster, &kube).await;
    // The refusal is remembered: the next read by list goes per namespace at once.
    cluster.forget(&[ReadKind::ExternalSecrets], &namespaces(&["apps", "web"]));
    let before = kube.requests().len();
    list_external_secrets(&cluster).await;
    assert_eq!(kube.requests().len(), before + 2);
}

#[tokio::test]
async fn a_kind_the_cluster_does_not_serve_is_not_asked_for_again() {
    let kube = FakeKube::start();
    put_platform(&kube);
    kube.without_vso();
    let cluster = kube.connect().await;
    let all = namespaces(&["apps", "web"]);
    cluster
        .read_by_list(&[ReadKind::VaultStaticSecrets], &all, None, 4)
        .await;
    let asked = kube.requests().len();
    cluster
        .read_by_list(&[ReadKind::VaultStaticSecrets], &all, None, 4)
        .await;
    let err = cluster.vault_static_secret("apps", "x").await.unwrap_err();
    assert!(matches!(err, KubeError::NotServed { .. }), "{err}");
    assert_eq!(kube.requests().len(), asked, "{:?}", kube.requests());
}

#[tokio::test]
async fn secrets_are_listed_as_metadata_or_as_digests_never_kept_as_values() {
    let kube = FakeKube::start();
    put_platform(&kube);
    let cluster = kube.connect().await;
    let all = namespaces(&["apps", "web"]);
    cluster
        .read_by_list(&[ReadKind::SecretMetadata], &all, None, 4)
        .await;
    let lists = lists_of(&kube, "secrets");
    assert_eq!(lists.len(), 1, "{lists:?}");
    assert_eq!(lists[0].path, "/api/v1/secrets");
    // From the metadata: when the data changed is known; its keys are not, so that is a GET.
    assert!(cluster
        .secret_data_change("apps", "es-1")
        .await
        .unwrap()
        .is_some());
    assert_eq!(lists_of(&kube, "secrets").len(), 1);
    let before = kube.requests().len();
    let digester = vault_seed::base::digest::Digester::new().unwrap();
    let d = cluster
        .secret_digests("apps", "es-1", &digester)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d["KEY"].digest, Some(digester.of(b"value")));
    assert_eq!(kube.requests().len(), before + 1);
    // In full, digested as parsed: every key answered from the one list.
    cluster
        .read_by_list(&[ReadKind::Secrets], &all, Some(&digester), 4)
        .await;
    let before = kube.requests().len();
    let d = cluster
        .secret_digests("web", "es-2", &digester)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d["KEY"].digest, Some(digester.of(b"value")));
    assert_eq!(
        cluster.secret_keys("web", "es-2").await.unwrap(),
        Some(vec!["KEY".to_string()])
    );
    assert_eq!(cluster.secret_keys("web", "nope").await.unwrap(), None);
    assert_eq!(kube.requests().len(), before);
}

/// Pods `p-0`.. in `apps` (3), `apps-b` (2) and `web` (4), and one in `other`, not asked about.
fn put_pods(kube: &FakeKube) {
    for (ns, n) in [("apps", 3), ("apps-b", 2), ("web", 4), ("other", 1)] {
        for i in 0..n {
            kube.put(pod_of(ns, "app", &format!("p-{i}"), "2026-03-01T10:00:00Z"));
        }
    }
}

/// `list_pods_each` over `apps`, `apps-b`, `web` and `empty`, each namespace's pods read (as
/// `verify`'s part `consumers` reads them, while the list goes on) as soon as it is named: the
/// namespaces in the order named, with the pods found then.
async fn pods_as_named(kube: &FakeKube) -> Vec<(String, usize)> {
    let cluster = kube.connect().await;
    let wanted = namespaces(&["apps", "apps-b", "web", "empty"]);
    let (tx, mut rx) = futures::channel::mpsc::unbounded::<String>();
    let (c, wanted) = (&cluster, &wanted);
    let list = async move {
        let ready = move |ns: &str| tx.unbounded_send(ns.to_string()).unwrap();
        c.list_pods_each(wanted, 2, &ready).await;
    };
    let read = async {
        let mut seen = Vec::new();
        while let Some(ns) = futures::StreamExt::next(&mut rx).await {
            let pods = c.pods(&ns, "app=app").await.unwrap();
            seen.push((ns, pods.len()));
        }
        seen
    };
    futures::join!(list, read).1
}

fn named(all: &[(&str, usize)]) -> Vec<(String, usize)> {
    all.iter().map(|(ns, n)| (ns.to_string(), *n)).collect()
}

/// Only the LISTs: no read of a named namespace asked the server (its pods were all kept).
fn only_lists(kube: &FakeKube) -> Vec<String> {
    let pods: Vec<SeenRequest> = lists_of(kube, "pods");
    assert!(
        pods.iter().all(|r| !r.query.contains("labelSelector")),
        "{pods:?}"
    );
    pods.into_iter().map(|r| r.path).collect()
}

#[tokio::test]
async fn pods_listed_across_namespaces_are_handed_over_a_namespace_at_a_time_whole() {
    let kube = FakeKube::start();
    put_pods(&kube);
    kube.cap_pages(2);
    // Each namespace once, as soon as the next began (`other`, not asked about, is passed
    // over), with every pod it has; one with none, at the end.
    let seen = pods_as_named(&kube).await;
    assert_eq!(
        seen,
        named(&[("apps", 3), ("apps-b", 2), ("web", 4), ("empty", 0)])
    );
    // Ten pods of four namespaces at two a page: five pages of one LIST.
    let lists = only_lists(&kube);
    assert_eq!(lists.len(), 5, "{lists:?}");
    assert!(lists.iter().all(|p| p == "/api/v1/pods"), "{lists:?}");
}

#[tokio::test]
async fn after_an_expired_token_a_namespace_handed_over_stands_and_the_rest_come_whole() {
    let kube = FakeKube::start();
    put_pods(&kube);
    kube.cap_pages(2);
    // Page two ends `apps` (handed over) and begins `apps-b`; the token it gives is expired
    // when page three is asked for, and one unpaged LIST follows.
    kube.expire_continue_after(1);
    let seen = pods_as_named(&kube).await;
    assert_eq!(
        seen,
        named(&[("apps", 3), ("apps-b", 2), ("web", 4), ("empty", 0)])
    );
    let lists = lists_of(&kube, "pods");
    assert_eq!(lists.len(), 4, "{lists:?}");
    assert!(lists[2].query.contains("continue="));
    assert!(!lists[3].query.contains("limit="), "{:?}", lists[3]);
    only_lists(&kube);
}

#[tokio::test]
async fn pods_that_rbac_refuses_across_namespaces_are_handed_over_as_each_is_listed() {
    let kube = FakeKube::start();
    put_pods(&kube);
    kube.deny_cluster_wide("pods");
    let mut seen = pods_as_named(&kube).await;
    seen.sort();
    assert_eq!(
        seen,
        named(&[("apps", 3), ("apps-b", 2), ("empty", 0), ("web", 4)])
    );
    let mut lists = only_lists(&kube);
    lists.sort();
    assert_eq!(
        lists,
        [
            "/api/v1/namespaces/apps-b/pods",
            "/api/v1/namespaces/apps/pods",
            "/api/v1/namespaces/empty/pods",
            "/api/v1/namespaces/web/pods",
            "/api/v1/pods",
        ]
    );
}
