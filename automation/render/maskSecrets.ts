/**
 * Masks secrets inside rendered text (user data, join scripts) while keeping the rest readable.
 * Three rules, because a secret reaches user data in derived forms (the k0s join token is the
 * bootstrap token inside a gzip+base64 kubeconfig):
 *  - every plain value that the program marked secret elsewhere (tokens, kubeconfigs);
 *  - the content of files a cloud-config writes with mode 0600 (token and key files);
 *  - anything shaped like a bootstrap token `<id6>.<secret16>`.
 */
import { parse, stringify } from "yaml";
import { SECRET_MASK } from "../mocks/secretValues";

const BOOTSTRAP_TOKEN = /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g;
const MIN_SECRET_LENGTH = 8;

export function maskSecretText(text: string, knownSecrets: Iterable<string>): string {
  let out = text;
  const secrets = [...new Set(knownSecrets)].filter((s) => s.length >= MIN_SECRET_LENGTH && s !== text);
  secrets.sort((a, b) => b.length - a.length);
  for (const secret of secrets) out = out.split(secret).join(SECRET_MASK);
  out = maskPrivateCloudConfigFiles(out);
  return out.replace(BOOTSTRAP_TOKEN, SECRET_MASK);
}

/** In a `#cloud-config`, replaces the content of write_files entries with mode 0600/0400. */
function maskPrivateCloudConfigFiles(text: string): string {
  if (!text.startsWith("#cloud-config")) return text;
  const document = parse(text) as { write_files?: Array<Record<string, unknown>> } | null;
  const files = document?.write_files;
  if (!Array.isArray(files)) return text;
  let masked = false;
  for (const file of files) {
    if (/^0?[46]00$/.test(String(file.permissions ?? "")) && file.content !== undefined) {
      file.content = SECRET_MASK;
      delete file.encoding;
      masked = true;
    }
  }
  return masked ? `#cloud-config\n${stringify(document)}` : text;
}
