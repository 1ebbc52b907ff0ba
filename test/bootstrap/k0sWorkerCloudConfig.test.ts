import { strict as assert } from "node:assert";
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { parse } from "yaml";
import { kubeletSchema, type Taint } from "../../components/fleet/fleetSpec";
import { encodeK0sJoinToken } from "../../components/bootstrap/k0sJoinToken";
import { isKubeletRestrictedLabel } from "../../components/fleet/kubeletLabels";
import { HCLOUD_MAX_USER_DATA_BYTES } from "../../components/fleet/hcloudLocations";
import {
  K0S_BOOTSTRAP_SCRIPT_PATH,
  K0S_TOKEN_FILE,
  renderK0sWorkerBootstrapScript,
  renderK0sWorkerCloudConfig,
  type K0sWorkerBootstrapInput,
} from "../../components/bootstrap/k0sWorkerCloudConfig";
import { assertCloudInitSchemaValid, assertShellcheckClean } from "../support/externalLinters";

const CA = "-----BEGIN CERTIFICATE-----\nMIIBhjCCASugAwIBAgIUEVjgS45H2jspZhUrNKLq\n-----END CERTIFICATE-----\n";
const JOIN_TOKEN = encodeK0sJoinToken({ apiServer: "https://203.0.113.10:6443", caCertificate: CA, token: "abcdef.0123456789abcdef" });

function baseInput(overrides: Partial<K0sWorkerBootstrapInput> = {}): K0sWorkerBootstrapInput {
  return {
    k0sVersion: "v1.33.4+k0s.0",
    joinToken: JOIN_TOKEN,
    hostname: "example-hel1-general-0",
    providerID: "nodefleet://example/hel1-general-0",
    labels: {
      "nodefleet.io/pool": "general",
      "node.kubernetes.io/instance-type": "cx32",
      "topology.kubernetes.io/zone": "hel1-dc2",
      "node-role.kubernetes.io/worker": "",
      "kubernetes.io/role": "worker",
    },
    taints: [
      { key: "dedicated", value: "gpu", effect: "NoSchedule" },
      { key: "example.com/maintenance", effect: "NoExecute" },
    ],
    kubelet: kubeletSchema.parse({}),
    ...overrides,
  };
}

/** The biggest input a pool could realistically pass: many long labels and taints. */
function maxInput(): K0sWorkerBootstrapInput {
  const labels: Record<string, string> = {};
  for (let i = 0; i < 64; i++) labels[`team-${i}.platform.example.com/${"k".repeat(50)}${i}`] = `${"v".repeat(60)}${i}`.slice(0, 63);
  const taints: Taint[] = [];
  for (let i = 0; i < 32; i++)
    taints.push({ key: `taints.example.com/${"t".repeat(40)}${i}`, value: "v".repeat(63), effect: "NoSchedule" });
  return baseInput({
    labels,
    taints,
    k0sSha256: { amd64: "a".repeat(64), arm64: "b".repeat(64) },
    hostname: `example-${"h".repeat(40)}`,
    providerID: `nodefleet://example/${"n".repeat(40)}`,
  });
}

interface WriteFile {
  path: string;
  permissions: string;
  owner: string;
  content: string;
}
interface CloudConfig {
  hostname: string;
  write_files: WriteFile[];
  runcmd: string[][];
}

function parseUserData(userData: string): CloudConfig {
  assert.ok(userData.startsWith("#cloud-config\n"), "user data starts with the #cloud-config header");
  return parse(userData, { version: "1.1" }) as CloudConfig;
}

function file(config: CloudConfig, path: string): WriteFile {
  const found = config.write_files.find((f) => f.path === path);
  assert.ok(found, `write_files has ${path}`);
  return found;
}

function scriptOf(userData: string): string {
  return file(parseUserData(userData), K0S_BOOTSTRAP_SCRIPT_PATH).content;
}

