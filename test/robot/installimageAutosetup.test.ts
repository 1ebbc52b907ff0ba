import { strict as assert } from "node:assert";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import {
  GATHER_HARDWARE_COMMAND,
  INSTALLIMAGE_UBUNTU_IMAGES,
  MIN_INSTALL_DISK_BYTES,
  parseRescueHardware,
  renderAutosetup,
  selectInstallDrives,
} from "../../components/robot/installimageAutosetup";
import { renderRescueInstallScript } from "../../components/robot/robotRescueInstall";
import { hostKeyPairFromSecret } from "../../components/robot/pregeneratedHostKey";
import { mockEd25519HostKey } from "../../automation/mocks/seededValues";
import { assertShellcheckClean } from "../support/externalLinters";

const GiB = 1024 ** 3;
/** A PATH entry whose `hostname` says `name`, and a root holding the rescue system's NFS marker. */
function rescueHost(name = "rescue"): { root: string; env: NodeJS.ProcessEnv } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-rescue-"));
  fs.mkdirSync(path.join(root, "bin"));
  fs.writeFileSync(path.join(root, "bin/hostname"), `#!/bin/sh\necho ${name}\n`, { mode: 0o755 });
  fs.mkdirSync(path.join(root, "root/.oldroot/nfs"), { recursive: true });
  return { root, env: { ...process.env, PATH: `${path.join(root, "bin")}:${process.env.PATH ?? ""}`, NODEFLEET_ROOT: root } };
}

const lsblk = (devices: Array<Record<string, unknown>>) => JSON.stringify({ blockdevices: devices });

