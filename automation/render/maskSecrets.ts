/**
 * Masks secrets inside rendered text (user data, join scripts) while keeping the rest readable.
 * Several rules, because a secret reaches user data in derived forms (the k0s join token is the
 * bootstrap token inside a gzip+base64 kubeconfig): plain values the program marked secret; the
 * content of files a cloud-config writes with mode 0600/0400; the body of every `write_file PATH
 * 0600 <<'EOF'` heredoc (components/bootstrap/shellScript.ts); and anything shaped like a bootstrap
 * token `<id6>.<secret16>` or a gzip+base64 blob (`H4sI...`) wherever else it stands.
 */
import { parse, stringify } from "yaml";
import { SECRET_MASK } from "../mocks/secretValues";

const BOOTSTRAP_TOKEN = /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g;
/** Base64 of gzip data always starts with H4sI (1f 8b 08). */
const GZIP_BASE64 = /H4sI[A-Za-z0-9+/]{16,}={0,2}/g;
const MIN_SECRET_LENGTH = 8;
const PRIVATE_MODE = /^0?[46]00$/;
/** netplan insists on 0600 for its files, which hold addresses and VLAN ids, no secret: kept readable. */
const NOT_SECRET_PATH = /^['"]?\/etc\/netplan\//;
/** `write_file PATH MODE <<'DELIM'` as shellScript.ts writes it (quoted or bare delimiter, optional `-`). */
const WRITE_FILE_HEREDOC = /^(\s*)write_file\s+('[^']*'|"[^"]*"|\S+)\s+(\S+)\s+<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\4\s*$/;

export function maskSecretText(text: string, knownSecrets: Iterable<string>): string {
  let out = text;
  const secrets = [...new Set(knownSecrets)].filter((s) => s.length >= MIN_SECRET_LENGTH && s !== text);
  secrets.sort((a, b) => b.length - a.length);
  for (const secret of secrets) out = out.split(secret).join(SECRET_MASK);
  out = maskPrivateHeredocs(out);
  out = maskPrivateCloudConfigFiles(out);
  return out.replace(BOOTSTRAP_TOKEN, SECRET_MASK).replace(GZIP_BASE64, SECRET_MASK);
}

/**
 * Replaces the body of every heredoc that writes a private (0600/0400) file with one masked line,
 * indented like the body, so that a script embedded in a YAML block scalar stays valid YAML.
 */
export function maskPrivateHeredocs(text: string): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    out.push(lines[i]);
    const opener = WRITE_FILE_HEREDOC.exec(lines[i]);
    if (!opener || !PRIVATE_MODE.test(opener[3]) || NOT_SECRET_PATH.test(opener[2])) continue;
    const delimiter = opener[5];
    const end = lines.findIndex((line, j) => j > i && line.trim() === delimiter);
    if (end < 0) continue; // not a complete heredoc: leave it to the other rules
    if (end > i + 1) out.push(`${/^\s*/.exec(lines[i + 1])?.[0] ?? opener[1]}${SECRET_MASK}`);
    i = end - 1;
  }
  return out.join("\n");
}

/** In a `#cloud-config`, replaces the content of write_files entries with mode 0600/0400. */
function maskPrivateCloudConfigFiles(text: string): string {
  if (!text.startsWith("#cloud-config")) return text;
  const document = parse(text) as { write_files?: Array<Record<string, unknown>> } | null;
  const files = document?.write_files;
  if (!Array.isArray(files)) return text;
  let masked = false;
  for (const file of files) {
    if (PRIVATE_MODE.test(String(file.permissions ?? "")) && file.content !== undefined) {
      file.content = SECRET_MASK;
      delete file.encoding;
      masked = true;
    }
  }
  return masked ? `#cloud-config\n${stringify(document, { version: "1.1", lineWidth: 0 })}` : text;
}
