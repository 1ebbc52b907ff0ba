/**
 * cloud-init in the local cloud's machines (machineCloudInit.ts): the subset of `#cloud-config` the
 * stand-in runs (the pool's own user data among it) and what it refuses; then, as root, Elastic
 * Metal machines of the fake Scaleway API: a cloud-init offer's machine runs the server's user data
 * at first boot in its sandbox (write_files, runcmd), `cloud-init status --wait` over SSH answers
 * once that run ends, a reboot does not run it again, a refused user data ends in error and is said
 * once, another offer's machine reports cloud-init disabled, and nothing of it reaches the host.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { renderSelfJoinCloudConfig } from "../../../components/bootstrap/kubeadmWorkerCloudConfig";
import { SELF_JOIN_SCRIPT_PATH } from "../../../components/bootstrap/selfJoinScript";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import {
  CLOUD_INIT_OUTPUT_LOG,
  CloudConfigRefusal,
  HONOURED_CLOUD_INIT_MODULES,
  planUserData,
} from "../../../automation/local/machines/machineCloudInit";
import { SSHD } from "../../../automation/local/machines/openSshServer";
import { skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const SECRET = randomUUID();
const ZONE = "/baremetal/v1/zones/fr-par-2";
const UBUNTU_NOBLE = "7d1914e1-f4ab-47fc-bd8c-b3a23143e87a";

describe("machine cloud-init: the #cloud-config subset the stand-in runs", function () {
  it("runs the pool's own user data: the join script as a root-only file, run by runcmd", function () {
    const plan = planUserData(renderSelfJoinCloudConfig("#!/usr/bin/env bash\necho 'joined'\n"));
    assert.equal(plan.files.length, 1);
    const [file] = plan.files;
    assert.deepEqual(
      { path: file!.path, owner: file!.owner, mode: file!.mode.toString(8), append: file!.append, defer: file!.defer },
      { path: SELF_JOIN_SCRIPT_PATH, owner: "root:root", mode: "700", append: false, defer: false },
    );
    assert.equal(file!.content.toString(), "#!/usr/bin/env bash\necho 'joined'\n");
    assert.equal(plan.runcmd, `#!/bin/sh\n'bash' '${SELF_JOIN_SCRIPT_PATH}'\n`, "a list item single-quoted word by word, as util.shellify");
  });

  it("reads write_files as cloud-init does: YAML 1.1 octal, encodings, defaults, defer and append", function () {
    const gz = gzipSync(Buffer.from("zipped\n")).toString("base64");
    const plan = planUserData(
      [
        "#cloud-config",
        "write_files:",
        "- path: /etc/a",
        "  permissions: 0600",
        "- path: /etc/b",
        "  encoding: b64",
        `  content: ${Buffer.from("it's b64\n").toString("base64")}`,
        "  owner: nobody:nogroup",
        "- path: /etc/c",
        "  encoding: gzip+base64",
        `  content: ${gz}`,
        "  defer: true",
        "  append: true",
        "runcmd:",
        "- echo one",
        "- [touch, /it's here]",
        "-",
      ].join("\n"),
    );
    const [a, b, c] = plan.files;
    assert.deepEqual([a!.mode, a!.content.toString(), a!.owner], [0o600, "", "root:root"], "unquoted 0600 is octal in YAML 1.1");
    assert.deepEqual([b!.mode, b!.content.toString(), b!.owner], [0o644, "it's b64\n", "nobody:nogroup"]);
    assert.deepEqual([c!.content.toString(), c!.defer, c!.append], ["zipped\n", true, true]);
    assert.equal(plan.runcmd, "#!/bin/sh\necho one\n'touch' '/it'\\''s here'\n");
    assert.deepEqual(planUserData(null), { files: [], runcmd: undefined }, "no user data: nothing to do");
  });

  it(`refuses, naming it, whatever is not ${HONOURED_CLOUD_INIT_MODULES.join(" or ")} in a #cloud-config`, function () {
    const refused = (userData: string, message: RegExp) =>
      assert.throws(
        () => planUserData(userData),
        (error: Error) => error instanceof CloudConfigRefusal && message.test(error.message),
      );
    refused(
      "#cloud-config\npackages: [jq]\nruncmd: [true]\n",
      /asks for packages, which the stand-in does not run \(it honours write_files, runcmd\)/,
    );
    refused("#!/bin/sh\ntrue\n", /user data starting "#!\/bin\/sh" is not #cloud-config/);
    refused("#cloud-config\nwrite_files:\n- path: /x\n  source: {uri: http://a}\n", /write_files\[0\] has source/);
    refused("#cloud-config\nwrite_files:\n- path: /x\n  encoding: base32\n", /write_files\[0\]\.encoding "base32"/);
    refused("#cloud-config\nwrite_files:\n- path: x\n", /write_files\[0\]\.path must be an absolute path/);
    refused("#cloud-config\nruncmd:\n- {a: 1}\n", /runcmd\[0\] is neither a string nor a list/);
    refused("#cloud-config\n- a\n", /not a mapping/);
  });
});

describe("machine cloud-init: Elastic Metal machines run their user data at first boot (fake Scaleway API)", function () {
  this.timeout(180_000);
  let dir: string;
  let fake: FakeScaleway | undefined;
  let url: string;
  let clientKey: string;
  let keyId: string;
  const logged: string[] = [];

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "X-Auth-Token": SECRET, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, any>;
  };
  /** Runs `command` in the machine at `address` over SSH (host key not pinned: the fake's machines are trusted here). */
  const ssh = (address: string, command: string) => {
    const result = spawnSync(
      "ssh",
      [
        ...["-F", "/dev/null", "-i", clientKey, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no"],
        ...["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10"],
        `${userInfo().username}@${address}`,
        command,
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  /** A server of `offer` with `userData`, once its machine answers SSH. */
  const server = async (name: string, offer: string, userData?: string) => {
    const offerId = (await api("GET", `${ZONE}/offers?name=${offer}`)).offers[0].id;
    const created = await api("POST", `${ZONE}/servers`, {
      offer_id: offerId,
      name,
      install: { os_id: UBUNTU_NOBLE, hostname: name, ssh_key_ids: [keyId] },
      ...(userData !== undefined ? { user_data: Buffer.from(userData).toString("base64") } : {}),
    });
    assert.ok(created.id, JSON.stringify(created));
    const address = created.ips[0].address as string;
    await until(
      `${name}'s machine answering SSH`,
      () => (ssh(address, "true").status === 0 ? true : undefined),
      30_000,
      () => logged.join("\n"),
    );
    return { id: created.id as string, address, machine: () => fake!.machines!.machine(created.id)! };
  };

  before(async function () {
    const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare", "/usr/bin/python3"].filter((tool) => !existsSync(tool));
    skipUnlessAvailable(this, missing.length ? `${missing.join(", ")} not installed` : undefined);
    skipUnlessAvailable(this, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, port 22)");
    dir = mkdtempSync(join(tmpdir(), "nodefleet-cloudinit-"));
    fake = buildFakeScaleway({
      secretKey: SECRET,
      projectId: randomUUID(),
      stateFile: join(dir, "scw.json"),
      actionMs: 50,
      installMs: 200,
      machinesDir: join(dir, "machines"),
      log: (message) => logged.push(message),
    });
    url = await fake.app.listen({ port: 0, host: "127.0.0.1" });
    clientKey = join(dir, "client_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", clientKey]);
    keyId = (await api("POST", "/iam/v1alpha1/ssh-keys", { name: "ops", public_key: readFileSync(`${clientKey}.pub`, "utf8") })).id;
  });
  after(async function () {
    await fake?.app.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs write_files and runcmd in the sandbox; status --wait answers once the run ends; a reboot does not run them again", async function () {
    const marker = `/var/lib/em-cloud-init-${randomUUID()}`;
    // The runcmd waits for a file the test writes over SSH, as the pool's join waits for the VLAN id.
    const userData = [
      "#cloud-config",
      "write_files:",
      `- path: ${marker}/script.sh`,
      "  permissions: '0700'",
      "  content: |",
      "    #!/bin/bash",
      `    until [ -s ${marker}/go ]; do sleep 0.2; done`,
      `    echo "ran as $(id -un) on $(hostname)" > ${marker}/ran`,
      "runcmd:",
      `- [bash, ${marker}/script.sh]`,
    ].join("\n");
    const em = await server("em-ci-1", "EM-A610R-NVME", userData);
    const running = ssh(em.address, "cloud-init status; cloud-init status --long --format json");
    assert.equal(running.stdout.split("\n")[0], "status: running", running.stdout + running.stderr);
    assert.equal(JSON.parse(running.stdout.slice(running.stdout.indexOf("{"))).boot_status_code, "enabled-by-generator");
    assert.equal(ssh(em.address, `stat -c %a ${marker}/script.sh`).stdout.trim(), "700", "write_files ran before runcmd");

    const started = Date.now();
    const waiting = new Promise<{ stdout: string; status: number | null; at: number }>((resolve) => {
      const child = spawn(
        "ssh",
        [
          ...["-F", "/dev/null", "-i", clientKey, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no"],
          ...[
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            `${userInfo().username}@${em.address}`,
            "cloud-init status --wait",
          ],
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.on("exit", (status) => resolve({ stdout, status, at: Date.now() }));
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const wroteAt = Date.now();
    assert.equal(ssh(em.address, `echo go > ${marker}/go`).status, 0);
    const waited = await waiting;
    assert.equal(waited.status, 0, waited.stdout);
    assert.match(waited.stdout, /^\.+\nstatus: done\n$/, "dots while it runs, then done");
    assert.ok(waited.at >= wroteAt && waited.at - started >= 1500, "answered only once the run ended");
    assert.equal(ssh(em.address, `cat ${marker}/ran`).stdout.trim(), `ran as root on em-ci-1`);
    const records = () =>
      em
        .machine()
        .records()
        .filter((r) => r.tool === "cloud-init")
        .map((r) => `${r.verb} ${r.subject}`);
    assert.deepEqual(records(), [
      `write_files ${marker}/script.sh`,
      "runcmd /var/lib/cloud/instances/" + em.id + "/scripts/runcmd",
      "scripts_user runcmd",
      "final done",
    ]);
    assert.match(em.machine().ownFile(CLOUD_INIT_OUTPUT_LOG) ?? "", /Cloud-init v\. 22\.4 finished/);
    assert.equal(existsSync(marker), false, "nothing written on the host");

    // A reboot: cloud-init runs again, its per-instance modules do not.
    const before = em.machine();
    assert.equal((await api("POST", `${ZONE}/servers/${em.id}/reboot`, {})).id, em.id);
    await until(
      "the machine back after the reboot",
      () => {
        const current = fake!.machines!.machine(em.id);
        return current !== undefined && current !== before && ssh(em.address, "true").status === 0 ? true : undefined;
      },
      30_000,
    );
    assert.equal(ssh(em.address, "cloud-init status --wait").stdout.trim().split("\n").pop(), "status: done");
    assert.deepEqual(records().slice(4), ["final done"], "nothing but the run's end again");
    assert.deepEqual(logged, []);
  });

  it("refuses user data it does not run: status error, said once; another offer's cloud-init is disabled", async function () {
    const refused = await server("em-ci-2", "EM-A610R-NVME", "#cloud-config\npackages: [jq]\n");
    const status = ssh(refused.address, "cloud-init status --wait --long");
    assert.equal(status.status, 1, status.stdout);
    assert.match(status.stdout, /status: error\n[\s\S]*asks for packages, which the stand-in does not run/);
    assert.deepEqual(
      logged.filter((l) => l.includes("em-ci-2")).map((l) => l.replace(/\(server [^)]+\)/, "")),
      [
        "Elastic Metal machine em-ci-2 : cloud-init refused its user data: the #cloud-config asks for packages, which the stand-in does not run (it honours write_files, runcmd)",
      ],
    );
    assert.ok(
      refused
        .machine()
        .records()
        .some((r) => r.tool === "cloud-init" && r.verb === "refused"),
    );

    // A failing runcmd: the run ends in error, as scripts_user reports it, said once by the host.
    const failing = await server("em-ci-3", "EM-A610R-NVME", "#cloud-config\nruncmd:\n- exit 3\n");
    const failed = ssh(failing.address, "cloud-init status --wait --long");
    assert.equal(failed.status, 1);
    assert.match(failed.stdout, /Runparts: 1 failures \(runcmd\) in 1 attempted commands/);
    await until("the failure said", () => (logged.some((l) => l.includes("em-ci-3")) ? true : undefined), 10_000);
    assert.match(
      logged.find((l) => l.includes("em-ci-3"))!,
      /cloud-init ended in error: \('scripts_user', RuntimeError/,
    );

    const noCloudInit = await server("em-ci-4", "EM-A116X-SSD");
    const disabled = ssh(noCloudInit.address, "cloud-init status --wait --long; cloud-init init");
    assert.match(disabled.stdout, /^\nstatus: disabled\nboot_status_code: disabled-by-generator\n/);
    assert.match(disabled.stderr, /answers only 'cloud-init status'/);
  });
});
