/**
 * The members of a Hetzner Robot pool (one per adopted server, node id `<pool>-<server name>`) and
 * each member's generation: a hash of what an install bakes into the server (server number, image,
 * rescue keys, every non-secret input of the join). A new generation reinstalls the server and gets
 * a fresh bootstrap token, as a new generation replaces a Hetzner Cloud server.
 */
import type { ClusterSpec, HetznerRobotPool } from "../fleet/fleetSpec";
import { generationSuffix } from "../fleet/generationSuffix";
import { type NodeMember, nodeMember } from "../fleet/nodeMember";
import { type WorkerUserDataInputs, workerUserDataInputs } from "../bootstrap/workerUserDataInputs";

export interface RobotMember {
  readonly member: NodeMember;
  readonly serverNumber: number;
  readonly generation: string;
  /** What the member's join script renders from (with its token); hashed into the generation. */
  readonly userData: WorkerUserDataInputs;
}

export function robotMembers(cluster: Omit<ClusterSpec, "kubeconfig">, pool: HetznerRobotPool): RobotMember[] {
  const template = { pool: pool.name, serverType: pool.serverType, location: pool.location, labels: pool.labels, taints: pool.taints };
  return pool.servers.map((server) => {
    const member = nodeMember(cluster, template, `${pool.name}-${server.name}`);
    const userData = workerUserDataInputs(cluster, member);
    const generation = generationSuffix({
      location: `robot-${server.serverNumber}`,
      image: pool.image,
      serverType: pool.serverType,
      sshKeys: pool.sshKeyFingerprints,
      userData,
    });
    return { member, serverNumber: server.serverNumber, generation, userData };
  });
}
