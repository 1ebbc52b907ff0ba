/**
 * Building blocks for the bash scripts nodefleet renders (self-join, kubelet re-push): quoting,
 * heredoc delimiters, and a prelude with an idempotent file writer. Every script honours
 * `NODEFLEET_ROOT` (default `/`) as its filesystem root, so tests can run it unprivileged.
 */

/**
 * apt-get that waits for the dpkg lock instead of failing at once: on a first boot, unattended
 * upgrades (and cloud-init's own package steps) hold it for minutes. 30 minutes, then it fails.
 */
export const APT_GET = "apt-get -o DPkg::Lock::Timeout=1800";

/** Single-quotes a value for bash; safe for any content. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A heredoc delimiter that does not occur as a line of the content. */
export function heredocDelimiter(content: string, base = "NODEFLEET_EOF"): string {
  const lines = new Set(content.split("\n"));
  let delimiter = base;
  for (let i = 1; lines.has(delimiter); i++) delimiter = `${base}_${i}`;
  return delimiter;
}

/**
 * `write_file PATH MODE <<'EOF'` writing literal content (no expansion). The content must not be
 * empty; a trailing newline is added when missing so the file is a proper text file.
 */
export function writeFileBlock(path: string, mode: string, content: string): string {
  const text = content.endsWith("\n") ? content : `${content}\n`;
  const delimiter = heredocDelimiter(text);
  return `write_file ${shellQuote(path)} ${mode} <<'${delimiter}'\n${text}${delimiter}`;
}

/**
 * The common start of every script: strict mode, no tracing (the scripts carry secrets), a private
 * umask, the configurable root `R`, and `write_file`, which replaces a file only when its content
 * differs and counts the changes in `CHANGED` (so callers restart services only when needed).
 */
export function scriptPrelude(purpose: string): string {
  return `#!/usr/bin/env bash
# nodefleet: ${purpose}
# Generated; safe to run again (idempotent). Never traced: it carries secrets.
set -euo pipefail
set +x
umask 077
export DEBIAN_FRONTEND=noninteractive

# The filesystem root: / on a node, a temporary directory in tests.
R="\${NODEFLEET_ROOT:-}"
R="\${R%/}"
CHANGED=0

log() {
  printf 'nodefleet: %s\\n' "$*" >&2
}

# write_file PATH MODE: writes stdin to $R/PATH when the content differs, then enforces MODE.
write_file() {
  local path="$R$1" mode="$2" tmp
  mkdir -p "$(dirname "$path")"
  tmp="$(mktemp "$path.XXXXXX")"
  cat >"$tmp"
  chmod "$mode" "$tmp"
  if [ -f "$path" ] && cmp -s "$tmp" "$path"; then
    rm -f "$tmp"
    chmod "$mode" "$path"
    return 0
  fi
  mv -f "$tmp" "$path"
  CHANGED=$((CHANGED + 1))
}
`;
}
