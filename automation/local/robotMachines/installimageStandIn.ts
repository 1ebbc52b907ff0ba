/**
 * The local cloud's `installimage`, run inside a Robot machine's rescue system (it is the program
 * at /root/.oldroot/nfs/install/installimage there; robotMachine.ts writes the wrapper). Like
 * Hetzner's installimage in automatic mode (`installimage -a -c <autosetup> [-x <post-install
 * hook>]`, github.com/hetzneronline/installimage get_options.sh) it reads the autosetup, checks it
 * (installimageRules.ts) against the machine's disks and firmware, and "installs": the new system's
 * files are written to a new directory under INSTALLIMAGE_STATE_PATH inside the rescue (the machine's disks), with its
 * hostname, and the post-install hook runs chrooted in it, as installimage runs it in the new
 * system. The next boot of the machine (robotMachine.ts) boots that system. Nothing outside the
 * rescue's own files is written: the rescue is a machine sandbox (machines/machineSandbox.ts).
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { AutosetupRuleError, type MachineHardware, parseAutosetup, validateAutosetup } from "./installimageRules";

/** The machine's disks and firmware, written into the rescue by robotMachine.ts. */
export const HARDWARE_PATH = "/var/lib/nodefleet-machine/hardware.json";
/** Where the stand-in keeps what it did, inside the rescue. */
const INSTALLIMAGE_STATE_PATH = "/var/lib/nodefleet-machine/installimage";
/**
 * The installed system's files ("the disks") are written to `<this>-<n>`, inside the rescue: a new
 * directory for each install, since a directory removed and made again in an overlay is marked
 * opaque, which would hide the host's files from the system booted on it.
 */
const INSTALLED_SYSTEM_PREFIX = `${INSTALLIMAGE_STATE_PATH}/hdd`;
/** What was installed (InstalledSystem as JSON), written last: its presence means the install finished. */
export const INSTALLED_RECORD_PATH = `${INSTALLIMAGE_STATE_PATH}/installed.json`;
/** The autosetup as installimage read it, kept for the tests and for a look afterwards. */
export const AUTOSETUP_RECORD_PATH = `${INSTALLIMAGE_STATE_PATH}/autosetup`;
const RECORDS_PATH = "/var/lib/nodefleet-machine/records";
/**
 * How long the install takes, in milliseconds (the wrapper robotMachine.ts writes sets it from
 * NODEFLEET_SIM_ROBOT_INSTALL_MS): a sleep after the checks, before the disks are written.
 */
export const INSTALL_MS_ENV = "NODEFLEET_SIM_ROBOT_INSTALL_MS";

/** What an install left for the next boot. */
export interface InstalledSystem {
  /** The system's files, a path inside the rescue. */
  root: string;
  hostname: string;
  image: string;
  drives: string[];
  firmware: MachineHardware["firmware"];
}

/** Bad command line, as installimage would refuse it. */
class InstallimageUsageError extends Error {
  override readonly name = "InstallimageUsageError";
}

function options(argv: string[]): { config: string; hook?: string } {
  let config: string | undefined;
  let hook: string | undefined;
  let automatic = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "-a") automatic = true;
    else if (flag === "-c") config = argv[++i];
    else if (flag === "-x") hook = argv[++i];
    else throw new InstallimageUsageError(`option ${flag}: the stand-in takes -a, -c <autosetup> and -x <post-install hook>`);
  }
  if (!automatic || config === undefined)
    throw new InstallimageUsageError("the stand-in runs unattended only: installimage -a -c <autosetup> [-x <hook>]");
  if (!existsSync(config)) throw new InstallimageUsageError(`-c ${config}: no such autosetup file`);
  if (hook !== undefined && !existsSync(hook)) throw new InstallimageUsageError(`-x ${hook}: no such post-install hook`);
  return { config, hook };
}

/**
 * Runs the hook chrooted in the new system, in a mount namespace of its own: the rescue's programs
 * (/usr, and /bin, /lib and the like as links or binds) are bind-mounted in so bash runs, and leave with the namespace.
 */
function runPostInstallHook(root: string, hook: string): void {
  const inside = "/installimage-post-install";
  copyFileSync(hook, join(root, inside));
  const script = `set -eu
r="$1"
for d in bin sbin lib lib64; do
  if [ -L "/$d" ]; then ln -sfn "$(readlink "/$d")" "$r/$d"; elif [ -d "/$d" ]; then mkdir -p "$r/$d"; mount --rbind "/$d" "$r/$d"; fi
done
mkdir -p "$r/usr" "$r/dev" "$r/proc" "$r/tmp"
mount --rbind /usr "$r/usr"
mount --rbind /dev "$r/dev"
mount -t proc proc "$r/proc"
exec chroot "$r" /bin/bash ${inside}`;
  const run = spawnSync("unshare", ["--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh", root], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  rmSync(join(root, inside), { force: true });
  if (run.status !== 0) throw new Error(`the post-install hook ${hook} failed (exit ${run.status ?? run.signal})`);
}

function main(argv: string[]): number {
  const { config, hook } = options(argv);
  const hardware = JSON.parse(readFileSync(HARDWARE_PATH, "utf8")) as MachineHardware;
  const text = readFileSync(config, "utf8");
  mkdirSync(INSTALLIMAGE_STATE_PATH, { recursive: true });
  writeFileSync(AUTOSETUP_RECORD_PATH, text);
  const autosetup = parseAutosetup(text);
  validateAutosetup(autosetup, hardware);
  if (!existsSync(autosetup.image)) throw new AutosetupRuleError(`IMAGE ${autosetup.image}: no such image in the rescue system`);
  console.log(`installimage (local cloud): installing ${autosetup.image} as ${autosetup.hostname} on ${autosetup.drives.join(", ")}`);
  const installMs = Number(process.env[INSTALL_MS_ENV] ?? 0);
  if (installMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, installMs);
  // The disks are wiped: a new system replaces the old one and any unfinished install.
  rmSync(INSTALLED_RECORD_PATH, { force: true });
  let n = 1;
  while (existsSync(`${INSTALLED_SYSTEM_PREFIX}-${n}`)) n++;
  const root = `${INSTALLED_SYSTEM_PREFIX}-${n}`;
  for (const dir of ["etc/ssh", "root/.ssh", "var/lib"]) mkdirSync(join(root, dir), { recursive: true });
  writeFileSync(join(root, "etc/hostname"), `${autosetup.hostname}\n`);
  if (hook !== undefined) runPostInstallHook(root, hook);
  const installed: InstalledSystem = {
    root,
    hostname: autosetup.hostname,
    image: autosetup.image,
    drives: autosetup.drives,
    firmware: hardware.firmware,
  };
  writeFileSync(INSTALLED_RECORD_PATH, `${JSON.stringify(installed)}\n`);
  mkdirSync(dirname(RECORDS_PATH), { recursive: true });
  appendFileSync(RECORDS_PATH, `installimage\tinstall\t${autosetup.hostname}\n`);
  console.log("installimage (local cloud): installation complete; reboot to start the new system");
  return 0;
}

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`installimage: ${error instanceof AutosetupRuleError ? "autosetup refused: " : ""}${message}`);
    process.exitCode = 1;
  }
}
