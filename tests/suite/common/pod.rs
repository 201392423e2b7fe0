//! A command run the way a Kubernetes pod runs it, as far as one process can be made to: a
//! private mount namespace (`unshare --mount`) where
//!
//! - the service account's `token`, `ca.crt` and `namespace` are at the fixed path kube-rs's
//!   in-cluster configuration reads (`/var/run/secrets/kubernetes.io/serviceaccount/`, kube-client
//!   `config/incluster_config.rs`: the path cannot be pointed elsewhere), and
//!   `KUBERNETES_SERVICE_HOST`/`_PORT` name the API server;
//! - `/etc` is an empty tmpfs (no system CA roots, no passwd entry for the user), with the
//!   volumes mounted under it (`/etc/vault-seed/...`), as the image's ConfigMap volumes are;
//! - the root filesystem and every mount are read-only (`readOnlyRootFilesystem`);
//! - the program runs as an unprivileged uid without capabilities or new privileges
//!   (`runAsNonRoot`, `capabilities.drop: [ALL]`, `allowPrivilegeEscalation: false`), with no
//!   HOME (an empty environment but what the test gives it).
//!
//! We run the tests as root, which `unshare --mount` and `setpriv` need; where they cannot run,
//! the command fails with exit 97 and says why, and the tests assert it did not: nothing skips.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The exit code of a pod that could not be set up (the reason is on stderr).
pub const SETUP_FAILED: i32 = 97;

/// The uid and gid the program runs as (distroless's `nonroot`).
pub const UID: u32 = 65532;

/// The service account's files, mounted at the fixed in-cluster path.
pub struct ServiceAccount {
    /// The bearer token (the projected JWT).
    pub token: String,
    /// The API server's CA, PEM.
    pub ca_pem: String,
    /// The pod's namespace.
    pub namespace: String,
}

/// A pod to run commands in.
pub struct Pod {
    dir: tempfile::TempDir,
    /// (host path, path in the pod) of each read-only volume.
    volumes: Vec<(PathBuf, String)>,
    env: Vec<(String, String)>,
    service_account: bool,
}

impl Pod {
    /// A pod with no volume, no service account, no environment.
    pub fn new() -> Pod {
        let dir = tempfile::Builder::new()
            .prefix("vault-seed-pod")
            .tempdir()
            .expect("tempdir");
        readable(dir.path(), 0o755);
        Pod {
            dir,
            volumes: Vec::new(),
            env: Vec::new(),
            service_account: false,
        }
    }

    /// Mount the service account's files, and point the in-cluster variables at `port` on
    /// 127.0.0.1 (the API server's certificate must name that address).
    pub fn service_account(mut self, sa: &ServiceAccount, port: u16) -> Pod {
        let sa_dir = self.dir.path().join("serviceaccount");
        std::fs::create_dir(&sa_dir).expect("sa dir");
        for (name, content) in [
            ("token", sa.token.as_str()),
            ("ca.crt", sa.ca_pem.as_str()),
            ("namespace", sa.namespace.as_str()),
        ] {
            std::fs::write(sa_dir.join(name), content).expect("sa file");
            readable(&sa_dir.join(name), 0o644);
        }
        readable(&sa_dir, 0o755);
        self.service_account = true;
        self.env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", &port.to_string())
    }

    /// Mount `host` (a file or directory, readable by others) read-only at `in_pod`, which must
    /// be under `/etc/` or `/var/run/` (both empty tmpfs in the pod).
    pub fn volume(mut self, host: &Path, in_pod: &str) -> Pod {
        assert!(
            in_pod.starts_with("/etc/") || in_pod.starts_with("/var/run/"),
            "volumes go under /etc or /var/run: {in_pod}"
        );
        self.volumes.push((host.to_path_buf(), in_pod.to_string()));
        self
    }

    /// A file with `content` mounted read-only at `in_pod` (under `/etc/` or `/var/run/`).
    pub fn file(self, in_pod: &str, content: &str) -> Pod {
        let name = format!("file-{}", self.volumes.len());
        let host = self.dir.path().join(name);
        std::fs::write(&host, content).expect("volume file");
        readable(&host, 0o644);
        self.volume(&host, in_pod)
    }

    /// A directory of files `(name, content)` mounted read-only at `in_pod` (a ConfigMap or
    /// projected volume).
    pub fn dir(self, in_pod: &str, files: &[(String, String)]) -> Pod {
        let host = self.dir.path().join(format!("dir-{}", self.volumes.len()));
        std::fs::create_dir(&host).expect("volume dir");
        for (name, content) in files {
            std::fs::write(host.join(name), content).expect("volume file");
            readable(&host.join(name), 0o644);
        }
        readable(&host, 0o755);
        self.volume(&host, in_pod)
    }

    /// An environment variable of the container.
    pub fn env(mut self, name: &str, value: &str) -> Pod {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// `program args...` in the pod. `program` must be readable and executable by [`UID`].
    pub fn command(&self, program: &Path) -> Command {
        let mut script = String::from(
            "fail() { echo \"pod set-up failed: $1 (the tests need root, unshare --mount and setpriv)\" >&2; exit 97; }\n\
             mount --make-rprivate / || fail 'private mounts'\n\
             mount -t tmpfs -o mode=755 tmpfs /etc || fail 'tmpfs on /etc'\n\
             mount -t tmpfs -o mode=755 tmpfs /run || fail 'tmpfs on /run'\n",
        );
        if self.service_account {
            script.push_str(&format!(
                "mkdir -p /run/secrets/kubernetes.io/serviceaccount && mount --bind '{}' /run/secrets/kubernetes.io/serviceaccount || fail 'service account volume'\n",
                self.dir.path().join("serviceaccount").display()
            ));
        }
        for (host, in_pod) in &self.volumes {
            let make = if host.is_dir() {
                format!("mkdir -p '{in_pod}'")
            } else {
                format!("mkdir -p \"$(dirname '{in_pod}')\" && touch '{in_pod}'")
            };
            script.push_str(&format!(
                "{make} && mount --bind '{}' '{in_pod}' || fail 'volume {in_pod}'\n",
                host.display()
            ));
        }
        script.push_str(
            "for m in $(cut -d' ' -f5 /proc/self/mountinfo | sort -u); do\n\
             case \"$m\" in /proc*|/sys*|/dev*) continue;; esac\n\
             mount -o remount,bind,ro \"$m\" 2>/dev/null || mount -o remount,ro \"$m\" || fail \"read-only $m\"\n\
             done\n\
             touch /probe-rw 2>/dev/null && fail 'the root is still writable'\n",
        );
        script.push_str(&format!(
            "exec setpriv --reuid={UID} --regid={UID} --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \"$@\"\n"
        ));
        let mut c = in_private_mounts(&script, program);
        c.env_clear().env("PATH", "/usr/local/bin:/usr/bin:/bin");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }
}

/// `sh -c SCRIPT sh PROGRAM` in a private mount namespace (`unshare --mount`): `SCRIPT` sets up
/// the mounts and ends with `exec "$@"`.
pub fn in_private_mounts(script: &str, program: &Path) -> Command {
    let mut c = Command::new("unshare");
    c.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(program);
    c
}

/// chmod, so the pod's unprivileged user can read what root wrote.
pub fn readable(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
