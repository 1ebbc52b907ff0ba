/**
 * Valid raw stack config (the `nodefleet:*` values as Pulumi hands them to the program), shaped like
 * stacks/Pulumi.example.yaml, with builders to vary it. Shared by every test that runs a fleet
 * program under mocks.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { type MockRunOptions, type MockRunResult, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { runProgram } from "../../stacks/fleetProgram";
import { FleetSpecError, parseFleetSpec } from "../../components/fleet/fleetSpec";

const FIXTURE_CLUSTER_ID = "example";

/** A syntactically valid PEM block (the control plane's CA is not a secret). */
export const FIXTURE_CA_CERTIFICATE = [
  "-----BEGIN CERTIFICATE-----",
  "MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mtc2Vy",
  "dmVyLWNhQDE3MDAwMDAwMDAwHhcNMjMxMTE0MjIxMzIwWhcNMzMxMTExMjIxMzIw",
  "-----END CERTIFICATE-----",
  "",
].join("\n");

export type RawConfig = Record<string, unknown>;

export function clusterConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: FIXTURE_CLUSTER_ID,
    kind: "k0s",
    apiServer: "https://203.0.113.10:6443",
    caCertificate: FIXTURE_CA_CERTIFICATE,
    providerIdScheme: "nodefleet",
    k0sVersion: "v1.33.4+k0s.0",
    // Fixtures have no real pinned checksum: nodes check the release's sha256sums.txt.
    k0sChecksums: "release",
    controlPlaneAddresses: ["203.0.113.10/32"],
    ...overrides,
  };
}

export function networkConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { ipRange: "10.0.0.0/16", subnet: "10.0.1.0/24", zone: "eu-central", ...overrides };
}

export function hcloudStaticPoolConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "hel1-general",
    provider: "hcloud",
    mode: "static",
    replicas: 3,
    location: "hel1",
    serverTypes: ["cpx31", "cpx41"],
    image: "ubuntu-24.04",
    labels: { "node.kubernetes.io/pool": "hel1-general" },
    ...overrides,
  };
}

export function hcloudAutoscaledPoolConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "hel1-burst",
    provider: "hcloud",
    mode: "autoscaled",
    location: "hel1",
    serverTypes: ["cpx21", "cpx31", "cpx41", "ccx23"],
    image: "ubuntu-24.04",
    limits: { maxNodes: 90, cpu: 720, memoryGiB: 1440 },
    labels: { "example.com/burst": "true" },
    taints: [{ key: "workload", value: "batch", effect: "NoSchedule" }],
    ...overrides,
  };
}

export function elasticMetalPoolConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "kura-scw-fr-par",
    provider: "scaleway-elastic-metal",
    mode: "static",
    zone: "fr-par-2",
    offer: "EM-B220E-NVME",
    os: "ubuntu_jammy",
    privateNetwork: { name: "runner-cache", subnet: "172.16.0.0/22" },
    sshKeyIds: ["fr-par/11111111-2222-4333-a444-555555555555"],
    taints: [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }],
    replicas: 1,
    ...overrides,
  };
}

export interface RawFleetConfigOptions {
  readonly cluster?: Record<string, unknown>;
  readonly network?: Record<string, unknown>;
  readonly firewall?: Record<string, unknown>;
  /** Replaces the pool list; default: one static hcloud pool (3 replicas) and one autoscaled hcloud pool. */
  readonly pools?: unknown[];
}

/**
 * The raw config keyed by full config key, as `runUnderMocks({config})` takes it. Overrides are
 * merged into the cluster/network/firewall objects; `pools` replaces the list.
 */
export function rawFleetConfig(options: RawFleetConfigOptions = {}): RawConfig {
  return {
    "nodefleet:cluster": clusterConfig(options.cluster),
    "nodefleet:network": networkConfig(options.network),
    "nodefleet:firewall": { nodePortSources: [], ...options.firewall },
    "nodefleet:pools": options.pools ?? [hcloudStaticPoolConfig(), hcloudAutoscaledPoolConfig()],
  };
}

/** The `config:` map of a committed stack file, e.g. `stackFileConfig("example")`. */
export function stackFileConfig(stack: string): RawConfig {
  const file = path.resolve(__dirname, "..", "..", "..", "stacks", `Pulumi.${stack}.yaml`);
  const doc = parse(readFileSync(file, "utf8")) as { config?: RawConfig };
  return doc.config ?? {};
}

/**
 * Runs the git-owned fleet program (stacks/fleetProgram.ts) under Pulumi's mock runtime with this
 * raw config; without a kubeconfig unless the config has one.
 */
export async function runFleetProgramUnderMocks(
  config: RawConfig,
  options: { newResource?: MockRunOptions<unknown>["newResource"]; call?: MockRunOptions<unknown>["call"] } = {},
): Promise<MockRunResult<Record<string, unknown>>> {
  return runUnderMocks({
    stack: "test",
    config,
    newResource: options.newResource,
    ...(options.call ? { call: options.call } : {}),
    program: () => runProgram({ allowMissingKubeconfig: true }),
  });
}

/** The problems parseFleetSpec lists for `config`; none when it is accepted. */
export function specProblems(config: Record<string, unknown>): string[] {
  try {
    parseFleetSpec(config);
  } catch (error) {
    if (error instanceof FleetSpecError) return error.problems;
    throw error;
  }
  return [];
}