describe("installimageAutosetup", () => {
  it("renders a mirrored two-drive autosetup", () => {
    const text = renderAutosetup({
      drives: ["/dev/nvme0n1", "/dev/nvme1n1"],
      hostname: "c1-robot-a",
      image: "ubuntu-24.04",
      firmware: "bios",
    });
    assert.equal(
      text,
      [
        "DRIVE1 /dev/nvme0n1",
        "DRIVE2 /dev/nvme1n1",
        "SWRAID 1",
        "SWRAIDLEVEL 1",
        "BOOTLOADER grub",
        "HOSTNAME c1-robot-a",
        "PART /boot ext3 1024M",
        "PART / ext4 all",
        `IMAGE ${INSTALLIMAGE_UBUNTU_IMAGES["ubuntu-24.04"]}`,
        "",
      ].join("\n"),
    );
  });

  it("gathers nothing on a host that is not the rescue system (the reset did not take, or another machine answers)", () => {
    for (const [name, marker] of [
      ["c1-robot-a", true],
      ["rescue", false],
    ] as const) {
      const host = rescueHost(name);
      try {
        if (!marker) fs.rmSync(path.join(host.root, "root/.oldroot"), { recursive: true });
        const run = spawnSync("bash", ["-c", GATHER_HARDWARE_COMMAND], { encoding: "utf8", env: host.env });
        assert.equal(run.status, 1);
        assert.equal(run.stdout, "", "no hardware report");
        assert.match(run.stderr, new RegExp(`${name} is not the Hetzner rescue system`));
      } finally {
        fs.rmSync(host.root, { recursive: true, force: true });
      }
    }
  });

  it("gives a UEFI server the EFI system partition installimage requires, first and at its 256 MiB minimum", () => {
    const text = renderAutosetup({
      drives: ["/dev/nvme0n1", "/dev/nvme1n1"],
      hostname: "c1-robot-a",
      image: "ubuntu-24.04",
      firmware: "uefi",
    });
    const parts = text.split("\n").filter((l) => l.startsWith("PART "));
    assert.deepEqual(parts, ["PART /boot/efi esp 256M", "PART /boot ext3 1024M", "PART / ext4 all"]);
    const bios = renderAutosetup({ drives: ["/dev/nvme0n1"], hostname: "c1-robot-a", image: "ubuntu-24.04", firmware: "bios" });
    assert.doesNotMatch(bios, /esp/);
  });

  it("the hardware command, run by a real shell, reports this machine's firmware and disks as the parser reads them", () => {
    const host = rescueHost();
    let stdout: string;
    try {
      stdout = execFileSync("bash", ["-c", GATHER_HARDWARE_COMMAND], { encoding: "utf8", env: host.env });
    } finally {
      fs.rmSync(host.root, { recursive: true, force: true });
    }
    const report = JSON.parse(stdout) as { firmware: string; lsblk: { blockdevices: unknown[] } };
    assert.equal(report.firmware, fs.existsSync("/sys/firmware/efi") ? "uefi" : "bios");
    assert.ok(Array.isArray(report.lsblk.blockdevices));
    const uefi = JSON.stringify({ firmware: "uefi", lsblk: { blockdevices: [{ name: "nvme0n1", type: "disk", size: 512 * GiB }] } });
    assert.deepEqual(parseRescueHardware(uefi), { firmware: "uefi", drives: ["/dev/nvme0n1"] });
    assert.throws(() => parseRescueHardware(JSON.stringify({ firmware: "efi", lsblk: {} })), /firmware "efi", not uefi or bios/);
    assert.throws(() => parseRescueHardware("lsblk: command not found"), /not JSON/);
  });

  it("turns software RAID off for a single drive and refuses bad input", () => {
    assert.match(
      renderAutosetup({ drives: ["/dev/sda"], hostname: "n", image: "ubuntu-22.04", firmware: "bios" }),
      /^DRIVE1 \/dev\/sda\nSWRAID 0\n/,
    );
    assert.throws(() => renderAutosetup({ drives: [], hostname: "n", image: "ubuntu-24.04", firmware: "bios" }), /one or two drives/);
    assert.throws(
      () => renderAutosetup({ drives: ["/dev/sda; reboot"], hostname: "n", image: "ubuntu-24.04", firmware: "bios" }),
      /not a whole-disk/,
    );
    assert.throws(
      () => renderAutosetup({ drives: ["/dev/sda"], hostname: "Bad_Host", image: "ubuntu-24.04", firmware: "bios" }),
      /DNS label/,
    );
    assert.throws(
      () => renderAutosetup({ drives: ["/dev/sda"], hostname: "n", image: "debian-12", firmware: "bios" }),
      /not an installimage Ubuntu image/,
    );
  });

  it("selects the two smallest fixed disks, skipping removable, read-only, tiny and virtual devices", () => {
    const drives = selectInstallDrives(
      lsblk([
        { name: "loop0", type: "loop", size: 500 * GiB, rm: false, ro: false },
        { name: "sdc", type: "disk", size: 8000 * GiB, rm: false, ro: false },
        { name: "nvme1n1", type: "disk", size: 512 * GiB, rm: false, ro: false },
        { name: "nvme0n1", type: "disk", size: 512 * GiB, rm: false, ro: false },
        { name: "sdd", type: "disk", size: 64 * GiB, rm: true, ro: false },
        { name: "sde", type: "disk", size: 64 * GiB, rm: false, ro: true },
        { name: "sdf", type: "disk", size: 1 * GiB, rm: false, ro: false },
      ]),
    );
    assert.deepEqual(drives, ["/dev/nvme0n1", "/dev/nvme1n1"]);
    assert.throws(() => selectInstallDrives(lsblk([{ name: "sda", type: "disk", size: GiB }])), /no fixed disk/);
    assert.throws(() => selectInstallDrives("not json"), /not JSON/);
  });

  it("always selects one or two eligible disks that render (property)", () => {
    const device = fc.record({
      name: fc.constantFrom("sda", "sdb", "sdc", "nvme0n1", "nvme1n1", "loop0", "zram0"),
      type: fc.constantFrom("disk", "loop", "rom"),
      size: fc.integer({ min: 0, max: 4000 }).map((g) => g * GiB),
      rm: fc.boolean(),
      ro: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.uniqueArray(device, { selector: (d) => d.name, maxLength: 7 }), (devices) => {
        const eligible = devices.filter(
          (d) => d.type === "disk" && !d.rm && !d.ro && d.size >= MIN_INSTALL_DISK_BYTES && !/^(loop|ram|zram)/.test(d.name),
        );
        if (eligible.length === 0) {
          assert.throws(() => selectInstallDrives(lsblk(devices)));
          return;
        }
        const drives = selectInstallDrives(lsblk(devices));
        assert.equal(drives.length, Math.min(2, eligible.length));
        for (const d of drives) assert.ok(eligible.some((e) => `/dev/${e.name}` === d));
        renderAutosetup({ drives, hostname: "node", image: "ubuntu-24.04", firmware: "bios" });
      }),
      { numRuns: 200 },
    );
  });
});

