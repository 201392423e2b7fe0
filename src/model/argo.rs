//! Argo CD's ordering rules for one manifest: which sync phase(s) it runs in, its wave, whether it
//! is a hook and how that hook is deleted, and the kind order inside one wave.
//!
//! Each rule mirrors gitops-engine as vendored in argo-cd v3.5.1 (`gitops-engine/pkg/sync/...`);
//! the function comments name the Go function they follow. The functions take only annotations
//! and a kind, so the live check (`verify`) can apply them to objects read from a cluster too.

use std::collections::BTreeMap;

use serde::Serialize;

/// `argocd.argoproj.io/hook` (gitops-engine `pkg/sync/common/types.go`, `AnnotationKeyHook`).
pub const HOOK: &str = "argocd.argoproj.io/hook";
/// `argocd.argoproj.io/sync-wave` (`common.AnnotationSyncWave`).
pub const SYNC_WAVE: &str = "argocd.argoproj.io/sync-wave";
/// `argocd.argoproj.io/hook-delete-policy` (`common.AnnotationKeyHookDeletePolicy`).
pub const HOOK_DELETE_POLICY: &str = "argocd.argoproj.io/hook-delete-policy";
/// Helm's hook annotation, mapped by `pkg/sync/hook/helm/type.go`.
pub const HELM_HOOK: &str = "helm.sh/hook";
/// Helm's hook weight, used as the wave by `pkg/sync/hook/helm/weight.go`.
pub const HELM_HOOK_WEIGHT: &str = "helm.sh/hook-weight";
/// Helm's hook delete policy, mapped by `pkg/sync/hook/helm/delete_policy.go`.
pub const HELM_HOOK_DELETE_POLICY: &str = "helm.sh/hook-delete-policy";

/// A sync phase, in the order Argo CD runs them (`syncPhaseOrder` in `pkg/sync/sync_tasks.go`:
/// PreSync -1, Sync 0, PostSync 1, SyncFail 2). SyncFail runs only when the sync fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Phase {
    /// Hooks that run before anything of the Sync phase is applied.
    PreSync,
    /// Normal resources, and `Sync` hooks.
    Sync,
    /// Hooks that run after every Sync-phase resource is Healthy.
    PostSync,
    /// Hooks that run when the sync fails.
    SyncFail,
}

