/**
 * `nodefleet local karpenter`: Karpenter by hand on the local cloud. Against a running `nodefleet
 * local up` (its data directory) and a running `nodefleet serve --stack local --engine automation`
 * (--url/NODEFLEET_API_URL, --token/NODEFLEET_API_TOKEN), it applies the chart's CRDs, the token
 * Secret, a NodefleetNodeClass and a NodePool mirroring the local stack's autoscaled pool, and an
 * `inflate` Deployment of 0 replicas, then runs the toolchain's `nodefleet-karpenter` in the
 * foreground until SIGINT/SIGTERM, which stop it. Everything missing is named before anything is
 * applied.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { type HcloudAutoscaledPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { NodefleetApiError, NodefleetClient, NodefleetConnectionError } from "../client/nodefleetClient";
import { karpenterControllerBinary, startKarpenterController, takeOverPidFile } from "../local/karpenterController";
import {
  KARPENTER_NAMESPACE,
  TOKEN_SECRET,
  applyKarpenterObjects,
  autoscaledPoolOf,
  createObject,
  inflateDeployment,
  karpenterCrds,
  karpenterObjects,
  nodeClassReadiness,
} from "../local/karpenterObjects";
import { type KubeIdentity, kube } from "../local/kubeClient";
import { kubeIdentityFromKubeconfig } from "../local/kubeconfigIdentity";
import { LOCAL_STACK } from "../local/localStack";
import { configValues, readStackConfigFile, stackConfigPath } from "../stackConfigFile";
import { generatedTokenPath } from "./stackService";
import { errorMessage } from "../../components/shared/errorMessage";

export interface LocalKarpenterOptions {
  readonly dataDir: string;
  readonly projectDir: string;
  readonly url: string;
  readonly token?: string;
  readonly serveDataDir: string;
  readonly pool?: string;
  readonly nodePool?: string;
  readonly consolidateAfter: string;
}

/** The environment `nodefleet local up` last wrote in `dataDir` (`<dataDir>/local/env.json`). */
export function readLocalCloudEnv(dataDir: string): Record<string, string> {
  const file = join(resolve(dataDir), "local", "env.json");
  try {
    return (JSON.parse(readFileSync(file, "utf8")) as { env: Record<string, string> }).env;
  } catch {
    throw new Error(`${file} does not exist: start the local cloud with \`nodefleet local up\` first`);
  }
}

/** `path` relative to the working directory when it lies below it (shorter hints). */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  if (rel === "") return ".";
  return !rel.startsWith("..") && !rel.startsWith("/") ? rel : path;
}

const say = (line: string) => process.stderr.write(`nodefleet local karpenter: ${line}\n`);