/** The argv of `k0s install` as bash builds it from the script's install_args array. */
function installArgv(script: string): string[] {
  const block = /^ {2}install_args=\($[\s\S]*?^ {2}\)$/m.exec(script);
  assert.ok(block, "the script builds install_args");
  const result = spawnSync(
    "bash",
    ["-c", `set -euo pipefail\ntoken_file=/etc/k0s/join-token\n${block[0]}\nprintf '%s\\0' "\${install_args[@]}"`],
    {
      encoding: "utf8",
    },
  );
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.split("\0").slice(0, -1);
}

function flagValue(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

describe("k0s worker cloud-config", () => {
  const inputs: Array<[string, K0sWorkerBootstrapInput]> = [
    ["typical", baseInput()],
    ["pinned checksums, no labels or taints", baseInput({ labels: {}, taints: [], k0sSha256: { amd64: "0".repeat(64) } })],
    ["maximal", maxInput()],
    ["quote-heavy hostname-like values", baseInput({ hostname: "yes", labels: { on: "off", "a.b/c": "0600" } })],
  ];

  for (const [name, input] of inputs) {
    it(`passes cloud-init schema and shellcheck (${name})`, () => {
      const userData = renderK0sWorkerCloudConfig(input);
      assertCloudInitSchemaValid(userData);
      const script = scriptOf(userData);
      assert.ok(script.startsWith("#!/bin/bash\n"));
      assertShellcheckClean(script);
      assert.doesNotMatch(userData, /set\s+-[a-wyz]*x|set\s+-o\s+xtrace|bash\s+-x|BASH_XTRACEFD/, "no tracing");
      assert.match(script, /^set -euo pipefail$/m);
    });
  }

  it("stays under Hetzner's 32 KiB user-data limit for a maximal input", () => {
    const userData = renderK0sWorkerCloudConfig(maxInput());
    const bytes = Buffer.byteLength(userData, "utf8");
    assert.ok(bytes > 8 * 1024, `the maximal input is big enough to mean something (${bytes} bytes)`);
    assert.ok(bytes < HCLOUD_MAX_USER_DATA_BYTES, `${bytes} bytes`);
  });

  it("sets the hostname and writes the token 0600, the token nowhere else", () => {
    const userData = renderK0sWorkerCloudConfig(baseInput());
    const config = parseUserData(userData);
    assert.equal(config.hostname, "example-hel1-general-0");
    const token = file(config, K0S_TOKEN_FILE);
    assert.equal(token.permissions, "0600");
    assert.equal(token.owner, "root:root");
    assert.equal(token.content, JOIN_TOKEN);
    assert.equal(userData.split(JOIN_TOKEN).length - 1, 1, "the join token appears exactly once");
    assert.ok(!scriptOf(userData).includes(JOIN_TOKEN.slice(0, 24)));
    assert.deepEqual(config.runcmd, [[K0S_BOOTSTRAP_SCRIPT_PATH]]);
  });

  it("quotes a hostname that YAML 1.1 would read as a boolean", () => {
    const config = parseUserData(renderK0sWorkerCloudConfig(baseInput({ hostname: "yes" })));
    assert.equal(config.hostname, "yes");
  });

  it("passes labels, taints, provider id and kubelet flags to k0s install worker, restricted labels dropped", () => {
    const argv = installArgv(scriptOf(renderK0sWorkerCloudConfig(baseInput())));
    assert.equal(argv[0], "worker");
    assert.equal(flagValue(argv, "--token-file"), "/etc/k0s/join-token");
    assert.equal(
      flagValue(argv, "--labels"),
      "nodefleet.io/pool=general,node.kubernetes.io/instance-type=cx32,topology.kubernetes.io/zone=hel1-dc2",
    );
    assert.equal(flagValue(argv, "--taints"), "dedicated=gpu:NoSchedule,example.com/maintenance:NoExecute");
    assert.equal(
      flagValue(argv, "--kubelet-extra-args"),
      "--provider-id=nodefleet://example/hel1-general-0 --hostname-override=example-hel1-general-0 --max-pods=110 " +
        "--kube-reserved=cpu=100m,memory=512Mi,ephemeral-storage=1Gi " +
        "--eviction-hard=memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%",
    );
  });

  it("leaves out --labels and --taints when there are none", () => {
    const argv = installArgv(scriptOf(renderK0sWorkerCloudConfig(baseInput({ labels: { "kubernetes.io/role": "x" }, taints: [] }))));
    assert.equal(flagValue(argv, "--labels"), undefined);
    assert.equal(flagValue(argv, "--taints"), undefined);
  });

  it("downloads the pinned release with the + URL-encoded in the tag", () => {
    const script = scriptOf(renderK0sWorkerCloudConfig(baseInput()));
    assert.match(script, /^release_url='https:\/\/github\.com\/k0sproject\/k0s\/releases\/download\/v1\.33\.4%2Bk0s\.0'$/m);
    assert.match(script, /^k0s_version='v1\.33\.4\+k0s\.0'$/m);
  });

  it("rejects invalid input, never echoing the join token", () => {
    const secretish = "c2VjcmV0LXRva2Vu not-base64";
    assert.throws(
      () => renderK0sWorkerCloudConfig(baseInput({ joinToken: secretish })),
      (err: Error) => /joinToken/.test(err.message) && !err.message.includes("c2VjcmV0"),
    );
    assert.throws(() => renderK0sWorkerCloudConfig(baseInput({ k0sVersion: "1.33.4" })), /k0sVersion/);
    assert.throws(() => renderK0sWorkerCloudConfig(baseInput({ k0sSha256: { amd64: "XYZ" } })), /k0sSha256\.amd64/);
    assert.throws(() => renderK0sWorkerCloudConfig(baseInput({ hostname: "Bad_Host" })), /hostname/);
    assert.throws(() => renderK0sWorkerCloudConfig(baseInput({ providerID: "a b" })), /providerID/);
    assert.throws(() => renderK0sWorkerCloudConfig(baseInput({ labels: { ok: "it's" } })), /labels\.ok: label values/);
    assert.throws(
      () => renderK0sWorkerCloudConfig(baseInput({ taints: [{ key: "a", effect: "Sometimes" as Taint["effect"] }] })),
      /taints\[0\]\.effect/,
    );
  });

  it("bash receives exactly the labels and taints for any valid input (property)", () => {
    const name = fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?$/);
    const prefix = fc.option(
      fc.constantFrom("example.com", "karpenter.sh", "node-role.kubernetes.io", "kubernetes.io", "k8s.io", "node.kubernetes.io"),
      {
        nil: undefined,
      },
    );
    const key = fc.tuple(prefix, name).map(([p, n]) => (p === undefined ? n : `${p}/${n}`));
    const value = fc.oneof(fc.constant(""), name);
    const effect = fc.constantFrom("NoSchedule", "PreferNoSchedule", "NoExecute") as fc.Arbitrary<Taint["effect"]>;
    const taint = fc.record({ key, value: fc.option(name, { nil: undefined }), effect });
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 6 }), fc.array(taint, { maxLength: 4 }), (labels, taints) => {
        const argv = installArgv(scriptOf(renderK0sWorkerCloudConfig(baseInput({ labels, taints }))));
        const passed = Object.fromEntries(
          (flagValue(argv, "--labels") ?? "")
            .split(",")
            .filter((p) => p !== "")
            .map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]),
        );
        for (const [k, v] of Object.entries(labels)) {
          assert.equal(passed[k], isKubeletRestrictedLabel(k) ? undefined : v, k);
        }
        const expectedTaints = taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`).join(",");
        assert.equal(flagValue(argv, "--taints"), expectedTaints === "" ? undefined : expectedTaints);
      }),
      { numRuns: 40 },
    );
  });
});

// --- Running the rendered script against shims ---------------------------------------------------

const FAKE_K0S = `#!/bin/bash
# Stand-in for the k0s binary: records its arguments and acts out install/start.
set -euo pipefail
{ printf 'k0s'; printf '\\t%s' "$@"; printf '\\n'; } >>"$SHIM_LOG"
case "$1" in
  version) echo "\${FAKE_K0S_VERSION:-v1.33.4+k0s.0}" ;;
  install) mkdir -p "$NODEFLEET_ROOT/etc/systemd/system" && : >"$NODEFLEET_ROOT/etc/systemd/system/k0sworker.service" ;;
  start)
    if [ -r "$NODEFLEET_ROOT/etc/k0s/join-token" ]; then echo "token-present-at-start" >>"$SHIM_LOG"; fi
    : >"$NODEFLEET_ROOT/run-k0sworker-active"
    if [ -z "\${FAKE_NO_KUBELET_CONF:-}" ]; then mkdir -p "$NODEFLEET_ROOT/var/lib/k0s" && echo kubeconfig >"$NODEFLEET_ROOT/var/lib/k0s/kubelet.conf"; fi ;;
