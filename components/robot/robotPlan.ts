/**
 * The members of a Hetzner Robot pool (one per adopted server, node id `<pool>-<server name>`) and
 * each member's generation: a hash of what an install bakes into the server (server number, image,
 * rescue keys, the join's non-secret inputs except what reaches a running node without one). A new
 * generation reinstalls the server and gets a fresh bootstrap token, as a new generation replaces a
 * Hetzner Cloud server. What a running node takes in place: the k0s or kubelet version (the
 * idempotent self-join upgrades it; `joinInputs`) and the labels and taints (a Node patch through
 * the API), so changing them reinstalls nothing.
 */
import type { ClusterSpec, HetznerRobotPool } from "../fleet/fleetSpec";
import { generationSuffix } from "../fleet/generationSuffix";
import { canonicalHash } from "../shared/canonicalJson";
import { type NodeMember, nodeMember } from "../fleet/nodeMember";
import { type WorkerUserDataInputs, joinConvergedInputs, workerUserDataInputs } from "../bootstrap/workerUserDataInputs";
import type { RobotKeyToUpload } from "./robotRescue";
import { md5FingerprintOfOpenSshKey } from "./sshKeyFingerprint";

export interface RobotMember {
  readonly member: NodeMember;
  readonly serverNumber: number;
  readonly generation: string;
  /** What the member's join script renders from (with its token). */
  readonly userData: WorkerUserDataInputs;
  /** Hash of what re-running the join on the installed system converges: userData without labels and taints. */
  readonly joinInputs: string;
}

/** The inputs a re-run of the self-join applies to a joined node: its version. */
function withoutInPlaceInputs(userData: WorkerUserDataInputs): Record<string, unknown> {
  const {
    k0sVersion: _k0s,
    k0sSha256: _sha,
    kubernetesVersion: _kubeadm,
    ...installed
  } = joinConvergedInputs(userData) as Record<string, unknown>;
  return installed;
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
      sshKeys: authorizedKeyFingerprints(pool),
      userData: withoutInPlaceInputs(userData),
    });
    return { member, serverNumber: server.serverNumber, generation, userData, joinInputs: canonicalHash(joinConvergedInputs(userData)) };
  });
}

/** The public keys the pool names, with the fingerprint Robot gives each (uploaded when the account lacks them). */
export function keysToUpload(pool: Pick<HetznerRobotPool, "sshPublicKeys">): RobotKeyToUpload[] {
  return pool.sshPublicKeys.map((line) => ({ fingerprint: md5FingerprintOfOpenSshKey(line), line }));
}

/**
 * The fingerprints the rescue and installed systems accept: the deposited keys', then the public
 * keys'. A pool naming deposited keys only gets exactly them, as before public keys existed, so its
 * members' generations do not change.
 */
export function authorizedKeyFingerprints(pool: Pick<HetznerRobotPool, "sshKeyFingerprints" | "sshPublicKeys">): string[] {
  return [...new Set([...pool.sshKeyFingerprints, ...keysToUpload(pool).map((k) => k.fingerprint)])];
}
