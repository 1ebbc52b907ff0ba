/**
 * `nodefleet render`: runs a stack's program under Pulumi's mock runtime (no credentials, no
 * cloud) and reports every resource it declares, with each node's user data or join script as
 * plain text. Secrets are masked unless asked for.
 */
import { gitStackProgram, runProgramReference } from "../gitStackProgram";
import { runUnderMocks, type RecordedResource } from "../mocks/runUnderMocks";
import { isWrappedSecret, resolveSecrets } from "../mocks/secretValues";
import { configValues, readStackConfigFile } from "../stackConfigFile";
import { maskSecretText } from "./maskSecrets";

/** Where each resource type carries the text a node boots or joins with. */
const BOOTSTRAP_FIELDS: Readonly<Record<string, string>> = {
  "hcloud:index/server:Server": "userData",
  "scaleway:elasticmetal/server:Server": "cloudInit",
  // The bare-metal SSH self-join pipes its script on stdin (never on a command line).
  "command:remote:Command": "stdin",
};

/** The field holding `resource`'s boot or join text: of the remote commands, only the `-join` (not the host-firewall reload, VLAN delivery or re-push). */
function bootstrapFieldOf(resource: Pick<RecordedResource, "type" | "name">): string | undefined {
  if (resource.type === "command:remote:Command" && !resource.name.endsWith("-join")) return undefined;
  return BOOTSTRAP_FIELDS[resource.type];
}

export interface RenderedResource {
  readonly type: string;
  readonly name: string;
  /** False for component resources. */
  readonly custom: boolean;
  readonly inputs: Record<string, unknown>;
}

export interface RenderedBootstrap {
  /** nodefleet.io/node label of the server, or the resource name. */
  readonly node: string;
  readonly type: string;
  readonly resource: string;
  readonly field: string;
  readonly text: string;
}

export interface RenderResult {
  readonly stack: string;
  readonly offline: true;
  readonly secretsShown: boolean;
  readonly resources: RenderedResource[];
  readonly bootstraps: RenderedBootstrap[];
  readonly outputs: unknown;
  /** Things the reader should know: encrypted values left out, and the like. */
  readonly notes: string[];
}

function collectSecretStrings(value: unknown, into: Set<string>): void {
  if (isWrappedSecret(value)) {
    const plain = resolveSecrets(value.value, true);
    if (typeof plain === "string") into.add(plain);
    else collectSecretStrings(plain, into);
    return;
  }
  if (Array.isArray(value)) value.forEach((v) => collectSecretStrings(v, into));
  else if (typeof value === "object" && value !== null) Object.values(value).forEach((v) => collectSecretStrings(v, into));
}

function nodeNameOf(resource: RecordedResource): string {
  const labels = resolveSecrets(resource.inputs.labels, true) as Record<string, string> | undefined;
  return labels?.["nodefleet.io/node"] ?? resource.name;
}

export async function renderStack(stackName: string, options: { showSecrets?: boolean; root?: string } = {}): Promise<RenderResult> {
  const showSecrets = options.showSecrets ?? false;
  const file = readStackConfigFile(stackName, options.root);
  const notes = file.encryptedPaths.map((p) => `${p} is encrypted (secure:) and cannot be read offline; rendered without it`);
  const run = await runUnderMocks({
    stack: stackName,
    config: configValues(file.config),
    program: () => runProgramReference(gitStackProgram({ allowMissingKubeconfig: true })),
  });

  // Secrets that appear outside bootstrap texts (tokens, kubeconfigs) are masked inside them too.
  const knownSecrets = new Set<string>();
  for (const resource of run.resources) {
    const field = bootstrapFieldOf(resource);
    for (const [key, value] of Object.entries(resource.inputs)) if (key !== field) collectSecretStrings(value, knownSecrets);
  }

  const bootstraps: RenderedBootstrap[] = [];
  const resources = run.resources.map((resource): RenderedResource => {
    const field = bootstrapFieldOf(resource);
    const inputs = resolveSecrets(resource.inputs, showSecrets) as Record<string, unknown>;
    const raw = field ? resolveSecrets(resource.inputs[field], true) : undefined;
    if (field && typeof raw === "string") {
      const text = showSecrets ? raw : maskSecretText(raw, knownSecrets);
      bootstraps.push({ node: nodeNameOf(resource), type: resource.type, resource: resource.name, field, text });
      inputs[field] = `<${field}: ${Buffer.byteLength(raw)} bytes, shown below>`;
    }
    return { type: resource.type, name: resource.name, custom: resource.custom, inputs };
  });
  return {
    stack: stackName,
    offline: true,
    secretsShown: showSecrets,
    resources,
    bootstraps,
    outputs: resolveSecrets(run.outputs, showSecrets),
    notes,
  };
}

const KEY_INPUT_WIDTH = 140;

/** The human form: a resource table, then each node's bootstrap text. */
export function formatRender(result: RenderResult): string {
  const lines: string[] = [];
  lines.push(`nodefleet render: stack ${result.stack} (offline, Pulumi mock runtime: no credentials, no cloud)`);
  lines.push(result.secretsShown ? "SECRETS ARE SHOWN (--show-secrets)" : "secrets masked as [secret]; --show-secrets shows them");
  for (const note of result.notes) lines.push(`note: ${note}`);
  const custom = result.resources.filter((r) => r.custom);
  lines.push("", `RESOURCES (${custom.length}, plus ${result.resources.length - custom.length} components)`);
  const typeWidth = Math.max(...result.resources.map((r) => r.type.length), 4);
  const nameWidth = Math.max(...result.resources.map((r) => r.name.length), 4);
  lines.push(`${"TYPE".padEnd(typeWidth)}  ${"NAME".padEnd(nameWidth)}  KEY INPUTS`);
  for (const r of result.resources) {
    let summary = JSON.stringify(r.inputs);
    if (summary.length > KEY_INPUT_WIDTH) summary = `${summary.slice(0, KEY_INPUT_WIDTH - 1)}…`;
    lines.push(`${r.type.padEnd(typeWidth)}  ${r.name.padEnd(nameWidth)}  ${r.custom ? summary : "(component)"}`);
  }
  for (const b of result.bootstraps) {
    lines.push("", `--- ${b.field} of node ${b.node} (${b.type} ${b.resource}) ---`, b.text.trimEnd(), `--- end of ${b.node} ---`);
  }
  return `${lines.join("\n")}\n`;
}
