/**
 * The healer's hands: the rungs run through the providers' APIs, and the step written on the Node.
 * Robot: `sw` and `hw` resets (`POST /reset/{server-number}`), only of the types the server offers,
 * never `power` (a button press that may leave it off). Elastic Metal: the software rung is a
 * reboot through Scaleway's API (`POST /baremetal/v1/zones/{zone}/servers/{id}/reboot`,
 * https://www.scaleway.com/en/developers/api/elastic-metal/#path-servers-reboot-an-elastic-metal-server);
 * it has no separate hardware reset. The SSH reboot is not run by the service: it holds no pinned
 * host key of the installed systems (they live in the git stack's state), and an unpinned root
 * login is not worth one rung; the ladder moves on to the reset.
 */
import { kubeconfigCredentials, kubernetesApiRequest } from "../../components/kubernetes/kubernetesApiClient";
import type { RemediationRung, RemediationStep } from "../../components/robot/robotRemediation";
import { robotResetTypeFor } from "../../components/robot/robotRemediation";
import type { RobotClient } from "../../components/robot/robotClient";
import type { BareMetalTarget } from "./bareMetalTargets";
import { remediationCondition } from "./remediationCondition";
import { ElasticMetalApi, type ScalewayAccess } from "../scaleway/elasticMetalApi";

export interface RemediationHands {
  /** The Robot webservice client; Robot rungs fail with a message naming HROBOT_USER/HROBOT_PASSWORD without it. */
  readonly robot?: RobotClient;
  readonly scaleway?: ScalewayAccess;
  /** Counts each provider call (the service's cloud request metric). */
  readonly counted?: (provider: string, operation: string) => void;
}

/** Runs a rung on a target; false when the target has no such rung. */
export function runRungWith(hands: RemediationHands): (target: BareMetalTarget, rung: RemediationRung) => Promise<boolean> {
  return async (target, rung) => {
    if (rung === "ssh-reboot") return false;
    if (target.kind === "hetzner-robot") return robotReset(hands, target, rung);
    if (rung !== "sw-reset") return false;
    await scalewayReboot(hands, target);
    return true;
  };
}

async function robotReset(hands: RemediationHands, target: Extract<BareMetalTarget, { kind: "hetzner-robot" }>, rung: RemediationRung) {
  const { robot } = hands;
  if (!robot) {
    throw new Error(
      `Robot server ${target.serverNumber} (Node ${target.nodeName}) needs a reset, but no Robot webservice credentials are set (HROBOT_USER, HROBOT_PASSWORD)`,
    );
  }
  const type = robotResetTypeFor(rung)!;
  hands.counted?.("robot", "reset_options");
  const offered = (await robot.resetOptions(target.serverNumber)).type;
  if (!offered.includes(type)) return false;
  hands.counted?.("robot", "reset");
  await robot.reset(target.serverNumber, type);
  return true;
}

async function scalewayReboot(hands: RemediationHands, target: Extract<BareMetalTarget, { kind: "scaleway-elastic-metal" }>) {
  const { scaleway } = hands;
  if (!scaleway) {
    throw new Error(`Elastic Metal Node ${target.nodeName} needs a reboot, but no Scaleway secret key is set (SCW_SECRET_KEY)`);
  }
  const api = new ElasticMetalApi(scaleway, (operation) => hands.counted?.("scaleway", operation));
  // The name filter matches substrings: only the exact name is the member's server.
  const server = (await api.listServers(target.zone, { name: target.nodeName })).find((s) => s.name === target.nodeName);
  if (!server) throw new Error(`Elastic Metal Node ${target.nodeName}: no server of that name in ${target.zone}`);
  await api.reboot(target.zone, server.id);
}

/** Writes the step as the Node's NodefleetRemediation condition (a strategic merge by condition type keeps kubelet's). */
export function recordStepWith(
  kubeconfig: () => string | undefined,
  rungWaitMs?: number,
): (nodeName: string, step: RemediationStep, sinceMs: number) => Promise<void> {
  return async (nodeName, step, sinceMs) => {
    const config = kubeconfig();
    if (config === undefined) throw new Error("the stack names no kubeconfig, so the step cannot be written on the Node");
    await kubernetesApiRequest(
      kubeconfigCredentials(config),
      "PATCH",
      `/api/v1/nodes/${encodeURIComponent(nodeName)}/status`,
      `recording remediation step ${step} on Node ${nodeName}`,
      {
        contentType: "application/strategic-merge-patch+json",
        value: { status: { conditions: [remediationCondition(step, sinceMs, rungWaitMs)] } },
      },
    );
  };
}