export async function runLocalKarpenter(options: LocalKarpenterOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const problems: string[] = [];
  const problem = (error: unknown) => problems.push(errorMessage(error));

  try {
    karpenterControllerBinary(env);
  } catch (error) {
    problem(error);
  }
  try {
    karpenterCrds();
  } catch (error) {
    problem(error);
  }

  const dataDir = resolve(options.dataDir);
  const pidFile = join(dataDir, "local", "karpenter.json");
  try {
    takeOverPidFile(pidFile);
  } catch (error) {
    problem(error);
  }
  let admin: KubeIdentity | undefined;
  let kubeconfig = "";
  try {
    const localEnv = readLocalCloudEnv(dataDir);
    kubeconfig = localEnv.KUBECONFIG ?? join(dataDir, "local", "admin.kubeconfig");
    const identity = kubeIdentityFromKubeconfig(kubeconfig);
    try {
      await kube(identity, "GET", "/readyz");
    } catch (error) {
      throw new Error(
        `the local cloud's control plane at ${identity.server} does not answer (${(error as Error).message}): start \`nodefleet local up --data-dir ${shown(dataDir)}\` (it runs in the foreground)`,
      );
    }
    admin = identity;
  } catch (error) {
    problem(error);
  }

  const projectDir = resolve(options.projectDir);
  let pool: HcloudAutoscaledPool | undefined;
  let clusterId = "local";
  try {
    const file = stackConfigPath(LOCAL_STACK, projectDir);
    if (!existsSync(file)) throw new Error(`${file} does not exist: \`nodefleet local up --project-dir ${shown(projectDir)}\` writes it`);
    const fleet = parseFleetSpec(configValues(readStackConfigFile(LOCAL_STACK, projectDir).config));
    clusterId = fleet.cluster.id;
    pool = autoscaledPoolOf(fleet, options.pool);
  } catch (error) {
    problem(error instanceof Error ? new Error(`stack ${LOCAL_STACK}: ${error.message}`) : error);
  }

  const generated = generatedTokenPath(resolve(options.serveDataDir));
  const tokenSource = options.token
    ? "--token"
    : env.NODEFLEET_API_TOKEN
      ? "NODEFLEET_API_TOKEN"
      : existsSync(generated)
        ? generated
        : undefined;
  const token = options.token ?? (env.NODEFLEET_API_TOKEN || (existsSync(generated) ? readFileSync(generated, "utf8").trim() : undefined));
  const url = options.url.replace(/\/+$/, "");
  const serveHint = `start \`nodefleet serve --stack local --engine automation\` (see README, "Try it locally") or point --url/NODEFLEET_API_URL at it`;
  if (!token) {
    problems.push(
      `no API token for the scaling API: pass --token or set NODEFLEET_API_TOKEN to the token \`serve\` accepts for cluster ${clusterId} (NODEFLEET_API_TOKENS="${clusterId}:<token>")`,
    );
  } else {
    const client = new NodefleetClient({ baseUrl: url, clusterId, token, timeoutMs: 10_000 });
    try {
      const cluster = await client.getCluster();
      if (pool && !cluster.pools.some((p) => p.name === pool!.name)) {
        problems.push(
          `the scaling API at ${url} serves no pool ${pool.name} in cluster ${clusterId} (it serves: ${cluster.pools.map((p) => p.name).join(", ") || "none"}): is it serving the same project's stack ${LOCAL_STACK}?`,
        );
      }
      const readiness = await client.readiness().catch(() => undefined);
      if (readiness && readiness.body.status !== "ready")
        say(
          `warning: the scaling API is ${readiness.body.status}${readiness.body.details ? `: ${JSON.stringify(readiness.body.details)}` : ""}`,
        );
    } catch (error) {
      if (error instanceof NodefleetConnectionError) problems.push(`no scaling API answers at ${url} (${error.reason}): ${serveHint}`);
      else if (error instanceof NodefleetApiError && error.status === 401)
        problems.push(
          `the scaling API at ${url} refused the token from ${tokenSource} (401): use the token \`serve\` accepts for cluster ${clusterId}`,
        );
      else if (error instanceof NodefleetApiError && error.status === 404)
        problems.push(`the scaling API at ${url} serves no cluster ${clusterId} (${error.message}): ${serveHint}`);
      else problem(error);
    }
  }

  if (problems.length > 0 || !admin || !pool || !token) {
    throw new Error(`cannot run Karpenter on the local cloud:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }

  const autoscaled = pool;
  const plane = admin;
  const nodePoolName = options.nodePool ?? autoscaled.name;
  const objects = karpenterObjects({
    pool: autoscaled,
    clusterId,
    endpoint: url,
    token,
    nodeClassName: autoscaled.name,
    nodePoolName,
    consolidateAfter: options.consolidateAfter,
  });
  say(`applying to the local cloud's control plane at ${plane.server}...`);
  await applyKarpenterObjects(plane, objects);
  const inflate = inflateDeployment({ replicas: 0, cpu: "1", nodePool: nodePoolName, taints: autoscaled.taints });
  await createObject(plane, inflate);

  const limits = (objects.nodePool.spec as { limits: Record<string, string> }).limits;
  const labels = Object.entries(autoscaled.labels).map(([k, v]) => `${k}=${v}`);
  const taints = autoscaled.taints.map((t) => `${t.key}${t.value !== undefined ? `=${t.value}` : ""}:${t.effect}`);
  const kubectl = `kubectl --kubeconfig ${shown(kubeconfig)}`;
  process.stdout.write(
    [
      `applied (server-side apply, again on every run):`,
      `  CustomResourceDefinitions ${objects.crds.map((c) => c.metadata.name).join(", ")}`,
      `  Namespace ${KARPENTER_NAMESPACE}, Secret ${KARPENTER_NAMESPACE}/${TOKEN_SECRET} (the API token from ${tokenSource})`,
      `  NodefleetNodeClass ${autoscaled.name}: endpoint ${url}, cluster ${clusterId}, pool ${autoscaled.name}`,
      `  NodePool ${nodePoolName}: instance types ${autoscaled.serverTypes.join(", ")}; limits ${Object.entries(limits)
        .map(([k, v]) => `${k} ${v}`)
        .join(
          ", ",
        )}; labels ${labels.join(", ") || "none"}; taints ${taints.join(", ") || "none"}; consolidateAfter ${options.consolidateAfter}`,
      `  Deployment default/inflate (created with 0 replicas if missing: pods of 1 CPU on NodePool ${nodePoolName})`,
      "",
    ].join("\n"),
  );

  const controller = await startKarpenterController({
    kubeconfig,
    env,
    onOutput: (chunk) => process.stderr.write(chunk),
    pidFile,
  });
  let stopping: string | undefined;
  const stopped = new Promise<void>((done) => {
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = signal;
      say(`${signal}: stopping ${controller.binary.split("/").pop()} (pid ${controller.child.pid})...`);
      void controller.stop().then(done, done);
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
  process.stdout.write(
    [
      `nodefleet-karpenter running (pid ${controller.child.pid}; metrics on :${controller.metricsPort}, health on :${controller.healthPort}); its log goes to stderr. Ctrl-C stops it.`,
      `Try: ${kubectl} scale deployment inflate --replicas 5   (then: ${kubectl} get nodeclaims,nodes -w)`,
      "",
    ].join("\n"),
  );

  void (async () => {
    const deadline = Date.now() + 120_000;
    let last: { ready: boolean; message?: string } | undefined;
    while (!stopping && controller.child.exitCode === null && Date.now() < deadline) {
      last = await nodeClassReadiness(plane, autoscaled.name).catch(() => undefined);
      if (last?.ready) {
        process.stdout.write(`NodefleetNodeClass ${autoscaled.name} is Ready: Karpenter scales pool ${autoscaled.name} through ${url}\n`);
        return;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    if (!stopping && controller.child.exitCode === null)
      say(
        `warning: NodefleetNodeClass ${autoscaled.name} is not Ready after 120 s${last?.message ? `: ${last.message}` : ""} (${kubectl} get nfnc -o yaml)`,
      );
  })();

  const outcome = await Promise.race([stopped.then(() => "stopped" as const), controller.exited]);
  if (outcome !== "stopped" && !stopping) {
    // A Ctrl-C in the terminal reaches the controller too; let our own handler see it first.
    await new Promise((r) => setTimeout(r, 200));
    if (!stopping) throw new Error(`nodefleet-karpenter exited (${outcome}) on its own; its log above says why`);
  }
  await stopped;
  say(
    `stopped. The CRDs, NodeClass, NodePool and any nodes Karpenter made stay; run \`nodefleet local karpenter\` again to have Karpenter manage them (its NodeClaims keep finalizers until it does).`,
  );
}
