/**
 * The example cluster's burst servers in a simulated cloud, counted per node id: what shows a
 * member created twice (by a run after a crash, or by two replicas).
 */
import { SimulatedCloud } from "../../automation/simulated/simulatedCloud";

/** Servers per node id of the example cluster's hel1-burst pool in the simulated cloud under `dataDir`. */
export function serversByNode(dataDir: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const server of new SimulatedCloud(dataDir).listServers("nodefleet.io/cluster=example,nodefleet.io/pool=hel1-burst")) {
    const node = server.labels["nodefleet.io/node"]!;
    counts.set(node, (counts.get(node) ?? 0) + 1);
  }
  return counts;
}
