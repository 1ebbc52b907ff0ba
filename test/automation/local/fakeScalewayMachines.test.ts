/**
 * The fake Scaleway API's installed Elastic Metal servers as machines (fakeScalewayMachines.ts),
 * driven over its HTTP API on loopback: an IAM SSH key, a server installed with it, and once the
 * install completes an SSH login with that key on the server's reported IPv4 (127.0.4.x), pinned to
 * a host key of each type, answering the install's hostname; a reinstall brings new host keys; a
 * reboot keeps files and keys but not processes or /tmp; a restart of the fake brings the machine back with the keys it had; a delete ends SSH.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { machineAddress } from "../../../automation/local/fakeScaleway/fakeScalewayMachines";
import { HOST_KEY_TYPES } from "../../../automation/local/machines/machine";
import { SSHD } from "../../../automation/local/machines/openSshServer";
import { skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const SECRET = randomUUID();
const PROJECT = randomUUID();
const ZONE = "/baremetal/v1/zones/fr-par-2";
const UBUNTU_NOBLE = "7d1914e1-f4ab-47fc-bd8c-b3a23143e87a";

describe("fake Scaleway API: installed servers are machines you SSH into", function () {
  this.timeout(120_000);
  let dir: string;
  let clientKey: string;
  /** A key the installs do not name (also a host key no machine has). */
  let otherKey: string;
  let fake: FakeScaleway | undefined;
  let url: string;
  const logged: string[] = [];

  const start = async () => {
    fake = buildFakeScaleway({
      secretKey: SECRET,
      projectId: PROJECT,
      stateFile: join(dir, "scw.json"),
      actionMs: 50,
      installMs: 300,
      machinesDir: join(dir, "machines"),
      log: (message) => logged.push(message),
    });
    url = await fake.app.listen({ port: 0, host: "127.0.0.1" });
  };
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "X-Auth-Token": SECRET, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, any> };
  };
  /** Runs `command` at `address` over ssh as this host's user (the machines' OS user), pinned to `pin`. */
  const ssh = (address: string, command: string, pin: string) => {
    const knownHosts = join(dir, "known_hosts");
    writeFileSync(knownHosts, `${address} ${pin}\n`);
    const result = spawnSync(
      "ssh",
      [
        ...["-F", "/dev/null", "-i", clientKey, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes"],
        ...["-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10"],
        `${userInfo().username}@${address}`,
        command,
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  /** The host public keys the machine at `address` offers, by type, as ssh-keyscan reads them over the wire. */
  const scannedHostKeys = (address: string): Record<string, string> => {
    const result = spawnSync("ssh-keyscan", ["-T", "10", "-t", "rsa,ecdsa,ed25519", address], { encoding: "utf8" });
    const keys: Record<string, string> = {};
    for (const line of result.stdout.split("\n").filter((l) => l && !l.startsWith("#"))) {
      const [, algorithm, key] = line.split(" ");
      const type = algorithm === "ssh-rsa" ? "rsa" : algorithm!.startsWith("ecdsa-") ? "ecdsa" : "ed25519";
      keys[type] = `${algorithm} ${key}`;
    }
    return keys;
  };
  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000) =>
    until(what, probe, ms, () => logged.join("\n"), 100);
  /** Waits for the server's install to complete and its machine to offer three host keys (other than `previous`'s ed25519). */
  const installed = (id: string, previous?: Record<string, string>) =>
    waitFor(`server ${id} installed and its machine answering`, async () => {
      const server = (await api("GET", `${ZONE}/servers/${id}`)).body;
      if (server.install?.status !== "completed") return undefined;
      const keys = scannedHostKeys(server.ips[0].address);
      if (previous && keys.ed25519 === previous.ed25519) return undefined;
      // Registered too, not only answering: sshd is up a moment before the fake records the machine.
      return Object.keys(keys).length === 3 && fake!.machines!.machine(id) !== undefined ? { server, keys } : undefined;
    });

  before(async function () {
    const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/ssh-keyscan", "/usr/bin/unshare"].filter((tool) => !existsSync(tool));
    skipUnlessAvailable(
      this,
      missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
    );
    skipUnlessAvailable(
      this,
      process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, overlayfs, port 22)",
    );
    dir = mkdtempSync(join(tmpdir(), "nodefleet-scwmachines-"));
    clientKey = join(dir, "client_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", clientKey]);
    otherKey = join(dir, "other_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", otherKey]);
    await start();
  });
  after(async function () {
    await fake?.app.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("picks the lowest free address of 127.0.4.0/22, past 127.0.4.254", function () {
    assert.equal(machineAddress([]), "127.0.4.1");
    assert.equal(machineAddress(["127.0.4.1", "127.0.4.3"]), "127.0.4.2");
    const first254 = Array.from({ length: 254 }, (_, i) => `127.0.4.${i + 1}`);
    assert.equal(machineAddress(first254), "127.0.5.1");
    assert.equal(machineAddress([], 1), "127.1.4.1", "another block for another fake on the same host");
  });

  it("logs in with the install's IAM key, pinned to each host key type; reinstall, reboot, restart and delete", async function () {
    const key = await api("POST", "/iam/v1alpha1/ssh-keys", { name: "ops", public_key: readFileSync(`${clientKey}.pub`, "utf8") });
    assert.equal(key.status, 200, JSON.stringify(key.body));
    assert.match(key.body.fingerprint, /^256 MD5:([0-9a-f]{2}:){15}[0-9a-f]{2} \(ssh-ed25519\)$/);
    assert.equal((await api("GET", `/iam/v1alpha1/ssh-keys/${key.body.id}`)).body.public_key, key.body.public_key);
    const offer = (await api("GET", `${ZONE}/offers?name=EM-A610R-NVME`)).body.offers[0].id;
    const created = await api("POST", `${ZONE}/servers`, {
      offer_id: offer,
      name: "em-worker-1",
      install: { os_id: UBUNTU_NOBLE, hostname: "em-worker-1", ssh_key_ids: [key.body.id] },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = created.body.id as string;
    const address = created.body.ips[0].address as string;
    assert.match(address, /^127\.0\.4\.\d+$/, "the reported IPv4 is the machine's loopback address");

    const first = await installed(id);
    for (const type of HOST_KEY_TYPES) {
      const run = ssh(address, "hostname; cat /etc/hostname", first.keys[type]!);
      assert.equal(run.status, 0, `pinned to its ${type} key: ${run.stderr}`);
      assert.deepEqual(run.stdout.trim().split("\n"), ["em-worker-1", "em-worker-1"]);
    }
    const [algorithm, otherBlob] = readFileSync(`${otherKey}.pub`, "utf8").split(" ");
    const wrongPin = ssh(address, "true", `${algorithm} ${otherBlob}`);
    assert.notEqual(wrongPin.status, 0, "another host key is refused");
    const stranger = spawnSync(
      "ssh",
      [
        ...["-F", "/dev/null", "-i", otherKey, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no"],
        ...["-o", "UserKnownHostsFile=/dev/null", `${userInfo().username}@${address}`, "true"],
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    assert.equal(stranger.status, 255, "a key the install did not name is refused");
    // A file the session writes stays the machine's.
    assert.equal(ssh(address, "echo mine > /etc/em-marker", first.keys.ed25519!).status, 0);

    // A reinstall: no SSH while it installs, then a new box with new host keys and none of the old files.
    const reinstall = await api("POST", `${ZONE}/servers/${id}/install`, {
      os_id: UBUNTU_NOBLE,
      hostname: "em-worker-1b",
      ssh_key_ids: [key.body.id],
    });
    assert.equal(reinstall.status, 200, JSON.stringify(reinstall.body));
    const second = await installed(id, first.keys);
    for (const type of HOST_KEY_TYPES) assert.notEqual(second.keys[type], first.keys[type], `a new ${type} host key`);
    const after = ssh(address, "hostname; cat /etc/em-marker 2>/dev/null || echo gone", second.keys.rsa!);
    assert.equal(after.status, 0, after.stderr);
    assert.deepEqual(after.stdout.trim().split("\n"), ["em-worker-1b", "gone"]);

    // A reboot: the machine starts again with its files and host keys; what ran in it, and /tmp, are gone.
    assert.equal(
      ssh(
        address,
        "echo kept > /etc/em-kept; echo lost > /tmp/em-lost; setsid sleep 1000 >/dev/null 2>&1 < /dev/null &",
        second.keys.ed25519!,
      ).status,
      0,
    );
    assert.equal(ssh(address, 'pgrep -f "sleep 100[0]" >/dev/null && echo sleeping', second.keys.ed25519!).stdout.trim(), "sleeping");
    const before = fake!.machines!.machine(id);
    assert.equal((await api("POST", `${ZONE}/servers/${id}/reboot`, {})).status, 200);
    await waitFor("the machine started again after the reboot", async () => {
      const current = fake!.machines!.machine(id);
      return current !== undefined && current !== before && Object.keys(scannedHostKeys(address)).length === 3 ? true : undefined;
    });
    assert.deepEqual(scannedHostKeys(address), second.keys, "a reboot keeps the host keys");
    const rebooted = ssh(
      address,
      'cat /etc/em-kept; cat /tmp/em-lost 2>/dev/null || echo no-tmp; pgrep -f "sleep 100[0]" >/dev/null && echo sleeping || echo no-sleep',
      second.keys.ed25519!,
    );
    assert.deepEqual(rebooted.stdout.trim().split("\n"), ["kept", "no-tmp", "no-sleep"], rebooted.stderr);

    // A restart of the fake (as `nodefleet local up` again): the same machine, the same host keys.
    await fake!.app.close();
    assert.equal(spawnSync("ssh-keyscan", ["-T", "3", address], { encoding: "utf8" }).stdout.trim(), "", "no SSH while the fake is down");
    await start();
    const restarted = await installed(id);
    assert.deepEqual(restarted.keys, second.keys, "host keys kept across a restart");
    assert.equal(ssh(address, "hostname", restarted.keys.ecdsa!).stdout.trim(), "em-worker-1b");

    // A delete: the machine goes, and its files with it.
    assert.equal((await api("DELETE", `${ZONE}/servers/${id}`)).status, 200);
    await waitFor("SSH ended after the delete", async () =>
      spawnSync("ssh-keyscan", ["-T", "3", address], { encoding: "utf8" }).stdout.trim() === "" ? true : undefined,
    );
    await waitFor("the machine's directory removed", async () => (existsSync(join(dir, "machines", id)) ? undefined : true));
    assert.deepEqual(logged, [], "nothing went wrong on the way");
  });

  it("says once, and runs no machine, when the install names no IAM key it has", async function () {
    const offer = (await api("GET", `${ZONE}/offers?name=EM-A610R-NVME`)).body.offers[0].id;
    const unknownKey = randomUUID();
    const created = await api("POST", `${ZONE}/servers`, {
      offer_id: offer,
      name: "em-keyless",
      install: { os_id: UBUNTU_NOBLE, hostname: "em-keyless", ssh_key_ids: [unknownKey] },
    });
    const address = created.body.ips[0].address as string;
    await waitFor("the refusal said", async () => (logged.some((l) => l.includes("em-keyless")) ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(logged.filter((l) => l.includes("em-keyless")).length, 1, logged.join("\n"));
    assert.match(logged[0]!, new RegExp(`ssh_key_ids \\(${unknownKey}\\) names an enabled IAM SSH key`));
    assert.equal(spawnSync("ssh-keyscan", ["-T", "3", address], { encoding: "utf8" }).stdout.trim(), "", "no machine");
    assert.equal(
      (await api("GET", `${ZONE}/servers/${created.body.id}`)).body.install.status,
      "completed",
      "the server itself installs as before",
    );
  });
});

// Runs as any user: the fake is told it is not root.
describe("fake Scaleway API without root", function () {
  let plainDir: string;
  before(() => (plainDir = mkdtempSync(join(tmpdir(), "nodefleet-scwplain-"))));
  after(() => rmSync(plainDir, { recursive: true, force: true }));

  it("not root: says once that it runs no machines, and servers get documentation addresses as before", async function () {
    const getuid = process.getuid;
    process.getuid = () => 1000;
    const said: string[] = [];
    const unprivileged = buildFakeScaleway({
      secretKey: SECRET,
      projectId: PROJECT,
      stateFile: join(plainDir, "unprivileged.json"),
      machinesDir: join(plainDir, "unprivileged-machines"),
      log: (message) => said.push(message),
    });
    process.getuid = getuid;
    try {
      assert.equal(unprivileged.machines, undefined);
      assert.deepEqual(said, [
        "the fake Scaleway API runs no Elastic Metal machines: their sandbox needs root; servers get documentation addresses",
      ]);
      await unprivileged.app.ready();
      const offer = (
        await unprivileged.app.inject({ method: "GET", url: `${ZONE}/offers?name=EM-A610R-NVME`, headers: { "x-auth-token": SECRET } })
      ).json();
      const created = await unprivileged.app.inject({
        method: "POST",
        url: `${ZONE}/servers`,
        headers: { "x-auth-token": SECRET },
        payload: {
          offer_id: offer.offers[0].id,
          name: "em-plain",
          install: { os_id: UBUNTU_NOBLE, hostname: "em-plain", ssh_key_ids: [randomUUID()] },
        },
      });
      assert.match(created.json().ips[0].address, /^(203\.0\.113|198\.51\.100|192\.0\.2)\./);
      assert.equal(existsSync(join(plainDir, "unprivileged-machines")), false, "no machine directory");
      assert.equal(said.length, 1, "said once");
    } finally {
      await unprivileged.app.close();
    }
  });
});
