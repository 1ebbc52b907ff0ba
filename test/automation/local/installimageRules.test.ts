/**
 * The installimage stand-in's rules (automation/local/robotMachines/installimageRules.ts) on their
 * own, without a machine: nodefleet's rendered autosetup passes on UEFI and BIOS machines, and each
 * rule of installimage's validate_vars (and nodefleet's smallest-disks rule) refuses, naming the
 * variable and the rule.
 */
import assert from "node:assert/strict";
import {
  AutosetupRuleError,
  type MachineHardware,
  parseAutosetup,
  validateAutosetup,
} from "../../../automation/local/robotMachines/installimageRules";
import { DEFAULT_DISKS } from "../../../automation/local/robotMachines/robotMachine";
import { renderAutosetup } from "../../../components/robot/installimageAutosetup";

const uefi: MachineHardware = { firmware: "uefi", disks: [...DEFAULT_DISKS] };
const bios: MachineHardware = { firmware: "bios", disks: [...DEFAULT_DISKS] };
const input = { drives: ["/dev/nvme0n1", "/dev/nvme1n1"], hostname: "node-1", image: "ubuntu-24.04" };

const refuses = (text: string, hardware: MachineHardware, rule: RegExp) =>
  assert.throws(
    () => validateAutosetup(parseAutosetup(text), hardware),
    (e: Error) => e instanceof AutosetupRuleError && rule.test(e.message),
  );

describe("installimage stand-in: autosetup rules", function () {
  it("accepts nodefleet's rendered autosetup for the machine's firmware, and reads it", function () {
    const text = renderAutosetup({ ...input, firmware: "uefi" });
    validateAutosetup(parseAutosetup(text), uefi);
    validateAutosetup(parseAutosetup(renderAutosetup({ ...input, firmware: "bios" })), bios);
    const parsed = parseAutosetup(text);
    assert.deepEqual(parsed.drives, input.drives);
    assert.deepEqual([parsed.swraid, parsed.swraidLevel, parsed.hostname], [1, 1, "node-1"]);
    assert.deepEqual(parsed.partitions[0], { mount: "/boot/efi", fs: "esp", size: 256 });
  });

  it("needs exactly one ESP of at least 256M at /boot/efi on UEFI", function () {
    refuses(
      renderAutosetup({ ...input, firmware: "bios" }),
      uefi,
      /this machine boots UEFI and needs exactly one EFI system partition .* found 0/,
    );
    const text = renderAutosetup({ ...input, firmware: "uefi" });
    refuses(text.replace("esp 256M", "esp 128M"), uefi, /PART \/boot\/efi esp: needs a size of at least 256M, not 128/);
    refuses(text.replace("PART /boot/efi esp", "PART /efi esp"), uefi, /PART \/efi esp: an EFI system partition is mounted at \/boot\/efi/);
  });

  it("checks RAID levels and drive counts, distinct drives of the machine, and the smallest disks", function () {
    const text = renderAutosetup({ ...input, firmware: "bios" });
    refuses(text.replace("SWRAIDLEVEL 1", "SWRAIDLEVEL 2"), bios, /SWRAIDLEVEL 2: must be one of 0, 1, 5, 6, 10/);
    refuses(text.replace("SWRAIDLEVEL 1", "SWRAIDLEVEL 5"), bios, /SWRAIDLEVEL 5: needs at least 3 drives, got 2/);
    refuses(text.replace("SWRAID 1", "SWRAID 2"), bios, /SWRAID "2": must be 0 or 1/);
    refuses(text.replace("/dev/nvme1n1", "/dev/nvme0n1"), bios, /DRIVE2 \/dev\/nvme0n1: the same disk as DRIVE1/);
    refuses(text.replace("/dev/nvme1n1", "/dev/sdz"), bios, /DRIVE2 \/dev\/sdz: not a disk of this machine/);
    refuses(text.replace("/dev/nvme1n1", "/dev/sda"), bios, /DRIVE \/dev\/sda: not among the 2 smallest disks/);
    refuses(text.replace("DRIVE2", "DRIVE3"), bios, /DRIVE3 out of order/);
  });

  it("checks partitions: all only last, /boot of at least 200M, a /, grub, a hostname", function () {
    const text = renderAutosetup({ ...input, firmware: "bios" });
    refuses(
      text.replace("PART /boot ext3 1024M", "PART /boot ext3 all"),
      bios,
      /PART \/boot: size all is only allowed for the last partition/,
    );
    refuses(text.replace("1024M", "100M"), bios, /PART \/boot: needs at least 200M, not 100M/);
    refuses(text.replace("1024M", "1x"), bios, /PART size "1x" must be a number of MiB/);
    refuses(text.replace("PART / ext4 all", "PART /srv ext4 all"), bios, /PART \/: no partition is mounted at \//);
    refuses(text.replace("BOOTLOADER grub", "BOOTLOADER lilo"), bios, /BOOTLOADER "lilo": installimage installs grub only/);
    refuses(text.replace("HOSTNAME node-1", "HOSTNAME Node_1"), bios, /HOSTNAME "Node_1": a DNS label/);
  });
});
