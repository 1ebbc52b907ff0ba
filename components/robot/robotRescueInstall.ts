/**
 * The script run in a dedicated server's rescue system to install the OS: write /autosetup
 * (installimageAutosetup.ts, from the firmware and drives GATHER_HARDWARE_COMMAND reported), check
 * the firmware and drives are still those, run `installimage -a -c /autosetup`, and reboot. The
 * installed system's SSH host key is generated here and put in place by installimage's post-install
 * hook (which also keeps the pool's Robot keys for root); the script prints its public half, its only
 * stdout line, so the program pins it from the first connection on. No secret goes through it.
 */
import { scriptPrelude, shellQuote, writeFileBlock } from "../bootstrap/shellScript";
import type { Firmware } from "./installimageAutosetup";
import { RESCUE_SYSTEM_CHECK } from "./rescueSystemCheck";

/** Where the rescue system keeps installimage (the interactive alias is not set in `ssh host cmd`). */
const RESCUE_INSTALLIMAGE = "/root/.oldroot/nfs/install/installimage";

/** How the install script is run (stdin); the argument only names the step in the process list. */
export const RESCUE_INSTALL_COMMAND = "bash -s nodefleet-rescue-install";

export interface RescueInstallInput {
  /** The autosetup text (renderAutosetup). */
  readonly autosetup: string;
  /** The drives named in it, checked before anything is written to them. */
  readonly drives: readonly string[];
  /** The hostname, as the comment of the generated host key. */
  readonly hostname: string;
  /** The firmware the autosetup was rendered for (an ESP or not). */
  readonly firmware: Firmware;
}

export function renderRescueInstallScript(input: RescueInstallInput): string {
  const drives = input.drives.map(shellQuote).join(" ");
  return `${scriptPrelude(`install the OS on ${input.hostname} from the Hetzner rescue system`)}
${RESCUE_SYSTEM_CHECK}
INSTALLIMAGE="\${NODEFLEET_INSTALLIMAGE:-${RESCUE_INSTALLIMAGE}}"
WORK="$R/root/nodefleet-install"
mkdir -p "$WORK"

if [ -d "$R/sys/firmware/efi" ]; then firmware=uefi; else firmware=bios; fi
if [ "$firmware" != ${shellQuote(input.firmware)} ]; then
  log "the rescue system booted in $firmware mode, but the autosetup was rendered for ${input.firmware}; nothing was installed"
  exit 1
fi

for drive in ${drives}; do
  if [ ! -b "$R$drive" ]; then
    log "drive $drive is missing; the hardware changed since it was gathered"
    exit 1
  fi
done

${writeFileBlock("/autosetup", "0600", input.autosetup)}

# The installed system's host key, known before its first boot so that it can be pinned.
rm -f "$WORK/ssh_host_ed25519_key" "$WORK/ssh_host_ed25519_key.pub"
ssh-keygen -q -t ed25519 -N '' -C ${shellQuote(input.hostname)} -f "$WORK/ssh_host_ed25519_key"

# installimage runs the post-install hook chrooted in the new system: embed what it installs.
{
  printf '%s\\n' '#!/usr/bin/env bash' 'set -euo pipefail' 'umask 077' 'mkdir -p /etc/ssh /root/.ssh'
  printf "cat >/etc/ssh/ssh_host_ed25519_key <<'NODEFLEET_KEY'\\n%s\\nNODEFLEET_KEY\\n" "$(cat "$WORK/ssh_host_ed25519_key")"
  printf "cat >/etc/ssh/ssh_host_ed25519_key.pub <<'NODEFLEET_KEY'\\n%s\\nNODEFLEET_KEY\\n" "$(cat "$WORK/ssh_host_ed25519_key.pub")"
  printf '%s\\n' 'chmod 0600 /etc/ssh/ssh_host_ed25519_key' 'chmod 0644 /etc/ssh/ssh_host_ed25519_key.pub'
  if [ -s "$R/root/.ssh/authorized_keys" ]; then
    printf "cat >/root/.ssh/authorized_keys <<'NODEFLEET_KEYS'\\n%s\\nNODEFLEET_KEYS\\n" "$(cat "$R/root/.ssh/authorized_keys")"
    printf '%s\\n' 'chmod 0600 /root/.ssh/authorized_keys'
  fi
} >"$WORK/post-install.sh"
chmod 0700 "$WORK/post-install.sh"

log "running installimage (log: /root/nodefleet-install/installimage.log)"
if ! "$INSTALLIMAGE" -a -c "$R/autosetup" -x "$WORK/post-install.sh" >"$WORK/installimage.log" 2>&1; then
  tail -n 40 "$WORK/installimage.log" >&2
  log "installimage failed"
  exit 1
fi

cat "$WORK/ssh_host_ed25519_key.pub"
rm -f "$WORK/ssh_host_ed25519_key" "$WORK/post-install.sh"

# Reboot once this SSH session has returned, so the command reports success.
if [ -z "\${NODEFLEET_ROOT:-}" ]; then
  nohup sh -c 'sleep 3; reboot' >/dev/null 2>&1 &
fi
`;
}
