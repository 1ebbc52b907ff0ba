/**
 * The autosetup file Hetzner's `installimage` reads in unattended mode (`installimage -a -c
 * /autosetup`) on a dedicated server booted into the rescue system, and what it is rendered from:
 * the firmware the rescue booted with (a UEFI server needs an EFI system partition, without which
 * installimage aborts with "ESP missing") and the drives, chosen from the rescue's `lsblk -J`.
 */

import { RESCUE_SYSTEM_CHECK } from "./rescueSystemCheck";

/** Ubuntu images shipped in the rescue system's image directory, by nodefleet image name. */
export const INSTALLIMAGE_UBUNTU_IMAGES: Readonly<Record<string, string>> = {
  "ubuntu-24.04": "/root/.oldroot/nfs/images/Ubuntu-2404-noble-amd64-base.tar.gz",
  "ubuntu-22.04": "/root/.oldroot/nfs/images/Ubuntu-2204-jammy-amd64-base.tar.gz",
};

/** One `lsblk -J -b -d -o NAME,TYPE,SIZE,RM,RO` device (lsblk prints booleans and sizes as JSON values). */
export interface LsblkDevice {
  readonly name: string;
  readonly type: string;
  readonly size: number | string | null;
  readonly rm?: boolean | string | null;
  readonly ro?: boolean | string | null;
}

/** How the rescue system booted: `/sys/firmware/efi` exists only under UEFI. */
export type Firmware = "uefi" | "bios";

/**
 * The hardware-gathering command run in the rescue system: one JSON document with the firmware and
 * the whole disks (`lsblk`, sizes in bytes), only once the host proved to be the rescue system.
 */
export const GATHER_HARDWARE_COMMAND =
  `${RESCUE_SYSTEM_CHECK}; ` +
  "if [ -d /sys/firmware/efi ]; then firmware=uefi; else firmware=bios; fi; " +
  'printf \'{"firmware":"%s","lsblk":\' "$firmware"; lsblk -J -b -d -o NAME,TYPE,SIZE,RM,RO; printf \'}\\n\'';

/** installimage's minimum for the EFI system partition. */
const ESP_SIZE = "256M";

/** Smallest disk installimage is given: the root filesystem needs room for images and logs. */
export const MIN_INSTALL_DISK_BYTES = 20 * 1024 ** 3;

const truthy = (v: boolean | string | null | undefined) => v === true || v === "1" || v === "true";

/**
 * The (at most two) drives to install to, as `/dev/<name>`: fixed, writable whole disks of at least
 * MIN_INSTALL_DISK_BYTES, smallest first (ties by name), so that a large data disk stays untouched
 * and the RAID 1 pair has equal members where the server has them.
 */
export function selectInstallDrives(lsblkJson: string | { blockdevices?: LsblkDevice[] }): string[] {
  let parsed: { blockdevices?: LsblkDevice[] };
  try {
    parsed = typeof lsblkJson === "string" ? (JSON.parse(lsblkJson) as { blockdevices?: LsblkDevice[] }) : lsblkJson;
  } catch {
    throw new Error("the rescue system's lsblk output is not JSON");
  }
  const disks = (parsed.blockdevices ?? [])
    .filter((d) => d.type === "disk" && !truthy(d.rm) && !truthy(d.ro) && /^[a-z0-9]+$/.test(d.name) && !/^(loop|ram|zram)/.test(d.name))
    .map((d) => ({ name: d.name, size: Number(d.size ?? 0) }))
    .filter((d) => Number.isFinite(d.size) && d.size >= MIN_INSTALL_DISK_BYTES)
    .sort((a, b) => a.size - b.size || a.name.localeCompare(b.name));
  if (disks.length === 0) throw new Error("the rescue system reports no fixed disk of at least 20 GiB to install to");
  return disks.slice(0, 2).map((d) => `/dev/${d.name}`);
}

/** The firmware and install drives from GATHER_HARDWARE_COMMAND's output. */
export function parseRescueHardware(stdout: string): { firmware: Firmware; drives: string[] } {
  let parsed: { firmware?: unknown; lsblk?: { blockdevices?: LsblkDevice[] } };
  try {
    parsed = JSON.parse(stdout) as typeof parsed;
  } catch {
    throw new Error("the rescue system's hardware report is not JSON");
  }
  if (parsed.firmware !== "uefi" && parsed.firmware !== "bios") {
    throw new Error(`the rescue system's hardware report has firmware ${JSON.stringify(parsed.firmware)}, not uefi or bios`);
  }
  return { firmware: parsed.firmware, drives: selectInstallDrives(parsed.lsblk ?? {}) };
}

export interface AutosetupInput {
  /** One or two whole-disk devices (`/dev/nvme0n1`); two are mirrored (software RAID 1). */
  readonly drives: readonly string[];
  /** The installed system's hostname (the Kubernetes node name). */
  readonly hostname: string;
  /** A key of INSTALLIMAGE_UBUNTU_IMAGES. */
  readonly image: string;
  /** How the rescue booted; UEFI gets an EFI system partition first. */
  readonly firmware: Firmware;
}

function installimageImagePath(image: string): string {
  const path = INSTALLIMAGE_UBUNTU_IMAGES[image];
  if (path === undefined) {
    throw new Error(
      `image ${image} is not an installimage Ubuntu image nodefleet knows (${Object.keys(INSTALLIMAGE_UBUNTU_IMAGES).join(", ")})`,
    );
  }
  return path;
}

/**
 * The autosetup text: drives, software RAID, GRUB, hostname, on UEFI a 256 MiB ESP first, a 1 GiB
 * ext3 /boot and an ext4 / on the rest.
 */
export function renderAutosetup(input: AutosetupInput): string {
  if (input.drives.length < 1 || input.drives.length > 2)
    throw new Error(`installimage gets one or two drives, not ${input.drives.length}`);
  for (const drive of input.drives) {
    if (!/^\/dev\/[a-z0-9]+$/.test(drive)) throw new Error(`drive ${JSON.stringify(drive)} is not a whole-disk device path`);
  }
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(input.hostname) || input.hostname.length > 63) {
    throw new Error(`hostname ${JSON.stringify(input.hostname)} is not a DNS label`);
  }
  if (input.firmware !== "uefi" && input.firmware !== "bios")
    throw new Error(`firmware ${JSON.stringify(input.firmware)} must be uefi or bios`);
  const mirrored = input.drives.length === 2;
  return [
    ...input.drives.map((drive, i) => `DRIVE${i + 1} ${drive}`),
    `SWRAID ${mirrored ? 1 : 0}`,
    `SWRAIDLEVEL 1`,
    `BOOTLOADER grub`,
    `HOSTNAME ${input.hostname}`,
    ...(input.firmware === "uefi" ? [`PART /boot/efi esp ${ESP_SIZE}`] : []),
    `PART /boot ext3 1024M`,
    `PART / ext4 all`,
    `IMAGE ${installimageImagePath(input.image)}`,
    "",
  ].join("\n");
}
