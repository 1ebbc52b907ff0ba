/**
 * SSH for nodefleet's remote commands (Elastic Metal self-join, Hetzner Robot install and join):
 * which key logs in, and how a server's host key is read once and pinned afterwards.
 */
import * as pulumi from "@pulumi/pulumi";

/** An `ssh-ed25519 AAAA... [comment]` line, as `connection.hostKey` expects it. */
export function parseHostKeyLine(text: string): string {
  const line = text.trim().split("\n")[0]?.trim() ?? "";
  if (!/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/]+={0,2}( \S+)?$/.test(line)) {
    throw new Error("the server's ed25519 host key could not be read (expected one `ssh-ed25519 AAAA...` line)");
  }
  return line;
}

/** Not a parsable key: a connection pinned to it fails instead of connecting unverified. */
export const UNREAD_HOST_KEY = "host-key-not-read";

/** The command that reads the host key on the first (unverified) connection. */
export const READ_HOST_KEY_COMMAND = "cat /etc/ssh/ssh_host_ed25519_key.pub";

/** The SSH login for nodefleet's remote commands . */
export function sshAuth(args: { readonly sshPrivateKey?: pulumi.Input<string> }): {
  privateKey?: pulumi.Input<string>;
  agentSocketPath?: string;
} {
  if (args.sshPrivateKey !== undefined) return { privateKey: pulumi.secret(args.sshPrivateKey) };
  const fromConfig = new pulumi.Config("nodefleet").getSecret("sshPrivateKey");
  if (fromConfig !== undefined) return { privateKey: fromConfig };
  const fromEnv = process.env.NODEFLEET_SSH_PRIVATE_KEY;
  if (fromEnv) return { privateKey: pulumi.secret(fromEnv) };
  return process.env.SSH_AUTH_SOCK ? { agentSocketPath: process.env.SSH_AUTH_SOCK } : {};
}

/**
 * The `update` of a remote command whose script must run only when its triggers change. The
 * command provider replaces the command on a `triggers` change (a replaceOnChanges input), which runs
 * `create` with the current script, and runs `update` (else `create`) on any other change: a new
 * `stdin` or `connection` alone. This `update` reads the script and discards it (reading, unlike
 * `true`, lets the provider finish writing stdin), so such a change is recorded and nothing runs.
 */
export const RECORD_ONLY_UPDATE = "cat >/dev/null";
