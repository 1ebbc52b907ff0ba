/**
 * The guard every command run over the (unpinned) rescue connection starts with: the host must be
 * Hetzner's rescue system, named `rescue` and running from the NFS root that holds installimage and
 * its images (`/root/.oldroot/nfs`). If the reset did not take (the installed system still answers
 * on the server's address) or the address reaches another machine, nothing is gathered, written or
 * installed. `NODEFLEET_ROOT` prefixes the marker so tests can run the guard unprivileged.
 */

/** The rescue system's hostname. */
const RESCUE_HOSTNAME = "rescue";
/** Present only in the rescue system: the NFS root with installimage and the images. */
const RESCUE_MARKER = "/root/.oldroot/nfs";

/** POSIX sh (one line, so it also prefixes a single remote command): exits 1 unless this is the rescue system. */
export const RESCUE_SYSTEM_CHECK =
  `if [ "$(hostname)" != ${RESCUE_HOSTNAME} ] || [ ! -d "\${NODEFLEET_ROOT:-}${RESCUE_MARKER}" ]; then ` +
  `echo "nodefleet: $(hostname) is not the Hetzner rescue system (hostname ${RESCUE_HOSTNAME} and ${RESCUE_MARKER} expected); nothing was run" >&2; exit 1; fi`;
