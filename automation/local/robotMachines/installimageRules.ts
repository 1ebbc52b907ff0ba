/**
 * The rules the local cloud's `installimage` stand-in checks an autosetup file against before it
 * "installs" anything, so that an autosetup real Hetzner installimage would refuse fails here too.
 * They are read from installimage's own checks (github.com/hetzneronline/installimage, functions.sh,
 * `validate_vars`, and the PART syntax its generated config explains): the drives must be distinct
 * disks of the machine, SWRAID is 0 or 1, a RAID level of 0, 1, 5, 6 or 10 with enough drives for
 * it (RAID needs two, level 5 three, level 6 four), an ESP only at /boot/efi, never `all`, at least
 * 256 MiB, and exactly one on a UEFI machine; `all` only for the last partition; /boot at least
 * 200 MiB. One rule is nodefleet's own (issue #38, components/robot/installimageAutosetup.ts): only
 * the two smallest disks are installed to, so a large data disk is never overwritten. The messages
 * are the fake's own words.
 */

/** How the machine boots: a UEFI machine needs an EFI system partition. */
export type MachineFirmware = "uefi" | "bios";

/** A whole disk of the machine, as the rescue system sees it. */
export interface MachineDisk {
  /** The device name, e.g. `nvme0n1` (the autosetup names `/dev/nvme0n1`). */
  name: string;
  sizeBytes: number;
}

/** What the installimage stand-in knows of the machine it runs on. */
export interface MachineHardware {
  firmware: MachineFirmware;
  disks: MachineDisk[];
}

/** One `PART <mount> <fs> <size>` line. */
export interface AutosetupPartition {
  mount: string;
  fs: string;
  /** MiB, or `all` (the rest of the disk). */
  size: number | "all";
}

/** An autosetup file as the stand-in understood it. */
export interface ParsedAutosetup {
  drives: string[];
  swraid: 0 | 1;
  swraidLevel: number;
  hostname: string;
  partitions: AutosetupPartition[];
  image: string;
}

/** The autosetup breaks a rule: the message names the line or variable and the rule. */
export class AutosetupRuleError extends Error {
  override readonly name = "AutosetupRuleError";
}

const RAID_LEVELS = [0, 1, 5, 6, 10];
/** The fewest drives each RAID level takes (functions.sh validate_vars). */
const RAID_MIN_DRIVES: Readonly<Record<number, number>> = { 0: 2, 1: 2, 5: 3, 6: 4, 10: 2 };
const ESP_MIN_MIB = 256;
const BOOT_MIN_MIB = 200;

/** A PART size in MiB: a number with an optional M, G or T suffix (installimage takes these), or `all`. */
function partSize(text: string, line: number): number | "all" {
  if (text === "all") return "all";
  const match = /^([1-9]\d*)([MGT]?)$/i.exec(text);
  if (!match)
    throw new AutosetupRuleError(`line ${line}: PART size ${JSON.stringify(text)} must be a number of MiB (with M, G or T) or all`);
  const factor = { "": 1, M: 1, G: 1024, T: 1024 * 1024 }[match[2]!.toUpperCase()]!;
  return Number(match[1]) * factor;
}

