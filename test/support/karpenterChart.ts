/**
 * The driver's Helm charts installed with the toolchain's helm into a cluster, as an operator does
 * (docs/karpenter.md, "The chart in production"): the CRD chart first, then the main chart with
 * `--skip-crds`, its NodeClass and NodePool from values. No `--wait`: on the local control plane no
 * pod runs, so the test runs the Deployment's replicas as local processes, with the environment the
 * installed Deployment gives its container (read back by `chartDeployment`).
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { findTool } from "../../automation/engine/toolchain";
import { type KubeIdentity, kube } from "../../automation/local/kubeClient";
import { REPOSITORY_ROOT } from "./serveProcess";
import { until } from "./until";

const CHARTS_DIR = join(REPOSITORY_ROOT, "driver", "charts");
/** The release name of the main chart; its objects' full name is the same (it contains the chart's name). */
const CHART_RELEASE = "nodefleet-karpenter";

export interface HelmInstallArgs {
  /** The admin kubeconfig helm installs with. */
  readonly kubeconfig: string;
  readonly namespace: string;
  /** The main chart's values (written to a file, never to argv). */
  readonly values: Record<string, unknown>;
  /** helm's home folders (cache, config, data) and the values file go here. */
  readonly workDir: string;
}

function helm(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const binary = findTool("helm", env);
  if (!binary) return Promise.reject(new Error("helm is not on PATH or in the toolchain cache: run `npm run toolchain`"));
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(output) : reject(new Error(`helm ${args.join(" ")} exited ${code}:\n${output.trim()}`)),
    );
  });
}

/** Whether the API server serves `resource` in `groupVersion` (an installed CRD is served a moment after its creation). */
async function served(admin: KubeIdentity, groupVersion: string, resource: string): Promise<true | undefined> {
  const list = (await kube(admin, "GET", `/apis/${groupVersion}`)) as { resources?: Array<{ name: string }> };
  return list.resources?.some((r) => r.name === resource) ? true : undefined;
}

/**
 * `helm install` of the CRD chart, then (once the API server serves its kinds) of the main chart
 * with `--skip-crds` into `args.namespace`, which must exist.
 */
export async function helmInstallCharts(admin: KubeIdentity, args: HelmInstallArgs): Promise<void> {
  mkdirSync(args.workDir, { recursive: true });
  const env = {
    ...process.env,
    KUBECONFIG: args.kubeconfig,
    HELM_CACHE_HOME: join(args.workDir, "cache"),
    HELM_CONFIG_HOME: join(args.workDir, "config"),
    HELM_DATA_HOME: join(args.workDir, "data"),
  };
  await helm(["install", "nodefleet-karpenter-crd", join(CHARTS_DIR, "nodefleet-karpenter-crd"), "--namespace", args.namespace], env);
  for (const [groupVersion, resource] of [
    ["karpenter.sh/v1", "nodepools"],
    ["karpenter.sh/v1", "nodeclaims"],
    ["karpenter.nodefleet.io/v1alpha1", "nodefleetnodeclasses"],
  ] as const)
    await until(
      `${resource} served`,
      () => served(admin, groupVersion, resource),
      60_000,
      () => "",
      250,
    );
  const valuesFile = join(args.workDir, "values.yaml");
  writeFileSync(valuesFile, stringify(args.values), { mode: 0o600 });
  await helm(
    [
      "install",
      CHART_RELEASE,
      join(CHARTS_DIR, "nodefleet-karpenter"),
      "--namespace",
      args.namespace,
      "--skip-crds",
      "--values",
      valuesFile,
    ],
    env,
  );
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

/** The projected ServiceAccount token a replica's container reads, as the pod spec declares it. */
export interface ProjectedToken {
  /** Where the container reads it (the volume's mount path and the source's path). */
  readonly file: string;
  readonly audience: string;
  readonly expirationSeconds: number;
}

export interface ChartDeployment {
  readonly replicas: number;
  readonly serviceAccountName: string;
  /** The serviceAccountToken volume mounted into the controller container, if any. */
  readonly projectedToken?: ProjectedToken;
  /**
   * The controller container's environment as the kubelet would give it: literal values and the
   * pod's namespace (`fieldRef: metadata.namespace`); resource fields (MEMORY_LIMIT) are left out.
   */
  readonly env: Record<string, string>;
}

/** The installed Deployment of the main chart, as its replicas would run. */
export async function chartDeployment(admin: KubeIdentity, namespace: string): Promise<ChartDeployment> {
  const deployment = (await kube(admin, "GET", `/apis/apps/v1/namespaces/${namespace}/deployments/${CHART_RELEASE}`)) as {
    spec: {
      replicas: number;
      template: {
        spec: {
          serviceAccountName: string;
          containers: Array<{ name: string; env?: EnvVar[]; volumeMounts?: Array<{ name: string; mountPath: string }> }>;
          volumes?: Array<{
            name: string;
            projected?: { sources: Array<{ serviceAccountToken?: { audience?: string; expirationSeconds?: number; path: string } }> };
          }>;
        };
      };
    };
  };
  const pod = deployment.spec.template.spec;
  const container = pod.containers.find((c) => c.name === "controller");
  if (!container) throw new Error(`the Deployment ${namespace}/${CHART_RELEASE} has no container named controller`);
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) env[variable.name] = variable.value;
    else if (variable.valueFrom?.fieldRef?.fieldPath === "metadata.namespace") env[variable.name] = namespace;
  }
  let projectedToken: ProjectedToken | undefined;
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    const source = volume?.projected?.sources.find((s) => s.serviceAccountToken)?.serviceAccountToken;
    if (source)
      projectedToken = {
        file: join(mount.mountPath, source.path),
        audience: source.audience ?? "",
        // Kubernetes' default for a projected token's lifetime.
        expirationSeconds: source.expirationSeconds ?? 3600,
      };
  }
  return {
    replicas: deployment.spec.replicas,
    serviceAccountName: pod.serviceAccountName,
    env,
    ...(projectedToken ? { projectedToken } : {}),
  };
}