impl Phase {
    /// The name Argo CD uses.
    pub fn name(self) -> &'static str {
        match self {
            Phase::PreSync => "PreSync",
            Phase::Sync => "Sync",
            Phase::PostSync => "PostSync",
            Phase::SyncFail => "SyncFail",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A hook type (`common.HookType`): the phases, plus `Skip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HookType {
    Phase(Phase),
    Skip,
}

/// `common.NewHookType`: exact, case-sensitive names. `PreDelete`/`PostDelete` are not sync hook
/// types in gitops-engine (argo-cd runs them only when an Application is deleted,
/// `controller/hook.go`).
fn argo_hook_type(s: &str) -> Option<HookType> {
    Some(match s {
        "PreSync" => HookType::Phase(Phase::PreSync),
        "Sync" => HookType::Phase(Phase::Sync),
        "PostSync" => HookType::Phase(Phase::PostSync),
        "SyncFail" => HookType::Phase(Phase::SyncFail),
        "Skip" => HookType::Skip,
        _ => return None,
    })
}

/// `helm.NewType` + `Type.HookType` (`pkg/sync/hook/helm/type.go`): only these four Helm hooks
/// map to a phase; `test`, `pre-delete`, `pre-rollback`, ... have none (docs
/// `user-guide/helm.md`: "Unsupported hooks are ignored").
fn helm_hook_type(s: &str) -> Option<Phase> {
    match s {
        "pre-install" | "pre-upgrade" => Some(Phase::PreSync),
        "post-install" | "post-upgrade" => Some(Phase::PostSync),
        _ => None,
    }
}

/// `resource.GetAnnotationCSVs` (`pkg/sync/resource/annotations.go`): split on commas, trim,
/// drop empty items and duplicates, keep the order.
pub fn annotation_csvs(value: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for item in value.split(',') {
        let item = item.trim();
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// `hook.Types` (`pkg/sync/hook/hook.go`): the Argo CD hook types; only when there is none, the
/// mapped Helm hook types ("we ignore Helm hooks if we have Argo hook").
fn hook_types(ann: &BTreeMap<String, String>) -> Vec<HookType> {
    let argo: Vec<HookType> = ann
        .get(HOOK)
        .map(|v| {
            annotation_csvs(v)
                .into_iter()
                .filter_map(argo_hook_type)
                .collect()
        })
        .unwrap_or_default();
    if !argo.is_empty() {
        return argo;
    }
    ann.get(HELM_HOOK)
        .map(|v| {
            annotation_csvs(v)
                .into_iter()
                .filter_map(helm_hook_type)
                .map(HookType::Phase)
                .collect()
        })
        .unwrap_or_default()
}

/// `hook.Skip`: `Skip` is the only hook type.
fn is_skip(ann: &BTreeMap<String, String>) -> bool {
    let types = hook_types(ann);
    types.len() == 1 && types[0] == HookType::Skip
}

/// `hook.IsHook`: an `argocd.argoproj.io/hook` annotation (whatever its value) makes a hook unless
/// it is `Skip` alone; else `helm.IsHook`: any `helm.sh/hook` but exactly `crd-install` (Helm
/// marks CRDs that way, "but they are not" hooks, `pkg/sync/hook/helm/hook.go`).
pub fn is_hook(ann: &BTreeMap<String, String>) -> bool {
    if ann.contains_key(HOOK) {
        return !is_skip(ann);
    }
    ann.get(HELM_HOOK).is_some_and(|v| v != "crd-install")
}

/// `strconv.Atoi` as Go parses it: optional sign, decimal digits, 64-bit range.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Where a wave came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaveFrom {
    /// `argocd.argoproj.io/sync-wave`.
    SyncWave,
    /// `helm.sh/hook-weight` (no usable sync-wave annotation).
    HelmHookWeight,
    /// Neither: wave 0.
    Default,
}

/// `syncwaves.Wave` (`pkg/sync/syncwaves/waves.go`): `argocd.argoproj.io/sync-wave` when it parses
/// as an integer, else `helm.sh/hook-weight` when it does (`helm.Weight`, which "do\[es\] not take
/// into account if this is or is not a hook"), else 0 (docs `user-guide/sync-waves.md`: "Hooks and
/// resources are assigned to wave 0 by default").
pub fn wave(ann: &BTreeMap<String, String>) -> (i64, WaveFrom) {
    if let Some(w) = ann.get(SYNC_WAVE).and_then(|v| go_atoi(v)) {
        return (w, WaveFrom::SyncWave);
    }
    if let Some(w) = ann.get(HELM_HOOK_WEIGHT).and_then(|v| go_atoi(v)) {
        return (w, WaveFrom::HelmHookWeight);
    }
    (0, WaveFrom::Default)
}

/// A hook delete policy (`common.HookDeletePolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum DeletePolicy {
    /// Deleted when the sync succeeds (`sync_context.go` deletes these hooks only once the whole
    /// operation has succeeded).
    HookSucceeded,
    /// Deleted when the hook failed.
    HookFailed,
    /// Deleted right before it is created again at the next sync.
    BeforeHookCreation,
}

/// `hook.DeletePolicies` (`pkg/sync/hook/delete_policy.go`): the Argo CD policies, plus the Helm
/// ones mapped (`before-hook-creation`, `hook-succeeded`, `hook-failed`), and
/// `BeforeHookCreation` when there is none (docs `user-guide/sync-waves.md`).
pub fn delete_policies(ann: &BTreeMap<String, String>) -> Vec<DeletePolicy> {
    let mut out = Vec::new();
    if let Some(v) = ann.get(HOOK_DELETE_POLICY) {
        for p in annotation_csvs(v) {
            match p {
                "HookSucceeded" => out.push(DeletePolicy::HookSucceeded),
                "HookFailed" => out.push(DeletePolicy::HookFailed),
                "BeforeHookCreation" => out.push(DeletePolicy::BeforeHookCreation),
                _ => {}
            }
        }
    }
    if let Some(v) = ann.get(HELM_HOOK_DELETE_POLICY) {
        for p in annotation_csvs(v) {
            match p {
                "hook-succeeded" => out.push(DeletePolicy::HookSucceeded),
                "hook-failed" => out.push(DeletePolicy::HookFailed),
                "before-hook-creation" => out.push(DeletePolicy::BeforeHookCreation),
                _ => {}
            }
        }
    }
    if out.is_empty() {
        out.push(DeletePolicy::BeforeHookCreation);
    }
    out.sort();
    out.dedup();
    out
}

/// Why Argo CD never applies a manifest during a sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotApplied {
    /// `argocd.argoproj.io/hook: Skip` (docs: "Hooks marked with Skip will not be applied").
    Skip,
    /// A hook whose types name no sync phase, with the annotation that makes it a hook.
    NoPhase {
        /// The annotation.
        annotation: &'static str,
        /// Its value.
        value: String,
    },
}

impl NotApplied {
    /// A clause for messages.
    pub fn explain(&self) -> String {
        match self {
            NotApplied::Skip => {
                "it has `argocd.argoproj.io/hook: Skip`, which Argo CD never applies".to_string()
            }
            NotApplied::NoPhase { annotation, value } if *annotation == HELM_HOOK => format!(
                "it is a `helm.sh/hook: {value}` hook, which Argo CD does not run during a sync \
                 (only pre-/post-install and pre-/post-upgrade map to sync phases)"
            ),
            NotApplied::NoPhase { annotation, value } => format!(
                "its `{annotation}: {value}` names no sync phase (PreDelete and PostDelete hooks \
                 run only when the Application is deleted)"
            ),
        }
    }
}

/// Where and when Argo CD applies one manifest within its app's sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// `hook.IsHook`.
    pub hook: bool,
    /// The phases it runs in, in order (`syncPhases` in `pkg/sync/sync_phase.go`: a hook once per
    /// hook type that is a phase, a normal resource in Sync). Empty: never applied.
    pub phases: Vec<Phase>,
    /// The wave.
    pub wave: i64,
    /// Where the wave came from.
    pub wave_from: WaveFrom,
    /// Set when `phases` is empty.
    pub not_applied: Option<NotApplied>,
    /// The hook delete policies (hooks only; empty for normal resources).
    pub delete_policies: Vec<DeletePolicy>,
    /// The Helm hook value when the phase came from a Helm hook (for explanations).
    pub helm_hook: Option<String>,
}

