/**
 * The `local` stack of the local cloud: `stacks/Pulumi.local.yaml`, written by `nodefleet local up`
 * for this machine (its control plane's address and CA are per machine, so the file is generated
 * and git-ignored, as kind writes a kubeconfig). A static pool of three (with the SSH key `local up`
 * uploads) and an autoscaled pool for the scaling API (40 nodes and more, two server types), on the
 * fake Hetzner API; when the local cloud runs machines (as root), an Elastic Metal pool of two on the
 * fake Scaleway API, joining over SSH; with the Robot machines (`local up --robot-machines`), a Robot
 * pool of the fake Robot account's first two servers, installed through rescue and joined over SSH.
 * No `secure:`
 * value: the kubeconfig is read from KUBECONFIG in the environment the local cloud prints
 * (`cluster.kubeconfigFromEnvironment`).
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { findTool } from "../engine/toolchain";
import type { ControlPlane } from "./controlPlane";
import { LOCAL_SSH_KEY } from "./localSshKey";

export const LOCAL_STACK = "local";

/**
 * The local stack's Elastic Metal pool: the fake Scaleway project's IAM key its servers install
 * (whose private half `local env` gives as NODEFLEET_SSH_PRIVATE_KEY), and the OS user the
 * machines let it in as (the user running the local cloud: docs/local-cloud.md, machines).
 */
export interface LocalElasticMetal {
  readonly sshKeyId: string;
  readonly sshUser: string;
}

/** The Elastic Metal pool's name in the local stack. */
export const LOCAL_ELASTIC_METAL_POOL = "local-metal";

/**
 * Two Elastic Metal servers on a private network, joining over SSH as machines of the fake Scaleway
 * API (an offer with cloud-init, joined over SSH as `bootstrap: ssh` asks).
 */
function localElasticMetalPool(elasticMetal: LocalElasticMetal): Record<string, unknown> {
  return {
    name: LOCAL_ELASTIC_METAL_POOL,
    provider: "scaleway-elastic-metal",
    mode: "static",
    replicas: 2,
    zone: "fr-par-2",
    offer: "EM-A610R-NVME",
    os: "ubuntu_noble",
    privateNetwork: { name: "local-metal", subnet: "172.16.0.0/22" },
    sshKeyIds: [elasticMetal.sshKeyId],
    bootstrap: "ssh",
    ssh: { user: elasticMetal.sshUser },
    labels: { "node.kubernetes.io/pool": LOCAL_ELASTIC_METAL_POOL },
    taints: [{ key: "nodefleet.io/bare-metal", value: "true", effect: "NoSchedule" }],
  };
}

/** The local stack's Robot pool: its name, and what the local cloud gives it. */
export const LOCAL_ROBOT_POOL = "local-robot";

export interface LocalRobotPool {
  /** Robot server numbers of the fake account to adopt (their machines run). */
  readonly serverNumbers: readonly number[];
  /** The OpenSSH public key line the pool uploads (`POST /key`); its private half is NODEFLEET_SSH_PRIVATE_KEY in the local env. */
  readonly publicKey: string;
}

/** The bare-metal pools the local cloud can add to the local stack (each only when its machines run). */
export interface LocalBareMetalPools {
  readonly elasticMetal?: LocalElasticMetal;
  readonly robot?: LocalRobotPool;
}

/**
 * The fleet of the local stack. The taint and label show that the node agent registers them. With
 * `elasticMetal` (the local cloud runs machines), an Elastic Metal pool too; with `robot`, a Robot
 * pool (LOCAL_ROBOT_POOL) of those servers.
 */
