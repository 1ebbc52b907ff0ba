/**
 * Deterministic outputs for the Hetzner Robot pool under the mock runtime: the rescue resource's
 * server address, the rescue system's disk listing and the installed system's host key.
 */
import type * as pulumi from "@pulumi/pulumi";
import { GATHER_HARDWARE_COMMAND } from "../../components/robot/installimageAutosetup";
import { RESCUE_INSTALL_COMMAND } from "../../components/robot/robotRescueInstall";
import { mockEd25519HostKey } from "./seededValues";

/** A documentation address (RFC 5737 198.51.100.0/24) per server number. */
export function mockRobotServerIp(serverNumber: number): string {
  return `198.51.100.${1 + (serverNumber % 254)}`;
}

/** A UEFI server with two equal NVMe disks, as most current Robot servers have. */
export const MOCK_ROBOT_HARDWARE = JSON.stringify({
  firmware: "uefi",
  lsblk: {
    blockdevices: [
      { name: "nvme0n1", type: "disk", size: 512110190592, rm: false, ro: false },
      { name: "nvme1n1", type: "disk", size: 512110190592, rm: false, ro: false },
    ],
  },
});

export function robotRescueMockOutputs(args: pulumi.runtime.MockResourceArgs): Record<string, unknown> {
  const serverNumber = Number(args.inputs.serverNumber);
  return { serverIp: mockRobotServerIp(serverNumber), resetType: "hw" };
}

/** Outputs of the Robot pool's remote commands, or undefined for other commands. */
export function robotCommandMockOutputs(args: pulumi.runtime.MockResourceArgs): Record<string, unknown> | undefined {
  if (args.inputs.create === GATHER_HARDWARE_COMMAND) return { stdout: `${MOCK_ROBOT_HARDWARE}\n`, stderr: "" };
  if (args.inputs.create === RESCUE_INSTALL_COMMAND) return { stdout: `${mockEd25519HostKey(args.name)}\n`, stderr: "" };
  return undefined;
}
