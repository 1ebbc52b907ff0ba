/**
 * The installed system's host key derived from a seed (components/robot/pregeneratedHostKey.ts):
 * OpenSSH reads the private key and derives the same public key; the same seed gives the same text.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { HOST_KEY_SECRET_LENGTH, hostKeyPairFromSecret } from "../../components/robot/pregeneratedHostKey";

describe("pregeneratedHostKey", () => {
  const seed = "a".repeat(HOST_KEY_SECRET_LENGTH);

  it("gives an OpenSSH private key whose public half ssh-keygen derives as the one it gives", function () {
    const pair = hostKeyPairFromSecret(seed, "c1-robot-a");
    assert.match(pair.privateKey, /^-----BEGIN OPENSSH PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END OPENSSH PRIVATE KEY-----\n$/);
    assert.match(pair.publicKey, /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5\S+ c1-robot-a$/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-host-key-"));
    try {
      fs.writeFileSync(path.join(dir, "key"), pair.privateKey, { mode: 0o600 });
      assert.equal(execFileSync("ssh-keygen", ["-y", "-f", path.join(dir, "key")], { encoding: "utf8" }).trim(), pair.publicKey);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is a function of the seed and comment (the install's inputs stay the same from run to run)", () => {
    assert.deepEqual(hostKeyPairFromSecret(seed, "a"), hostKeyPairFromSecret(seed, "a"));
    const other = "b".repeat(HOST_KEY_SECRET_LENGTH);
    assert.notEqual(hostKeyPairFromSecret(other, "a").publicKey.split(" ")[1], hostKeyPairFromSecret(seed, "a").publicKey.split(" ")[1]);
  });

  it("refuses a short secret", () => {
    assert.throws(() => hostKeyPairFromSecret("x".repeat(16), "a"), /a host key secret has at least 32 characters, got 16/);
  });
});
