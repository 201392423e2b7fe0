# shellcheck shell=bash
# Sourced by scripts/demo and bench/run: where cargo puts what it builds, asked from cargo itself,
# so that CARGO_TARGET_DIR, a `target-dir` in a cargo config or `--target` work.

# cargo_exe NAME [CARGO BUILD ARGS...]: build, then print the path of the executable NAME.
cargo_exe() {
  local name=$1
  shift
  cargo build --message-format=json-render-diagnostics "$@" | python3 -c '
import json, sys
name, found = sys.argv[1], None
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == name:
        found = msg["executable"]
if not found:
    sys.exit("error: cargo built no executable named `%s`" % name)
print(found)
' "$name"
}

# cargo_target_dir: cargo's target directory for this project (nothing is built).
cargo_target_dir() {
  cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}
