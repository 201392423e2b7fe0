//! Finding the cluster the way kubectl does: `--kubeconfig`, else `KUBECONFIG` (a list of files,
//! merged), else `~/.kube/config`, else the pod's service account; `--context` picks the
//! context, else the kubeconfig's `current-context`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::Config;

use super::KubeError;

/// Where the configuration came from, for messages and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A kubeconfig (one file, or `KUBECONFIG`'s list as written), with the context used.
    Kubeconfig {
        /// The file or list.
        path: PathBuf,
        /// The context used.
        context: String,
    },
    /// The pod's service account (or whatever `Config::infer` found).
    Inferred,
}

/// What the process environment says, read once so resolution can be tested without it.
pub(crate) struct Env {
    /// `KUBECONFIG`.
    pub kubeconfig: Option<OsString>,
    /// `HOME` (or `USERPROFILE` on Windows).
    pub home: Option<PathBuf>,
}

impl Env {
    pub(crate) fn from_process() -> Self {
        Env {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME")
                .or_else(|| std::env::var_os("USERPROFILE"))
                .map(PathBuf::from),
        }
    }
}

/// Resolve the configuration to use.
pub(crate) async fn resolve(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    env: &Env,
) -> Result<(Config, Source), KubeError> {
    if let Some(path) = kubeconfig {
        let kc = Kubeconfig::read_from(path).map_err(|source| KubeError::ReadKubeconfig {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        return from_kubeconfig(kc, path.to_path_buf(), context).await;
    }
    if let Some(list) = env.kubeconfig.as_ref().filter(|v| !v.is_empty()) {
        let paths: Vec<PathBuf> = std::env::split_paths(list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        if !paths.is_empty() {
            let label = PathBuf::from(list);
            // kubectl's merge rules: the first file to set a value wins.
            let mut merged = Kubeconfig::default();
            for p in &paths {
                let kc = Kubeconfig::read_from(p).map_err(|source| KubeError::ReadKubeconfig {
                    path: p.clone(),
                    source: Box::new(source),
                })?;
                merged = merged
                    .merge(kc)
                    .map_err(|source| KubeError::ReadKubeconfig {
                        path: label.clone(),
                        source: Box::new(source),
                    })?;
            }
            return from_kubeconfig(merged, label, context).await;
        }
    }
    let default_path = env
        .home
        .as_ref()
        .map(|h| h.join(".kube").join("config"))
        .unwrap_or_else(|| PathBuf::from("~/.kube/config"));
    if default_path.is_file() {
        let kc =
            Kubeconfig::read_from(&default_path).map_err(|source| KubeError::ReadKubeconfig {
                path: default_path.clone(),
                source: Box::new(source),
            })?;
        return from_kubeconfig(kc, default_path, context).await;
    }
    if let Some(context) = context {
        return Err(KubeError::NoKubeconfigForContext {
            context: context.to_string(),
            default_path,
        });
    }
    // No kubeconfig anywhere: the pod's service account, as kube-rs' `Config::infer` falls back
    // to (kube-client `config/mod.rs`); the kubeconfig side it would try first was done above.
    let mut config = Config::incluster().map_err(|source| KubeError::NoConfig {
        default_path,
        source: Box::new(source),
    })?;
    config.apply_debug_overrides();
    Ok((config, Source::Inferred))
}

/// Refuse a cluster reached over plain `http://` off loopback (the same loopback as Vault's:
/// `127.0.0.0/8`, `[::1]`, `localhost`): kubectl would send the bearer token or client
/// certificate's requests there in clear. The address is read as the `url` crate reads it, as
/// [`crate::vault::address`] does; an address it cannot read is not loopback.
/// A loopback cluster's requests through a `proxy-url` off loopback are refused too: they
/// reach the proxy in clear.
pub(crate) fn refuse_plain_http(config: &Config) -> Result<(), KubeError> {
    if config.cluster_url.scheme_str() != Some("http") {
        return Ok(());
    }
    let loopback =
        |uri: &str| reqwest::Url::parse(uri).is_ok_and(|u| crate::vault::address::is_loopback(&u));
    let server = config.cluster_url.to_string();
    let proxy = config.proxy_url.as_ref().map(ToString::to_string);
    let off = match proxy {
        _ if !loopback(&server) => server,
        Some(proxy) if !loopback(&proxy) => proxy,
        _ => return Ok(()),
    };
    Err(KubeError::PlainHttp {
        server: off.trim_end_matches('/').to_string(),
    })
}

async fn from_kubeconfig(
    kc: Kubeconfig,
    path: PathBuf,
    context: Option<&str>,
) -> Result<(Config, Source), KubeError> {
    let known: Vec<String> = kc.contexts.iter().map(|c| c.name.clone()).collect();
    let chosen = match context {
        Some(c) => c.to_string(),
        None => match kc.current_context.as_deref().filter(|c| !c.is_empty()) {
            Some(c) => c.to_string(),
            None => {
                return Err(KubeError::NoCurrentContext {
                    kubeconfig: path,
                    known,
                })
            }
        },
    };
    if !known.contains(&chosen) {
        return Err(KubeError::UnknownContext {
            context: chosen,
            kubeconfig: path,
            known,
        });
    }
    let options = KubeConfigOptions {
        context: Some(chosen.clone()),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(kc, &options)
        .await
        .map_err(|source| KubeError::InvalidKubeconfig {
            kubeconfig: path.clone(),
            context: chosen.clone(),
            source: Box::new(source),
        })?;
    Ok((
        config,
        Source::Kubeconfig {
            path,
            context: chosen,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(server: &str, current: Option<&str>) -> String {
        let current = current
            .map(|c| format!("current-context: {c}\n"))
            .unwrap_or_default();
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
             users:\n- name: u\n  user:\n    token: t\n\
             contexts:\n- name: dev\n  context:\n    cluster: c\n    user: u\n    namespace: apps\n\
             - name: prod\n  context:\n    cluster: c\n    user: u\n{current}"
        )
    }

    fn no_env() -> Env {
        Env {
            kubeconfig: None,
            home: None,
        }
    }

    #[tokio::test]
    async fn explicit_file_and_context_win() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("kc");
        std::fs::write(&f, kubeconfig("http://127.0.0.1:1", Some("dev"))).unwrap();
        let (config, source) = resolve(Some(&f), Some("prod"), &no_env()).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:1/");
        assert_eq!(config.default_namespace, "default");
        assert_eq!(
            source,
            Source::Kubeconfig {
                path: f.clone(),
                context: "prod".into()
            }
        );
        let (config, _) = resolve(Some(&f), None, &no_env()).await.unwrap();
        assert_eq!(config.default_namespace, "apps");
    }

    #[tokio::test]
    async fn kubeconfig_env_list_is_merged_first_file_wins() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, kubeconfig("http://127.0.0.1:2", None)).unwrap();
        std::fs::write(&b, kubeconfig("http://127.0.0.1:3", Some("dev"))).unwrap();
        let env = Env {
            kubeconfig: Some(std::env::join_paths([&a, &b]).unwrap()),
            home: None,
        };
        let (config, source) = resolve(None, None, &env).await.unwrap();
        // `a` defines the cluster first; `b` alone sets the current context.
        assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:2/");
        assert!(matches!(source, Source::Kubeconfig { context, .. } if context == "dev"));
    }

    #[tokio::test]
    async fn home_kube_config_is_the_default() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".kube")).unwrap();
        std::fs::write(
            home.path().join(".kube/config"),
            kubeconfig("http://127.0.0.1:4", Some("prod")),
        )
        .unwrap();
        let env = Env {
            kubeconfig: None,
            home: Some(home.path().to_path_buf()),
        };
        let (config, _) = resolve(None, None, &env).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:4/");
    }

    #[tokio::test]
    async fn missing_current_context_and_unknown_context_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("kc");
        std::fs::write(&f, kubeconfig("http://127.0.0.1:1", None)).unwrap();
        let err = resolve(Some(&f), None, &no_env()).await.unwrap_err();
        assert!(
            matches!(&err, KubeError::NoCurrentContext { known, .. } if known == &["dev", "prod"])
        );
        let err = resolve(Some(&f), Some("staging"), &no_env())
            .await
            .unwrap_err();
        assert!(matches!(&err, KubeError::UnknownContext { context, .. } if context == "staging"));
    }

    #[tokio::test]
    async fn plain_http_is_allowed_to_loopback_only() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("kc");
        for server in [
            "http://127.0.0.1:1",
            "http://127.3.4.5:1",
            "http://localhost:1",
            "http://[::1]:1",
            "https://10.0.0.1:6443",
            "https://kubernetes.example:6443",
        ] {
            std::fs::write(&f, kubeconfig(server, Some("dev"))).unwrap();
            let (config, _) = resolve(Some(&f), None, &no_env()).await.unwrap();
            assert!(refuse_plain_http(&config).is_ok(), "{server}");
        }
        for server in [
            "http://10.0.0.1:6443",
            "http://kubernetes.example:8080",
            "http://localhost.:1",
            "http://localhost.example:1",
            "http://[::ffff:127.0.0.1]:1",
            "http://[::2]:1",
        ] {
            std::fs::write(&f, kubeconfig(server, Some("dev"))).unwrap();
            let (config, _) = resolve(Some(&f), None, &no_env()).await.unwrap();
            let err = refuse_plain_http(&config).expect_err(server);
            assert!(matches!(err, KubeError::PlainHttp { .. }), "{server}");
            assert!(err.to_string().contains("not loopback"), "{err}");
        }
        // Through a proxy: the proxy's address decides for plain http.
        for (proxy, refused) in [
            ("http://10.0.0.9:3128", true),
            ("http://127.0.0.1:3128", false),
        ] {
            let yaml = kubeconfig("http://127.0.0.1:1", Some("dev")).replace(
                "    server: ",
                &format!("    proxy-url: {proxy}\n    server: "),
            );
            std::fs::write(&f, yaml).unwrap();
            let (config, _) = resolve(Some(&f), None, &no_env()).await.unwrap();
            match refuse_plain_http(&config) {
                Err(KubeError::PlainHttp { server }) => {
                    assert!(refused, "{proxy}");
                    assert_eq!(server, proxy);
                }
                Ok(()) => assert!(!refused, "{proxy}"),
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[tokio::test]
    async fn unreadable_file_and_context_without_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err = resolve(Some(&missing), None, &no_env()).await.unwrap_err();
        assert!(matches!(&err, KubeError::ReadKubeconfig { path, .. } if path == &missing));
        let env = Env {
            kubeconfig: None,
            home: Some(dir.path().to_path_buf()),
        };
        let err = resolve(None, Some("dev"), &env).await.unwrap_err();
        assert!(
            matches!(&err, KubeError::NoKubeconfigForContext { default_path, .. } if default_path == &dir.path().join(".kube/config"))
        );
    }
}
