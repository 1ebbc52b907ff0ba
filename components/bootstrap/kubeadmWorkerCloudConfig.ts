/**
 * Cloud-init user data for kubeadm-cluster workers (Hetzner Cloud, and Elastic Metal OSes with
 * cloud-init): the self-join script as a root-only file, run once by runcmd. The script removes
 * itself and the bootstrap kubeconfig after the join; the provider's metadata service keeps the
 * user data readable, which is why the README tells operators to block it from pods.
 */
import { stringify } from "yaml";
import { SELF_JOIN_SCRIPT_PATH, renderWorkerSelfJoinScript } from "./selfJoinScript";
import type { KubeadmWorkerUserDataInputs } from "./workerUserDataInputs";
import { type PrivateEgress, privateEgressCloudConfig } from "./privateEgressRoute";

/** Elastic Metal's cloudInit limit (provider docs: at most 127,998 characters). */
const ELASTIC_METAL_MAX_CLOUD_INIT_CHARS = 127_998;

/**
 * Wraps a self-join script (kubeadm, or k0s with a private network on Elastic Metal) as `#cloud-config`;
 * with `privateEgress` the default route moves to the private network before the script runs.
 */
export function renderSelfJoinCloudConfig(selfJoinScript: string, privateEgress?: PrivateEgress): string {
  const egress = privateEgress ? privateEgressCloudConfig(privateEgress) : { writeFiles: [], runcmd: [] };
  const config = {
    write_files: [{ path: SELF_JOIN_SCRIPT_PATH, owner: "root:root", permissions: "0700", content: selfJoinScript }, ...egress.writeFiles],
    runcmd: [...egress.runcmd, ["bash", SELF_JOIN_SCRIPT_PATH]],
  };
  return `#cloud-config\n${stringify(config, { lineWidth: 0 })}`;
}

/** Throws, naming the node, when cloud-init user data is over Elastic Metal's limit. */
export function assertElasticMetalCloudInitSize(nodeName: string, userData: string): void {
  if (userData.length > ELASTIC_METAL_MAX_CLOUD_INIT_CHARS) {
    throw new Error(
      `node ${nodeName}: the rendered cloud-init is ${userData.length} characters, more than the ${ELASTIC_METAL_MAX_CLOUD_INIT_CHARS} Elastic Metal accepts`,
    );
  }
}

/**
 * The user data of a kubeadm-cluster worker without a private VLAN (Hetzner Cloud: its private
 * network is a DHCP'd interface of its own). `bootstrapToken` is `<id6>.<secret16>`; the result
 * contains it, so callers keep it secret.
 */
export function renderKubeadmWorkerUserData(inputs: KubeadmWorkerUserDataInputs, bootstrapToken: string): string {
  return renderSelfJoinCloudConfig(renderWorkerSelfJoinScript(inputs, bootstrapToken), inputs.privateEgress);
}