describe("robotRescueInstall", () => {
  const autosetup = renderAutosetup({ drives: ["/dev/sda", "/dev/sdb"], hostname: "c1-robot-a", image: "ubuntu-24.04", firmware: "bios" });
  const script = renderRescueInstallScript({ autosetup, drives: ["/dev/sda", "/dev/sdb"], hostname: "c1-robot-a", firmware: "bios" });

  it("passes shellcheck", () => {
    assertShellcheckClean(script);
  });

  it("never traces and runs installimage unattended with the autosetup file", () => {
    assert.doesNotMatch(script, /set -x/);
    assert.match(script, /"\$INSTALLIMAGE" -a -c "\$R\/autosetup" -x/);
    assert.ok(script.includes(autosetup));
  });

  it("writes /autosetup, installs the pre-generated host key and prints its public half (run unprivileged)", function () {
    const host = rescueHost();
    const root = host.root;
    try {
      for (const d of ["dev", "root/.ssh", "mnt/etc"]) fs.mkdirSync(path.join(root, d), { recursive: true });
      fs.writeFileSync(path.join(root, "root/.ssh/authorized_keys"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests op@example\n");
      // Block devices cannot be made unprivileged: the drive check runs against a script naming none.
      const noDrives = renderRescueInstallScript({ autosetup, drives: [], hostname: "c1-robot-a", firmware: "bios" });
      // A fake installimage: checks its arguments and runs the post-install hook with /etc under mnt/.
      const fake = path.join(root, "installimage");
      fs.writeFileSync(
        fake,
        `#!/usr/bin/env bash\nset -euo pipefail\n[ "$1" = -a ] && [ "$2" = -c ] && [ -f "$3" ] && [ "$4" = -x ]\nsed -e 's#/etc/#${root}/mnt/etc/#g' -e 's#/root/#${root}/mnt/root/#g' -e 's#mkdir -p /etc/ssh /root/.ssh#mkdir -p ${root}/mnt/etc/ssh ${root}/mnt/root/.ssh#' "$5" | bash\n`,
        { mode: 0o755 },
      );
      const stdout = execFileSync("bash", ["-s"], { input: noDrives, env: { ...host.env, NODEFLEET_INSTALLIMAGE: fake } }).toString();
      assert.equal(fs.readFileSync(path.join(root, "autosetup"), "utf8"), autosetup);
      assert.match(stdout.trim(), /^ssh-ed25519 AAAA\S+ c1-robot-a$/);
      assert.equal(fs.readFileSync(path.join(root, "mnt/etc/ssh/ssh_host_ed25519_key.pub"), "utf8").trim(), stdout.trim());
      assert.match(fs.readFileSync(path.join(root, "mnt/etc/ssh/ssh_host_ed25519_key"), "utf8"), /BEGIN OPENSSH PRIVATE KEY/);
      assert.match(fs.readFileSync(path.join(root, "mnt/root/.ssh/authorized_keys"), "utf8"), /FakeKeyForTests/);
      // The private key does not stay in the rescue's work directory.
      assert.equal(fs.existsSync(path.join(root, "root/nodefleet-install/ssh_host_ed25519_key")), false);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("stops before writing anything when the rescue's firmware is not the one the autosetup was rendered for", () => {
    const host = rescueHost();
    const root = host.root;
    try {
      fs.mkdirSync(path.join(root, "sys/firmware/efi"), { recursive: true });
      const biosScript = renderRescueInstallScript({ autosetup, drives: [], hostname: "c1-robot-a", firmware: "bios" });
      assert.throws(
        () => execFileSync("bash", ["-s"], { input: biosScript, env: host.env, stdio: "pipe" }),
        /booted in uefi mode, but the autosetup was rendered for bios/,
      );
      assert.equal(fs.existsSync(path.join(root, "autosetup")), false);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("installs nothing on a host that is not the rescue system", () => {
    const host = rescueHost("c1-robot-a");
    try {
      const run = spawnSync("bash", ["-s"], { input: script, encoding: "utf8", env: host.env });
      assert.equal(run.status, 1);
      assert.match(run.stderr, /c1-robot-a is not the Hetzner rescue system/);
      assert.equal(fs.existsSync(path.join(host.root, "autosetup")), false);
      assert.equal(fs.existsSync(path.join(host.root, "root/nodefleet-install")), false);
    } finally {
      fs.rmSync(host.root, { recursive: true, force: true });
    }
  });

  describe("with the host key nodefleet generated beforehand (crash safety)", () => {
    const hostKey = hostKeyPairFromSecret("k".repeat(64), "c1-robot-a");
    const keyed = renderRescueInstallScript({ autosetup, drives: [], hostname: "c1-robot-a", firmware: "bios", hostKey });
    /** A fake installimage that counts its runs and runs the post-install hook with /etc under mnt/. */
    const fakeInstallimage = (root: string) => {
      const fake = path.join(root, "installimage");
      fs.writeFileSync(
        fake,
        `#!/usr/bin/env bash
set -euo pipefail
echo run >>${root}/installimage-runs
sed -e 's#/etc/#${root}/mnt/etc/#g' -e 's#/root/#${root}/mnt/root/#g' -e 's#mkdir -p /etc/ssh /root/.ssh#mkdir -p ${root}/mnt/etc/ssh ${root}/mnt/root/.ssh#' "$5" | bash
`,
        { mode: 0o755 },
      );
      return fake;
    };
    const runs = (root: string) =>
      fs.existsSync(path.join(root, "installimage-runs"))
        ? fs.readFileSync(path.join(root, "installimage-runs"), "utf8").split("\n").filter(Boolean).length
        : 0;

    it("passes shellcheck, and writes the private key only to files, never to stdout or stderr", () => {
      assertShellcheckClean(keyed);
      assert.ok(keyed.includes(hostKey.privateKey.trim()));
      assert.doesNotMatch(keyed, /ssh-keygen/);
    });

    it("installs the given key, prints its public half, and a second run in the same rescue installs nothing", () => {
      const host = rescueHost();
      const root = host.root;
      try {
        for (const d of ["dev", "root/.ssh", "mnt/etc"]) fs.mkdirSync(path.join(root, d), { recursive: true });
        const env = { ...host.env, NODEFLEET_INSTALLIMAGE: fakeInstallimage(root) };
        const first = spawnSync("bash", ["-s"], { input: keyed, encoding: "utf8", env });
        assert.equal(first.status, 0, first.stderr);
        assert.equal(first.stdout.trim(), hostKey.publicKey);
        assert.ok(!first.stderr.includes("PRIVATE KEY"));
        assert.equal(fs.readFileSync(path.join(root, "mnt/etc/ssh/ssh_host_ed25519_key"), "utf8").trim(), hostKey.privateKey.trim());
        assert.equal(fs.readFileSync(path.join(root, "mnt/etc/ssh/ssh_host_ed25519_key.pub"), "utf8").trim(), hostKey.publicKey);
        assert.equal(fs.existsSync(path.join(root, "root/nodefleet-install/ssh_host_ed25519_key")), false);
        const again = spawnSync("bash", ["-s"], { input: keyed, encoding: "utf8", env });
        assert.equal(again.status, 0, again.stderr);
        assert.equal(again.stdout.trim(), hostKey.publicKey);
        assert.match(again.stderr, /installimage already installed this system/);
        assert.equal(runs(root), 1, "installimage ran once");
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });

    it("on the installed system answering with the given key: prints it and installs nothing; with another key: refuses", () => {
      const host = rescueHost("c1-robot-a");
      const root = host.root;
      try {
        fs.rmSync(path.join(root, "root/.oldroot"), { recursive: true });
        fs.mkdirSync(path.join(root, "etc/ssh"), { recursive: true });
        const env = { ...host.env, NODEFLEET_INSTALLIMAGE: fakeInstallimage(root) };
        fs.writeFileSync(path.join(root, "etc/ssh/ssh_host_ed25519_key.pub"), `${hostKey.publicKey}\n`);
        const done = spawnSync("bash", ["-s"], { input: keyed, encoding: "utf8", env });
        assert.equal(done.status, 0, done.stderr);
        assert.equal(done.stdout.trim(), hostKey.publicKey);
        assert.match(done.stderr, /runs already/);
        fs.writeFileSync(path.join(root, "etc/ssh/ssh_host_ed25519_key.pub"), `${mockEd25519HostKey("other")}\n`);
        const other = spawnSync("bash", ["-s"], { input: keyed, encoding: "utf8", env });
        assert.equal(other.status, 1);
        assert.match(other.stderr, /c1-robot-a is not the Hetzner rescue system/);
        assert.equal(runs(root), 0);
        assert.equal(fs.existsSync(path.join(root, "autosetup")), false);
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });
  });

  it("stops before installing when a gathered drive is missing", () => {
    const host = rescueHost();
    const root = host.root;
    try {
      assert.throws(() => execFileSync("bash", ["-s"], { input: script, env: host.env, stdio: "pipe" }), /drive \/dev\/sda is missing/);
      assert.equal(fs.existsSync(path.join(root, "autosetup")), false);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
