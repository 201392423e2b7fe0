//! The "fill in" hints of `apply` and `verify` name the very field `set` will change (issue 13,
//! "Defects to fix on the way": `verify` built its hint from the last segment of the path, wrong
//! for a secret with several fields and for a nested name `a/b`). One function builds the hint
//! for both; every hint printed is run, and must store the value.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{OpenBao, Run};

fn specs(dir: &Path) {
    std::fs::write(
        dir.join("hints.toml"),
        r#"[vault]
mount = "secret"
path = "h/{env}"
[environments.dev]
[secrets."db/ROOT"]
description = "a nested name"
fields.value = { generator = "placeholder" }
[secrets.PAT]
description = "two fields"
fields.value = { generator = "placeholder" }
fields.note = { generator = "placeholder" }
[secrets.SHARED]
description = "a name another application uses too"
fields.value = { generator = "placeholder" }
[secrets.SALT]
description = "generated"
fields.password = { generator = "hex32" }
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("other.toml"),
        r#"[vault]
mount = "secret"
path = "o/{env}"
[environments.dev]
[secrets.SHARED]
description = "the same name in another application"
fields.value = { generator = "placeholder" }
"#,
    )
    .unwrap();
}

/// The `SECRET[.FIELD]` of every `vault-seed set dev ... < value.txt` hint in `out`.
fn hints(out: &str) -> BTreeSet<String> {
    out.lines()
        .filter_map(|l| l.split("vault-seed set dev ").nth(1))
        .filter_map(|rest| rest.strip_suffix(" < value.txt"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_fill_in_hint_names_the_field_set_changes() {
    let bao = OpenBao::dev();
    let dir = tempfile::tempdir().unwrap();
    specs(dir.path());
    let run = |args: &[&str], stdin: &str| {
        let out = Run::new(&bao)
            .specs(dir.path())
            .args(args)
            .stdin(stdin)
            .any_status()
            .output();
        // The caller asserts the code.
        (out.status.code(), out.stdout_text(), out.stderr_text())
    };
    let (code, applied, err) = run(&["apply", "dev"], "");
    assert_eq!(code, Some(0), "{err}");
    let (code, verified, err) = run(&["verify", "dev", "--only", "vault"], "");
    assert_eq!(code, Some(0), "{err}");
    let want: BTreeSet<String> = [
        "db/ROOT",
        "PAT.value",
        "PAT.note",
        "h/dev/SHARED",
        "o/dev/SHARED",
    ]
    .map(String::from)
    .into();
    assert_eq!(hints(&applied), want, "{applied}");
    assert_eq!(hints(&verified), want, "{verified}");
    // Each hint, run as printed, stores its value.
    for (i, target) in want.iter().enumerate() {
        let (code, out, err) = run(&["set", "dev", target], &format!("value-{i}\n"));
        assert_eq!(code, Some(0), "set dev {target}: {out}{err}");
        // The specs list no ExternalSecret or VaultStaticSecret: no cluster, no next step.
        assert!(!err.contains("the cluster"), "{err}");
    }
    let (code, out, err) = run(&["verify", "dev", "--only", "vault", "--strict"], "");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(hints(&out).is_empty(), "{out}");
    let (data, _) = bao.kv_get("secret", "h/dev/PAT").unwrap();
    assert_ne!(data["value"], data["note"]);
}
