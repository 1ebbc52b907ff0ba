/**
 * Which files under some folders hold any of some strings: for tests that prove a secret never
 * reaches a file (Pulumi checkpoints, backups, history; gzip-compressed ones are read unpacked).
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

export interface Needle {
  /** Names the secret in a finding, never its value. */
  readonly label: string;
  readonly text: string;
}

function* filesUnder(root: string): Generator<string> {
  if (!existsSync(root)) return;
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else if (entry.isFile()) yield path;
  }
}

/** `file: label` for every file under `roots` that contains a needle's text. */
export function filesHolding(roots: readonly string[], needles: readonly Needle[]): string[] {
  const found: string[] = [];
  for (const root of roots) {
    for (const file of filesUnder(root)) {
      const raw = readFileSync(file);
      const text = (file.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8");
      for (const needle of needles) if (needle.text !== "" && text.includes(needle.text)) found.push(`${file}: ${needle.label}`);
    }
  }
  return found;
}
