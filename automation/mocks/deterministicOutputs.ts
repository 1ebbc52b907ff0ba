/**
 * Deterministic provider outputs for resources declared under Pulumi's mock runtime: the same
 * resource name always gets the same id, address and random value, so two renders of the same
 * config are identical and tests can compare them. The simulated engine layers its persistent
 * cloud state on top of this.
 */
import { NODE_BOOTSTRAP_TOKEN_TYPE } from "../../components/provider/bootstrapTokenResource";
import { ROBOT_RESCUE_TYPE } from "../../components/robot/robotRescueResource";
import { createHash } from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { sha256Hex } from "../../components/shared/canonicalJson";
import { ELASTIC_METAL_COMPUTED_OUTPUTS } from "./scalewayLookups";
import { robotCommandMockOutputs, robotRescueMockOutputs } from "./robotMocks";
import { documentationIpv4, hashNumber, numericId } from "./seededValues";
import { isWrappedSecret } from "./secretValues";

const RANDOM_ALPHABET_LOWER = "abcdefghijklmnopqrstuvwxyz";
const RANDOM_ALPHABET_UPPER = RANDOM_ALPHABET_LOWER.toUpperCase();
const RANDOM_DIGITS = "0123456789";

/** What random.RandomString would produce, from a seed instead of entropy. */
function deterministicRandomString(seed: string, inputs: Record<string, unknown>): string {
  const length = Number(inputs.length ?? 16);
  const alphabet =
    (inputs.lower === false ? "" : RANDOM_ALPHABET_LOWER) +
    (inputs.upper === false ? "" : RANDOM_ALPHABET_UPPER) +
    (inputs.numeric === false ? "" : RANDOM_DIGITS) +
    (inputs.special === false ? "" : "!@#$%&*()-_=+[]{}<>:?");
  let out = "";
  let block = sha256Hex(seed);
  for (let i = 0; out.length < length; i++) {
    if (i * 2 + 2 > block.length) {
      block = sha256Hex(block);
      i = 0;
    }
    out += alphabet[parseInt(block.slice(i * 2, i * 2 + 2), 16) % alphabet.length];
  }
  return out;
}

/** The fixed clock mock runs use, so timestamps in state are reproducible. */
const MOCK_EPOCH = "2026-01-01T00:00:00Z";
const TOKEN_CHARSET = { lower: true, upper: false, numeric: true, special: false } as const;

function offsetTimestamp(inputs: Record<string, unknown>): { base: string; rfc3339: string } {
  const base = typeof inputs.baseRfc3339 === "string" ? inputs.baseRfc3339 : MOCK_EPOCH;
  const minutes = Number(inputs.offsetMinutes ?? 0) + 60 * Number(inputs.offsetHours ?? 0) + 1440 * Number(inputs.offsetDays ?? 0);
  const seconds = Number(inputs.offsetSeconds ?? 0) + minutes * 60;
  return { base, rfc3339: new Date(Date.parse(base) + seconds * 1000).toISOString().replace(/\.000Z$/, "Z") };
}

/** What the hcloud plugin (as upstream's StateFunc) records of a server's user data: its base64 SHA-1, secret when the input is. */
function userDataHash(value: unknown): unknown {
  if (isWrappedSecret(value)) return { ...value, value: userDataHash(value.value) };
  return typeof value === "string" ? createHash("sha1").update(value).digest("base64") : value;
}

export type OutputsForType = (args: pulumi.runtime.MockResourceArgs) => Record<string, unknown>;

/** Computed outputs per resource type; anything not listed echoes its inputs. */
const COMPUTED_OUTPUTS: Record<string, OutputsForType> = {
  "hcloud:index/server:Server": (a) => ({
    ipv4Address: documentationIpv4(a.name),
    ipv6Address: `2001:db8::${hashNumber(a.name, 0xffff).toString(16)}`,
    status: "running",
    ...(a.inputs.userData === undefined ? {} : { userData: userDataHash(a.inputs.userData) }),
  }),
  "random:index/randomString:RandomString": (a) => ({ result: deterministicRandomString(a.name, a.inputs) }),
  "random:index/randomPassword:RandomPassword": (a) => ({ result: deterministicRandomString(a.name, a.inputs) }),
  "time:index/offset:Offset": (a) => {
    const t = offsetTimestamp(a.inputs);
    return { baseRfc3339: t.base, rfc3339: t.rfc3339 };
  },
  "time:index/static:Static": (a) => ({ rfc3339: typeof a.inputs.rfc3339 === "string" ? a.inputs.rfc3339 : MOCK_EPOCH }),
  // The Robot pool's disk listing and install output, else the Elastic Metal host-key read (its stdout is pinned).
  "command:remote:Command": (a) =>
    robotCommandMockOutputs(a) ?? ELASTIC_METAL_COMPUTED_OUTPUTS["command:remote:Command"](a, deterministicId(a)),
  // nodefleet's own plugin: a bootstrap token's id, token and expiration (random and "now" in the plugin).
  [NODE_BOOTSTRAP_TOKEN_TYPE]: (a) => {
    const tokenId = deterministicRandomString(`${a.name}-id`, { length: 6, ...TOKEN_CHARSET });
    const secret = deterministicRandomString(`${a.name}-secret`, { length: 16, ...TOKEN_CHARSET });
    return { tokenId, token: `${tokenId}.${secret}`, expiration: offsetTimestamp({ offsetMinutes: a.inputs.ttlMinutes }).rfc3339 };
  },
  // The Hetzner Robot pool's rescue resource (the dynamic one): the server's address ...
  "pulumi-nodejs:dynamic/nodefleet:RobotRescue": robotRescueMockOutputs,
  // ... and the plugin's.
  [ROBOT_RESCUE_TYPE]: robotRescueMockOutputs,
};

/** Ids: numeric for Hetzner resources (their args take numbers), name-derived otherwise. */
function deterministicId(args: pulumi.runtime.MockResourceArgs): string {
  if (args.id) return args.id;
  if (args.type.startsWith("hcloud:")) return numericId(`${args.type}/${args.name}`);
  return `${args.name}-${sha256Hex(`${args.type}/${args.name}`).slice(0, 8)}`;
}

/** The computed (non-input) outputs of a resource with the given id; empty for types that only echo inputs. */
export function computedOutputs(args: pulumi.runtime.MockResourceArgs, id: string): Record<string, unknown> {
  return COMPUTED_OUTPUTS[args.type]?.(args) ?? ELASTIC_METAL_COMPUTED_OUTPUTS[args.type]?.(args, id) ?? {};
}

export function deterministicOutputs(args: pulumi.runtime.MockResourceArgs): { id: string; state: Record<string, unknown> } {
  const id = deterministicId(args);
  return { id, state: { ...args.inputs, ...computedOutputs(args, id) } };
}