impl Placement {
    /// The placement of a manifest with these annotations.
    pub fn of(ann: &BTreeMap<String, String>) -> Placement {
        let (wave, wave_from) = wave(ann);
        let hook = is_hook(ann);
        // `syncPhases`: Skip -> none; a hook -> its phase types; else Sync.
        let mut phases: Vec<Phase> = if is_skip(ann) {
            Vec::new()
        } else if hook {
            hook_types(ann)
                .into_iter()
                .filter_map(|t| match t {
                    HookType::Phase(p) => Some(p),
                    HookType::Skip => None,
                })
                .collect()
        } else {
            vec![Phase::Sync]
        };
        phases.sort();
        phases.dedup();
        let not_applied = if !phases.is_empty() {
            None
        } else if is_skip(ann) {
            Some(NotApplied::Skip)
        } else if let Some(v) = ann.get(HOOK) {
            Some(NotApplied::NoPhase {
                annotation: HOOK,
                value: v.clone(),
            })
        } else {
            Some(NotApplied::NoPhase {
                annotation: HELM_HOOK,
                value: ann.get(HELM_HOOK).cloned().unwrap_or_default(),
            })
        };
        // The phase came from Helm when no Argo CD hook type was given.
        let helm_hook = (hook
            && ann.get(HOOK).is_none_or(|v| {
                annotation_csvs(v)
                    .into_iter()
                    .all(|t| argo_hook_type(t).is_none())
            }))
        .then(|| ann.get(HELM_HOOK).cloned())
        .flatten();
        Placement {
            hook,
            phases,
            wave,
            wave_from,
            not_applied,
            delete_policies: if hook {
                delete_policies(ann)
            } else {
                Vec::new()
            },
            helm_hook,
        }
    }

    /// The first phase it runs in (None: never applied).
    pub fn first_phase(&self) -> Option<Phase> {
        self.phases.first().copied()
    }

    /// A hook deleted when the sync succeeds.
    pub fn deleted_after_sync(&self) -> bool {
        self.hook && self.delete_policies.contains(&DeletePolicy::HookSucceeded)
    }

    /// A hook deleted and created again at every sync.
    pub fn recreated_each_sync(&self) -> bool {
        self.hook
            && self
                .delete_policies
                .contains(&DeletePolicy::BeforeHookCreation)
    }
}