esac
`;

const SHIMS: Record<string, string> = {
  uname: `#!/bin/bash
echo "\${FAKE_UNAME_M:-x86_64}"
`,
  curl: `#!/bin/bash
set -euo pipefail
{ printf 'curl'; printf '\\t%s' "$@"; printf '\\n'; } >>"$SHIM_LOG"
out=''
url=''
while [ $# -gt 0 ]; do
  case "$1" in
    --output) out="$2"; shift 2 ;;
    --proto | --retry | --retry-delay) shift 2 ;;
    -*) shift ;;
    *) url="$1"; shift ;;
  esac
done
case "$url" in
  */sha256sums.txt) cp "$FAKE_SUMS" "$out" ;;
  */k0s-v*) cp "$FAKE_K0S" "$out" ;;
  *) echo "curl: (22) The requested URL returned error: 404" >&2; exit 22 ;;
esac
`,
  systemctl: `#!/bin/bash
{ printf 'systemctl'; printf '\\t%s' "$@"; printf '\\n'; } >>"$SHIM_LOG"
if [ "$1" = is-active ]; then [ -e "$NODEFLEET_ROOT/run-k0sworker-active" ]; fi
`,
  sleep: `#!/bin/bash
{ printf 'sleep'; printf '\\t%s' "$@"; printf '\\n'; } >>"$SHIM_LOG"
`,
};

interface Sandbox {
  dir: string;
  root: string;
  log: string;
  env: NodeJS.ProcessEnv;
  fakeK0sSha256: string;
}

function sandbox(): Sandbox {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-k0s-join-"));
  const bin = join(dir, "bin");
  const root = join(dir, "root");
  mkdirSync(bin);
  mkdirSync(root);
  for (const [name, body] of Object.entries(SHIMS)) {
    writeFileSync(join(bin, name), body, { mode: 0o755 });
  }
  const fakeK0s = join(dir, "fake-k0s");
  writeFileSync(fakeK0s, FAKE_K0S, { mode: 0o755 });
  const fakeK0sSha256 = createHash("sha256").update(FAKE_K0S).digest("hex");
  const sums = join(dir, "sha256sums.txt");
  writeFileSync(
    sums,
    [
      `${"1".repeat(64)}  k0s-v1.33.4+k0s.0-arm`,
      `${fakeK0sSha256}  k0s-v1.33.4+k0s.0-amd64`,
      `${fakeK0sSha256} *k0s-v1.33.4+k0s.0-arm64`,
      `${"2".repeat(64)}  k0s-airgap-bundle-v1.33.4+k0s.0-amd64`,
      "",
    ].join("\n"),
  );
  const log = join(dir, "calls.log");
  writeFileSync(log, "");
  return {
    dir,
    root,
    log,
    fakeK0sSha256,
    env: {
      PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
      HOME: dir,
      TMPDIR: dir,
      NODEFLEET_ROOT: root,
      SHIM_LOG: log,
      FAKE_K0S: fakeK0s,
      FAKE_SUMS: sums,
    },
  };
}

/** Lays the cloud-config's write_files out under the sandbox root, as cloud-init would. */
function applyWriteFiles(box: Sandbox, userData: string): string {
  for (const f of parseUserData(userData).write_files) {
    const path = join(box.root, f.path);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, f.content);
    chmodSync(path, parseInt(f.permissions, 8));
  }
  return join(box.root, K0S_BOOTSTRAP_SCRIPT_PATH);
}

function runScript(box: Sandbox, script: string, env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(script, [], { env: { ...box.env, ...env }, encoding: "utf8", timeout: 30_000 });
  const calls = readFileSync(box.log, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => l.split("\t"));
  writeFileSync(box.log, "");
  return { status: result.status, stderr: result.stderr, calls };
}

describe("k0s worker bootstrap script, run against shims", function () {
  let box: Sandbox;
  beforeEach(function () {
    if (spawnSync("bash", ["--version"]).status !== 0) {
      console.log("      (skipped: bash is not available to run the bootstrap script)");
      this.skip();
    }
    box = sandbox();
  });
  afterEach(() => {
    if (box) rmSync(box.dir, { recursive: true, force: true });
  });

  const tokenPath = () => join(box.root, K0S_TOKEN_FILE);
  const k0sPath = () => join(box.root, "usr/local/bin/k0s");

  it("installs the checksum-pinned release, joins, starts, then removes the token; a re-run changes nothing", () => {
    const script = applyWriteFiles(box, renderK0sWorkerCloudConfig(baseInput({ k0sSha256: { amd64: box.fakeK0sSha256 } })));
    assert.equal(statSync(tokenPath()).mode & 0o777, 0o600);

    const first = runScript(box, script);
    assert.equal(first.status, 0, first.stderr);
    const curls = first.calls.filter((c) => c[0] === "curl");
    assert.equal(curls.length, 1, "pinned checksum: no sha256sums.txt download");
    assert.equal(curls[0].at(-1), "https://github.com/k0sproject/k0s/releases/download/v1.33.4%2Bk0s.0/k0s-v1.33.4+k0s.0-amd64");
    const install = first.calls.find((c) => c[0] === "k0s" && c[1] === "install");
    assert.ok(install, "k0s install ran");
    assert.deepEqual(install.slice(1, 5), ["install", "worker", "--token-file", tokenPath()]);
    assert.ok(install.includes("--labels") && install.includes("--taints") && install.includes("--kubelet-extra-args"));
    const order = first.calls.map((c) => (c[0] === "k0s" ? `k0s ${c[1]}` : c[0]));
    assert.ok(order.indexOf("k0s install") < order.indexOf("k0s start"));
    assert.ok(
      first.calls.some((c) => c[0] === "token-present-at-start"),
      "the token is still there when k0s starts",
    );
    assert.equal(statSync(k0sPath()).mode & 0o777, 0o755);
    assert.equal(existsSync(tokenPath()), false, "the token is removed after kubelet.conf appeared");
    assert.ok(!first.stderr.includes(JOIN_TOKEN.slice(0, 24)));

    const second = runScript(box, script);
    assert.equal(second.status, 0, second.stderr);
    assert.deepEqual(
      second.calls.filter((c) => c[0] !== "systemctl"),
      [],
      "re-run: no download, no install, no start",
    );
  });

  it("upgrades a joined worker to a new pinned version in place (the SSH self-join's copy): verified binary, restart, no token, no reinstall", () => {
    const writeScript = (sha: string) => {
      applyWriteFiles(box, renderK0sWorkerCloudConfig(baseInput({ k0sSha256: { amd64: sha } })));
      const path = join(box.root, K0S_BOOTSTRAP_SCRIPT_PATH);
      writeFileSync(path, renderK0sWorkerBootstrapScript(baseInput({ k0sSha256: { amd64: sha } }), true), { mode: 0o700 });
      return path;
    };
    const script = writeScript(box.fakeK0sSha256);
    assert.equal(runScript(box, script).status, 0);
    // The node now runs an older k0s; the pool was changed to the version the script pins.
    const upgrade = runScript(box, script, { FAKE_K0S_VERSION: "v1.32.8+k0s.0" });
    assert.equal(upgrade.status, 0, upgrade.stderr);
    assert.match(upgrade.stderr, /upgrading k0s from v1\.32\.8\+k0s\.0 to v1\.33\.4\+k0s\.0/);
    const urls = upgrade.calls.filter((c) => c[0] === "curl").map((c) => c.at(-1));
    assert.deepEqual(urls, ["https://github.com/k0sproject/k0s/releases/download/v1.33.4%2Bk0s.0/k0s-v1.33.4+k0s.0-amd64"]);
    assert.ok(
      upgrade.calls.some((c) => c[0] === "systemctl" && c[1] === "restart" && c[2] === "k0sworker"),
      "k0sworker restarted",
    );
    assert.equal(
      upgrade.calls.some((c) => c[0] === "k0s" && c[1] === "install"),
      false,
      "no reinstall: the worker keeps its credentials",
    );
    assert.equal(existsSync(tokenPath()), false);

    const cloudInitCopy = applyWriteFiles(box, renderK0sWorkerCloudConfig(baseInput({ k0sSha256: { amd64: box.fakeK0sSha256 } })));
    const once = runScript(box, cloudInitCopy, { FAKE_K0S_VERSION: "v1.32.8+k0s.0" });
    assert.equal(
      once.calls.some((c) => c[0] === "curl"),
      false,
      "cloud-init's copy runs once per server and never upgrades",
    );

    const tampered = writeScript("f".repeat(64));
    const refused = runScript(box, tampered, { FAKE_K0S_VERSION: "v1.32.8+k0s.0" });
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /checksum mismatch/);
    assert.equal(
      refused.calls.some((c) => c[0] === "systemctl" && c[1] === "restart"),
      false,
      "nothing restarted on a bad binary",
    );
  });

  it("verifies against the release's sha256sums.txt when no checksum is pinned (arm64)", () => {
    const script = applyWriteFiles(box, renderK0sWorkerCloudConfig(baseInput()));
    const run = runScript(box, script, { FAKE_UNAME_M: "aarch64" });
    assert.equal(run.status, 0, run.stderr);
    const urls = run.calls.filter((c) => c[0] === "curl").map((c) => c.at(-1));
    assert.deepEqual(urls, [
      "https://github.com/k0sproject/k0s/releases/download/v1.33.4%2Bk0s.0/k0s-v1.33.4+k0s.0-arm64",
      "https://github.com/k0sproject/k0s/releases/download/v1.33.4%2Bk0s.0/sha256sums.txt",
    ]);
    assert.equal(existsSync(tokenPath()), false);
  });

  it("stops before installing when the checksum does not match, keeping the token", () => {
    const script = applyWriteFiles(box, renderK0sWorkerCloudConfig(baseInput({ k0sSha256: { amd64: "f".repeat(64) } })));
    const run = runScript(box, script);
    assert.notEqual(run.status, 0);
    assert.match(run.stderr, /checksum mismatch/);
    assert.equal(run.calls.filter((c) => c[0] === "k0s").length, 0);
    assert.equal(existsSync(k0sPath()), false);
    assert.equal(existsSync(tokenPath()), true);
  });

  it("keeps the token and fails when the kubelet never gets its kubeconfig", () => {
    const script = applyWriteFiles(box, renderK0sWorkerCloudConfig(baseInput({ k0sSha256: { amd64: box.fakeK0sSha256 } })));
    const run = runScript(box, script, { FAKE_NO_KUBELET_CONF: "1", NODEFLEET_KUBELET_CONF_TIMEOUT: "10" });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /join token stays/);
    assert.deepEqual(
      run.calls.filter((c) => c[0] === "sleep"),
      [
        ["sleep", "5"],
        ["sleep", "5"],
      ],
    );
    assert.equal(existsSync(tokenPath()), true);
  });

  it("refuses an unsupported architecture", () => {
    const script = applyWriteFiles(box, renderK0sWorkerCloudConfig(baseInput()));
    const run = runScript(box, script, { FAKE_UNAME_M: "riscv64" });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /unsupported machine architecture riscv64/);
    assert.deepEqual(run.calls, []);
  });
});
