/**
 * The kubeconfig a program mints bootstrap tokens with and reads Nodes through: the stack's
 * `cluster.kubeconfig` (a secret), or, with `cluster.kubeconfigFromEnvironment`, the file the
 * KUBECONFIG environment variable names when the program runs.
 */
import { readFileSync } from "node:fs";
import { type ClusterSpec, FleetSpecError } from "./fleetSpec";

export function clusterKubeconfig(
  cluster: Pick<ClusterSpec, "kubeconfig" | "kubeconfigFromEnvironment">,
  options: {
    readonly env?: NodeJS.ProcessEnv;
    /** Render and simulation run without credentials: no KUBECONFIG is no kubeconfig. */ readonly optional?: boolean;
  } = {},
): string | undefined {
  if (!cluster.kubeconfigFromEnvironment) return cluster.kubeconfig;
  const file = (options.env ?? process.env).KUBECONFIG;
  if (!file && options.optional) return undefined;
  // A KUBECONFIG list (a:b) would merge files; one file keeps the credentials unambiguous.
  if (!file || file.includes(":")) {
    throw new FleetSpecError([
      `nodefleet:cluster.kubeconfigFromEnvironment: KUBECONFIG must name one kubeconfig file when the program runs (it is ${file ? `"${file}"` : "not set"})`,
    ]);
  }
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new FleetSpecError([
      `nodefleet:cluster.kubeconfigFromEnvironment: cannot read the kubeconfig ${file} that KUBECONFIG names (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    ]);
  }
}