/// The kind order inside one wave (`kindOrder` in `pkg/sync/sync_tasks.go`, Helm's install
/// order): Argo CD applies a wave kind group by kind group, each group's applies finished before
/// the next starts (`runTasks`/`processCreateTasks` in `pkg/sync/sync_context.go`), so a Secret
/// exists before a Deployment of the same wave is created. Every kind not in the list, custom
/// resources such as ExternalSecret included, comes last (0).
pub fn kind_order(kind: &str) -> i32 {
    const KINDS: [&str; 35] = [
        "Namespace",
        "NetworkPolicy",
        "ResourceQuota",
        "LimitRange",
        "PodSecurityPolicy",
        "PodDisruptionBudget",
        "ServiceAccount",
        "Secret",
        "SecretList",
        "ConfigMap",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleList",
        "ClusterRoleBinding",
        "ClusterRoleBindingList",
        "Role",
        "RoleList",
        "RoleBinding",
        "RoleBindingList",
        "Service",
        "DaemonSet",
        "Pod",
        "ReplicationController",
        "ReplicaSet",
        "Deployment",
        "HorizontalPodAutoscaler",
        "StatefulSet",
        "Job",
        "CronJob",
        "IngressClass",
        "Ingress",
        "APIService",
    ];
    KINDS
        .iter()
        .position(|k| *k == kind)
        .map_or(0, |i| i as i32 - KINDS.len() as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn no_annotation_is_a_normal_resource_of_the_sync_phase_at_wave_0() {
        let p = Placement::of(&ann(&[]));
        assert!(!p.hook);
        assert_eq!(p.phases, vec![Phase::Sync]);
        assert_eq!((p.wave, p.wave_from), (0, WaveFrom::Default));
        assert!(p.delete_policies.is_empty());
    }

    #[test]
    fn argo_hook_types_set_the_phases() {
        for (v, want) in [
            ("PreSync", vec![Phase::PreSync]),
            ("Sync", vec![Phase::Sync]),
            ("PostSync", vec![Phase::PostSync]),
            ("SyncFail", vec![Phase::SyncFail]),
            (
                " PostSync , PreSync,PreSync",
                vec![Phase::PreSync, Phase::PostSync],
            ),
        ] {
            let p = Placement::of(&ann(&[(HOOK, v)]));
            assert!(p.hook, "{v}");
            assert_eq!(p.phases, want, "{v}");
        }
    }

    #[test]
    fn skip_alone_is_never_applied_but_skip_with_a_phase_is_a_hook() {
        let p = Placement::of(&ann(&[(HOOK, "Skip")]));
        assert!(!p.hook);
        assert!(p.phases.is_empty());
        assert_eq!(p.not_applied, Some(NotApplied::Skip));
        let p = Placement::of(&ann(&[(HOOK, "Skip,PreSync")]));
        assert!(p.hook);
        assert_eq!(p.phases, vec![Phase::PreSync]);
    }

    #[test]
    fn hook_names_are_case_sensitive_and_unknown_ones_make_a_hook_without_phase() {
        // `hook.IsHook` is true for any value of the annotation; `syncPhases` finds no phase.
        for v in ["presync", "PreDelete", "PostDelete", ""] {
            let p = Placement::of(&ann(&[(HOOK, v)]));
            assert!(p.hook, "{v}");
            assert!(p.phases.is_empty(), "{v}");
            assert!(matches!(p.not_applied, Some(NotApplied::NoPhase { .. })));
        }
    }

    #[test]
    fn helm_hooks_map_to_phases() {
        for (v, want) in [
            ("pre-install", vec![Phase::PreSync]),
            ("pre-upgrade", vec![Phase::PreSync]),
            ("pre-install,pre-upgrade", vec![Phase::PreSync]),
            ("post-install,post-upgrade", vec![Phase::PostSync]),
            (
                "pre-install,post-install",
                vec![Phase::PreSync, Phase::PostSync],
            ),
        ] {
            let p = Placement::of(&ann(&[(HELM_HOOK, v)]));
            assert!(p.hook, "{v}");
            assert_eq!(p.phases, want, "{v}");
            assert_eq!(p.helm_hook.as_deref(), Some(v));
        }
    }

    #[test]
    fn unsupported_helm_hooks_are_hooks_that_never_run() {
        for v in [
            "test",
            "test-success",
            "pre-delete",
            "post-delete",
            "pre-rollback",
        ] {
            let p = Placement::of(&ann(&[(HELM_HOOK, v)]));
            assert!(p.hook, "{v}");
            assert!(p.phases.is_empty(), "{v}");
            assert!(p.not_applied.unwrap().explain().contains(v));
        }
    }

    #[test]
    fn crd_install_is_not_a_hook() {
        let p = Placement::of(&ann(&[(HELM_HOOK, "crd-install")]));
        assert!(!p.hook);
        assert_eq!(p.phases, vec![Phase::Sync]);
    }

    #[test]
    fn an_argo_hook_overrides_helm_hooks_unless_it_names_no_known_type() {
        let p = Placement::of(&ann(&[(HOOK, "Sync"), (HELM_HOOK, "pre-install")]));
        assert_eq!(p.phases, vec![Phase::Sync]);
        assert_eq!(p.helm_hook, None);
        // `hook.Types` falls back to Helm's types when Argo's yield none.
        let p = Placement::of(&ann(&[(HOOK, "PreDelete"), (HELM_HOOK, "pre-install")]));
        assert_eq!(p.phases, vec![Phase::PreSync]);
    }

    #[test]
    fn wave_from_sync_wave_then_helm_weight_then_zero() {
        assert_eq!(
            wave(&ann(&[(SYNC_WAVE, "-2"), (HELM_HOOK_WEIGHT, "5")])),
            (-2, WaveFrom::SyncWave)
        );
        assert_eq!(
            wave(&ann(&[(HELM_HOOK_WEIGHT, "2")])),
            (2, WaveFrom::HelmHookWeight)
        );
        // An unparsable sync-wave falls back to the Helm weight (Atoi error).
        assert_eq!(
            wave(&ann(&[(SYNC_WAVE, "five"), (HELM_HOOK_WEIGHT, "+3")])),
            (3, WaveFrom::HelmHookWeight)
        );
        for bad in [" 1", "1 ", "1_0", "", "0x10", "1.5", "99999999999999999999"] {
            assert_eq!(
                wave(&ann(&[(SYNC_WAVE, bad)])),
                (0, WaveFrom::Default),
                "{bad:?}"
            );
        }
        // Helm's weight counts for a normal resource too.
        let p = Placement::of(&ann(&[(HELM_HOOK_WEIGHT, "7")]));
        assert_eq!((p.hook, p.wave), (false, 7));
    }

    #[test]
    fn delete_policies_default_to_before_hook_creation_and_map_helm_names() {
        let hook = |extra: &[(&str, &str)]| {
            let mut a = ann(&[(HOOK, "PreSync")]);
            a.extend(ann(extra));
            Placement::of(&a)
        };
        assert_eq!(
            hook(&[]).delete_policies,
            vec![DeletePolicy::BeforeHookCreation]
        );
        let p = hook(&[(HOOK_DELETE_POLICY, "BeforeHookCreation,HookSucceeded")]);
        assert!(p.deleted_after_sync() && p.recreated_each_sync());
        let p = hook(&[(HELM_HOOK_DELETE_POLICY, "hook-succeeded")]);
        assert_eq!(p.delete_policies, vec![DeletePolicy::HookSucceeded]);
        assert!(!p.recreated_each_sync());
        let p = hook(&[(HOOK_DELETE_POLICY, "HookFailed")]);
        assert!(!p.deleted_after_sync() && !p.recreated_each_sync());
        // Unknown names are ignored, so the default applies.
        assert_eq!(
            hook(&[(HOOK_DELETE_POLICY, "hooksucceeded")]).delete_policies,
            vec![DeletePolicy::BeforeHookCreation]
        );
        // Not a hook: no policy.
        let p = Placement::of(&ann(&[(HOOK_DELETE_POLICY, "HookSucceeded")]));
        assert!(!p.deleted_after_sync());
    }

    #[test]
    fn kind_order_is_helms_with_unknown_kinds_last() {
        let order = [
            "Namespace",
            "Secret",
            "ConfigMap",
            "Service",
            "DaemonSet",
            "Pod",
            "ReplicaSet",
            "Deployment",
            "StatefulSet",
            "Job",
            "CronJob",
            "APIService",
            "ExternalSecret",
        ];
        for w in order.windows(2) {
            assert!(kind_order(w[0]) < kind_order(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(kind_order("VaultStaticSecret"), 0);
        assert_eq!(kind_order("ExternalSecret"), 0);
        assert!(kind_order("APIService") < 0);
    }

    #[test]
    fn phases_sort_as_argo_runs_them() {
        assert!(Phase::PreSync < Phase::Sync);
        assert!(Phase::Sync < Phase::PostSync);
        assert!(Phase::PostSync < Phase::SyncFail);
    }
}