/** Reads the variables the stand-in needs; unknown variables are ignored, as installimage ignores what it does not use. */
export function parseAutosetup(text: string): ParsedAutosetup {
  const drives: string[] = [];
  const partitions: AutosetupPartition[] = [];
  let swraid: string | undefined;
  let swraidLevel: string | undefined;
  let hostname = "";
  let image = "";
  text.split("\n").forEach((raw, index) => {
    const line = index + 1;
    const words = raw.replace(/#.*/, "").trim().split(/\s+/).filter(Boolean);
    const [key, ...rest] = words;
    if (key === undefined) return;
    const drive = /^DRIVE(\d+)$/.exec(key);
    if (drive) {
      if (Number(drive[1]) !== drives.length + 1)
        throw new AutosetupRuleError(`line ${line}: ${key} out of order: the DRIVEn variables count up from DRIVE1`);
      drives.push(rest[0] ?? "");
    } else if (key === "SWRAID") swraid = rest[0];
    else if (key === "SWRAIDLEVEL") swraidLevel = rest[0];
    else if (key === "HOSTNAME") hostname = rest[0] ?? "";
    else if (key === "IMAGE") image = rest[0] ?? "";
    else if (key === "BOOTLOADER" && rest[0] !== "grub")
      throw new AutosetupRuleError(`line ${line}: BOOTLOADER ${JSON.stringify(rest[0])}: installimage installs grub only`);
    else if (key === "PART") {
      if (rest.length !== 3) throw new AutosetupRuleError(`line ${line}: PART takes a mount point, a filesystem and a size`);
      partitions.push({ mount: rest[0]!, fs: rest[1]!, size: partSize(rest[2]!, line) });
    }
  });
  if (swraid !== undefined && swraid !== "0" && swraid !== "1")
    throw new AutosetupRuleError(`SWRAID ${JSON.stringify(swraid)}: must be 0 or 1`);
  const level = swraidLevel === undefined ? 1 : Number(swraidLevel);
  return { drives, swraid: swraid === "1" ? 1 : 0, swraidLevel: level, hostname, partitions, image };
}

/** Checks a parsed autosetup against the rules of the file header; throws the first rule broken. */
export function validateAutosetup(autosetup: ParsedAutosetup, hardware: MachineHardware): void {
  const { drives, partitions } = autosetup;
  if (drives.length === 0) throw new AutosetupRuleError("DRIVE1 missing: name at least one disk to install to");
  const disks = new Map(hardware.disks.map((d) => [`/dev/${d.name}`, d]));
  drives.forEach((drive, i) => {
    if (!disks.has(drive))
      throw new AutosetupRuleError(`DRIVE${i + 1} ${drive}: not a disk of this machine (${[...disks.keys()].join(", ")})`);
    const first = drives.indexOf(drive);
    if (first !== i) throw new AutosetupRuleError(`DRIVE${i + 1} ${drive}: the same disk as DRIVE${first + 1}`);
  });
  if (autosetup.swraid === 1) {
    if (!RAID_LEVELS.includes(autosetup.swraidLevel))
      throw new AutosetupRuleError(`SWRAIDLEVEL ${autosetup.swraidLevel}: must be one of ${RAID_LEVELS.join(", ")}`);
    const needed = RAID_MIN_DRIVES[autosetup.swraidLevel]!;
    if (drives.length < needed)
      throw new AutosetupRuleError(
        `SWRAID 1 with SWRAIDLEVEL ${autosetup.swraidLevel}: needs at least ${needed} drives, got ${drives.length}`,
      );
  }
  // nodefleet's rule: the smallest disks, so that a larger data disk is left alone.
  const smallest = [...hardware.disks]
    .sort((a, b) => a.sizeBytes - b.sizeBytes || a.name.localeCompare(b.name))
    .slice(0, drives.length)
    .map((d) => `/dev/${d.name}`);
  const notSmallest = drives.filter((d) => !smallest.includes(d));
  if (notSmallest.length > 0)
    throw new AutosetupRuleError(`DRIVE ${notSmallest.join(", ")}: not among the ${drives.length} smallest disks (${smallest.join(", ")})`);
  if (partitions.length === 0) throw new AutosetupRuleError("PART missing: at least a / partition");
  if (!partitions.some((p) => p.mount === "/")) throw new AutosetupRuleError("PART /: no partition is mounted at /");
  partitions.forEach((p, i) => {
    if (p.size === "all" && i < partitions.length - 1)
      throw new AutosetupRuleError(`PART ${p.mount}: size all is only allowed for the last partition`);
    if (p.fs === "esp") {
      if (p.mount !== "/boot/efi") throw new AutosetupRuleError(`PART ${p.mount} esp: an EFI system partition is mounted at /boot/efi`);
      if (p.size === "all" || p.size < ESP_MIN_MIB)
        throw new AutosetupRuleError(`PART /boot/efi esp: needs a size of at least ${ESP_MIN_MIB}M, not ${p.size}`);
    }
    if (p.mount === "/boot" && p.size !== "all" && p.size < BOOT_MIN_MIB)
      throw new AutosetupRuleError(`PART /boot: needs at least ${BOOT_MIN_MIB}M, not ${p.size}M`);
  });
  const esps = partitions.filter((p) => p.fs === "esp").length;
  if (hardware.firmware === "uefi" && esps !== 1)
    throw new AutosetupRuleError(
      `PART /boot/efi esp: this machine boots UEFI and needs exactly one EFI system partition (at least ${ESP_MIN_MIB}M), found ${esps}`,
    );
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(autosetup.hostname))
    throw new AutosetupRuleError(`HOSTNAME ${JSON.stringify(autosetup.hostname)}: a DNS label (lowercase letters, digits, inner hyphens)`);
  if (autosetup.image === "") throw new AutosetupRuleError("IMAGE missing: the path of an image in the rescue system");
}
