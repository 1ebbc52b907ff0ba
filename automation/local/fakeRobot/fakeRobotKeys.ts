/**
 * The fake Robot webservice's SSH keys: GET /key, POST /key (a key in OpenSSH or SSH2 format; Robot
 * computes its MD5 fingerprint, algorithm and size), GET, POST (rename) and DELETE /key/{fingerprint}.
 * Routes, inputs, outputs and errors as https://robot.hetzner.com/doc/webservice/en.html#ssh-keys
 * documents them; the key record is `{key: {name, fingerprint, type, size, data, created_at}}`.
 */
import { md5FingerprintOfBlob } from "../../../components/robot/sshKeyFingerprint";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type FakeRobotContext, RobotError, formOf, formValue, invalidInput, robotDateTime } from "./fakeRobotContext";
import type { FakeRobotKey } from "./fakeRobotState";

/** An SSH public key read from OpenSSH (`type base64 [comment]`) or SSH2 (RFC 4716) text. */
export interface ParsedSshKey {
  /** Robot's algorithm name: RSA, DSA, ECDSA or ED25519. */
  readonly type: string;
  /** Key size in bits. */
  readonly size: number;
  /** The key in OpenSSH format, without its comment. */
  readonly openSsh: string;
  /** MD5 of the key blob, as colon-separated hex (how Robot names keys). */
  readonly fingerprint: string;
}

/** The SSH wire strings of a key blob (RFC 4253 §6.6): a 32-bit length before each. */
function wireStrings(blob: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset < blob.length) {
    if (offset + 4 > blob.length) throw new Error("truncated key blob");
    const length = blob.readUInt32BE(offset);
    if (offset + 4 + length > blob.length) throw new Error("truncated key blob");
    parts.push(blob.subarray(offset + 4, offset + 4 + length));
    offset += 4 + length;
  }
  return parts;
}

/** Bits of an SSH mpint (its leading zero byte, present when the top bit is set, not counted). */
function mpintBits(value: Buffer): number {
  let i = 0;
  while (i < value.length && value[i] === 0) i++;
  if (i === value.length) return 0;
  return (value.length - i - 1) * 8 + value[i]!.toString(2).length;
}

/** The OpenSSH one-liner of an SSH2 (RFC 4716) public key: its headers dropped, its base64 joined. */
function fromSsh2(text: string): string | undefined {
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  const begin = lines.indexOf("---- BEGIN SSH2 PUBLIC KEY ----");
  const end = lines.indexOf("---- END SSH2 PUBLIC KEY ----");
  if (begin < 0 || end < begin) return undefined;
  const body: string[] = [];
  let continued = false;
  for (const line of lines.slice(begin + 1, end)) {
    // Header lines are `Tag: value`, continued by a trailing backslash (RFC 4716 §3.3).
    if (continued || /^[\x21-\x39\x3b-\x7e]+:/.test(line)) {
      continued = line.endsWith("\\");
      continue;
    }
    body.push(line);
  }
  const base64 = body.join("");
  const [type] = wireStrings(Buffer.from(base64, "base64"));
  return type ? `${type.toString("latin1")} ${base64}` : undefined;
}

/** Reads a public key; throws with the reason when it is not one. */
export function parseSshPublicKey(text: string): ParsedSshKey {
  const trimmed = text.trim();
  const openSshText = trimmed.startsWith("---- BEGIN SSH2 PUBLIC KEY ----") ? fromSsh2(trimmed) : trimmed;
  const [name, base64] = (openSshText ?? "").split(/\s+/);
  if (!name || !base64 || !/^[A-Za-z0-9+/]+=*$/.test(base64)) throw new Error("not an OpenSSH or SSH2 public key");
  const blob = Buffer.from(base64, "base64");
  const parts = wireStrings(blob);
  if (parts[0]?.toString("latin1") !== name) throw new Error("the key's type does not match its data");
  let type: string;
  let size: number;
  if (name === "ssh-rsa" && parts.length === 3) [type, size] = ["RSA", mpintBits(parts[2]!)];
  else if (name === "ssh-dss" && parts.length === 5) [type, size] = ["DSA", mpintBits(parts[1]!)];
  else if (name === "ssh-ed25519" && parts.length === 2 && parts[1]!.length === 32) [type, size] = ["ED25519", 256];
  else if (/^ecdsa-sha2-nistp(256|384|521)$/.test(name) && parts.length === 3) [type, size] = ["ECDSA", Number(name.slice(-3))];
  else throw new Error(`unsupported key type ${name}`);
  return { type, size, openSsh: `${name} ${base64}`, fingerprint: md5FingerprintOfBlob(blob) };
}

/** A key record as Robot renders it (en.html "GET /key" output). */
export function keyJson(key: FakeRobotKey) {
  return {
    name: key.name,
    fingerprint: key.id,
    type: key.type,
    size: key.size,
    data: key.data,
    created_at: robotDateTime(key.createdAt),
  };
}

const FINGERPRINT = /^([0-9a-f]{2}:){15}[0-9a-f]{2}$/;

export function registerKeys(app: FastifyInstance, ctx: FakeRobotContext): void {
  const keyParam = (request: FastifyRequest): FakeRobotKey => {
    const fingerprint = (request.params as { fingerprint: string }).fingerprint;
    const key = FINGERPRINT.test(fingerprint) ? ctx.state.key(fingerprint) : undefined;
    if (!key) throw new RobotError(404, "NOT_FOUND", "Key not found");
    return key;
  };

  app.get("/key", async () => {
    const keys = ctx.state.keys();
    if (keys.length === 0) throw new RobotError(404, "NOT_FOUND", "No keys found");
    return keys.map((k) => ({ key: keyJson(k) }));
  });

  app.post("/key", async (request: FastifyRequest, reply: FastifyReply) => {
    const form = formOf(request);
    const name = formValue(form, "name")?.trim();
    const data = formValue(form, "data");
    const missing = [...(name ? [] : ["name"]), ...(data?.trim() ? [] : ["data"])];
    if (missing.length > 0) throw invalidInput(missing);
    let parsed: ParsedSshKey;
    try {
      parsed = parseSshPublicKey(data!);
    } catch {
      throw invalidInput([], ["data"]);
    }
    if (ctx.state.key(parsed.fingerprint)) throw new RobotError(409, "KEY_ALREADY_EXISTS", "The supplied key already exists");
    const key = ctx.state.putKey({
      id: parsed.fingerprint,
      name: name!,
      type: parsed.type,
      size: parsed.size,
      data: parsed.openSsh,
      createdAt: Date.now(),
    });
    // "Once the key is successfully added, the status code 201 CREATED is returned."
    return reply.status(201).send({ key: keyJson(key) });
  });

  app.get("/key/:fingerprint", async (request) => ({ key: keyJson(keyParam(request)) }));

  app.post("/key/:fingerprint", async (request) => {
    const key = keyParam(request);
    const name = formValue(formOf(request), "name")?.trim();
    if (!name) throw invalidInput(["name"]);
    return { key: keyJson(ctx.state.putKey({ ...key, name })) };
  });

  app.delete("/key/:fingerprint", async (request, reply) => {
    const key = keyParam(request);
    ctx.state.removeKey(key.id);
    // "No output".
    return reply.status(200).send();
  });
}