export function localFleetConfig(
  plane: Pick<ControlPlane, "server"> & { readonly admin: { readonly caPem: string } },
  options: LocalBareMetalPools = {},
): Record<string, unknown> {
  return {
    "nodefleet:cluster": {
      id: "local",
      kind: "k0s",
      apiServer: plane.server,
      caCertificate: plane.admin.caPem,
      providerIdScheme: "nodefleet",
      k0sVersion: "v1.33.4+k0s.0",
      // The node agent downloads nothing, so no binary is checked; a real cluster pins k0sSha256.
      k0sChecksums: "release",
      controlPlaneAddresses: ["127.0.0.1/32"],
      kubeconfigFromEnvironment: true,
    },
    "nodefleet:network": { ipRange: "10.0.0.0/16", subnet: "10.0.1.0/24", zone: "eu-central" },
    "nodefleet:firewall": { nodePortSources: [] },
    "nodefleet:pools": [
      {
        name: "local-general",
        provider: "hcloud",
        mode: "static",
        replicas: 3,
        location: "hel1",
        serverTypes: ["cpx31"],
        image: "ubuntu-24.04",
        sshKeys: [LOCAL_SSH_KEY],
        labels: { "node.kubernetes.io/pool": "local-general" },
        taints: [{ key: "nodefleet.io/local", value: "true", effect: "NoSchedule" }],
      },
      {
        name: "local-burst",
        provider: "hcloud",
        mode: "autoscaled",
        location: "hel1",
        serverTypes: ["cpx21", "cpx31"],
        image: "ubuntu-24.04",
        // No SSH key, as Karpenter-managed nodes often have none: each named key costs the hcloud
        // provider one more look-up per server it creates.
        // cpx31 is 4 vCPU and 8 GB: 50 of them fit the cpu and memory limits too.
        limits: { maxNodes: 50, cpu: 200, memoryGiB: 400 },
        labels: { "node.kubernetes.io/pool": "local-burst" },
      },
      ...(options.elasticMetal ? [localElasticMetalPool(options.elasticMetal)] : []),
      ...(options.robot
        ? [
            {
              name: LOCAL_ROBOT_POOL,
              provider: "hetzner-robot",
              mode: "static",
              servers: options.robot.serverNumbers.map((serverNumber, i) => ({ serverNumber, name: `m${i + 1}` })),
              sshPublicKeys: [options.robot.publicKey],
              image: "ubuntu-24.04",
              location: "fsn1",
              labels: { "node.kubernetes.io/pool": LOCAL_ROBOT_POOL },
              taints: [{ key: "nodefleet.io/local", value: "true", effect: "NoSchedule" }],
            },
          ]
        : []),
    ],
  };
}

/**
 * Runs the toolchain's pulumi CLI in `cwd` (`stdin` for secrets, never argv); resolves with its
 * output, rejects naming the command, its exit code and the output's tail.
 */
export function runPulumi(args: string[], cwd: string, env: Record<string, string>, stdin?: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const pulumi = findTool("pulumi", { ...process.env, ...env });
    if (!pulumi) return reject(new Error("the pulumi CLI is not on PATH or in the toolchain cache: run `npm run toolchain`"));
    const child = spawn(pulumi, args, { cwd, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolvePromise(output) : reject(new Error(`pulumi ${args.join(" ")} exited ${code}:\n${output.trim().slice(-4000)}`)),
    );
    child.stdin.end(stdin ?? "");
  });
}

/**
 * Writes `<projectDir>/stacks/Pulumi.local.yaml` when it is missing, names another control plane or
 * was written by an older nodefleet (a kubeconfig secret) or its Elastic Metal pool names another
 * local cloud's SSH key, and creates the stack in the local
 * backend. Returns the file's path.
 */
export async function writeLocalStack(
  projectDir: string,
  plane: Pick<ControlPlane, "server"> & { readonly admin: { readonly caPem: string } },
  env: Record<string, string>,
  options: LocalBareMetalPools = {},
): Promise<string> {
  const file = join(projectDir, "stacks", `Pulumi.${LOCAL_STACK}.yaml`);
  const config = localFleetConfig(plane, options);
  const current = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (
    current.includes(plane.server) &&
    current.includes("kubeconfigFromEnvironment: true") &&
    current.includes(plane.admin.caPem.split("\n")[1] ?? "-") &&
    // An Elastic Metal pool names this local cloud's key; a file without one is kept as it is.
    (options.elasticMetal === undefined ||
      !current.includes(`name: ${LOCAL_ELASTIC_METAL_POOL}`) ||
      current.includes(options.elasticMetal.sshKeyId)) &&
    // Written with the Robot pool exactly when the Robot machines run (and for their key).
    (options.robot ? current.includes(options.robot.publicKey.split(" ")[1]!) : !current.includes(`name: ${LOCAL_ROBOT_POOL}`))
  )
    return file;
  const header = "# Written by `nodefleet local up` for this machine's local cloud (git-ignored); edit the pools freely.\n";
  writeFileSync(file, header + stringify({ config }), { mode: 0o600 });
  await runPulumi(["stack", "select", "--create", LOCAL_STACK], projectDir, env);
  return file;
}
