import { strict as assert } from "node:assert";
import type * as pulumi from "@pulumi/pulumi";
import { type RecordedResource, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { type MockPrivateNetwork, mockPrivateNetworkId, scalewayLookup } from "../../automation/mocks/scalewayLookups";
import { mockEd25519HostKey } from "../../automation/mocks/seededValues";
import { containsSecret, isWrappedSecret, resolveSecrets } from "../../automation/mocks/secretValues";
import {
  ELASTIC_METAL_REPLACE_ON_CHANGES,
  IPAM_IP_REPLACE_ON_CHANGES,
  PRIVATE_IPV4_LABEL,
  bootstrapMethod,
  elasticMetalGeneration,
} from "../../components/scaleway/elasticMetalPlan";
import {
  ElasticMetalNodePool,
  isPrivateNetworkNotFound,
  settlePrivateNetworkLookup,
  sharedPrivateNetworkId,
} from "../../components/scaleway/elasticMetalNodePool";
import { READ_HOST_KEY_COMMAND, parseHostKeyLine } from "../../components/bootstrap/sshConnection";
import { type FleetSpec, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { kubeletConfigHash, renderKubeletConfig } from "../../components/bootstrap/kubeletConfig";
import { assertCloudInitSchemaValid, assertShellcheckClean } from "../support/externalLinters";
import { elasticMetalPoolConfig, rawFleetConfig, runFleetProgramUnderMocks, stackFileConfig } from "../support/fleetConfigFixture";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const SERVER = "scaleway:elasticmetal/server:Server";
const IPAM_IP = "scaleway:ipam/ip:Ip";
const PRIVATE_NETWORK = "scaleway:network/privateNetwork:PrivateNetwork";
const REMOTE = "command:remote:Command";
/** A new member's token: one resource of nodefleet's plugin. */
const TOKEN = "nodefleet:kubernetes:NodeBootstrapToken";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAexample\n-----END OPENSSH PRIVATE KEY-----\n";

const ofType = (resources: RecordedResource[], type: string) => resources.filter((r) => r.type === type);
const plain = <T = Record<string, unknown>>(value: unknown) => resolveSecrets(value, true) as T;
const byName = (resources: RecordedResource[], suffix: string) => {
  const found = resources.find((r) => r.name.endsWith(suffix));
  assert.ok(found, `no resource named *${suffix}; have ${resources.map((r) => r.name).join(", ")}`);
  return found;
};

const SSH_KEY_ID = "fr-par/11111111-2222-4333-a444-555555555555";

function spec(pool: Record<string, unknown> = {}, cluster: Record<string, unknown> = {}): FleetSpec {
  return parseFleetSpec(rawFleetConfig({ cluster, pools: [elasticMetalPoolConfig({ sshKeyIds: [SSH_KEY_ID], ...pool })] }));
}

const KUBEADM = { kind: "kubeadm", kubernetesVersion: "v1.33.4", k0sVersion: undefined };
/** An offer Scaleway tags cloud-init (elasticMetalOffers.ts); the fixture's EM-B220E-NVME is not listed, so SSH. */
const CLOUD_INIT_OFFER = { offer: "EM-A610R-NVME" };

interface Recorded {
  resources: RecordedResource[];
  calls: Array<{ token: string; inputs: Record<string, unknown> }>;
  options: Map<string, pulumi.CustomResourceOptions>;
}

async function runPool(
  fleet: FleetSpec,
  extra: {
    privateNetworks?: MockPrivateNetwork[];
    kubeconfig?: string;
    sshPrivateKey?: string;
    call?: (args: pulumi.runtime.MockCallArgs) => Record<string, unknown>;
  } = {},
): Promise<Recorded> {
  const options = new Map<string, pulumi.CustomResourceOptions>();
  const { resources, calls } = await runUnderMocks({
    stack: "test",
    config: extra.sshPrivateKey ? { "nodefleet:sshPrivateKey": extra.sshPrivateKey } : {},
    secretKeys: extra.sshPrivateKey ? ["nodefleet:sshPrivateKey"] : [],
    call: extra.call ?? ((args) => scalewayLookup(args, extra.privateNetworks ?? []) ?? args.inputs),
    program: () => {
      const { kubeconfig: _k, ...cluster } = fleet.cluster;
      const pool = fleet.pools[0];
      if (pool.provider !== "scaleway-elastic-metal") throw new Error("fixture must be an Elastic Metal pool");
      const component = new ElasticMetalNodePool(
        "example-kura",
        { cluster, pool, ...(extra.kubeconfig ? { kubeconfig: extra.kubeconfig } : {}) },
        {
          // Component transformations reach every child: they show the options the engine would get.
          transformations: [
            (a) => {
              options.set(a.name, a.opts);
              return undefined;
            },
          ],
        },
      );
      return { nodes: component.nodes, privateNetworkId: component.privateNetworkId };
    },
  });
  return { resources, calls, options };
}

describe("ElasticMetalNodePool under mocks", function () {
  this.timeout(120_000);

  for (const replicas of [0, 1, 3]) {
    it(`declares per node an IPAM IP, a token, a server and the SSH join (${replicas} replicas), and one private network`, async () => {
      const { resources } = await runPool(spec({ replicas }));
      assert.equal(ofType(resources, PRIVATE_NETWORK).length, 1);
      assert.equal(ofType(resources, SERVER).length, replicas);
      assert.equal(ofType(resources, IPAM_IP).length, replicas);
      assert.equal(ofType(resources, TOKEN).length, replicas);
      const remote = ofType(resources, REMOTE);
      assert.equal(remote.filter((r) => r.name.endsWith("-hostkey")).length, replicas);
      assert.equal(remote.filter((r) => r.name.endsWith("-join")).length, replicas);
      assert.equal(remote.filter((r) => r.name.endsWith("-kubelet-config")).length, 0, "k0s clusters get no kubelet re-push");
      const names = ofType(resources, SERVER).map((s) => plain(s.inputs).name);
      assert.deepEqual(
        names,
        Array.from({ length: replicas }, (_, i) => `example-kura-scw-fr-par-${i}`),
      );
    });
  }

  it("wires the Private Network option, the IPAM address and the private network into each server", async () => {
    const { resources, calls } = await runPool(spec({ replicas: 2 }));
    const pn = ofType(resources, PRIVATE_NETWORK)[0];
    assert.deepEqual(plain(pn.inputs), {
      name: "runner-cache",
      region: "fr-par",
      ipv4Subnet: { subnet: "172.16.0.0/22" },
      tags: ["nodefleet.io/cluster=example", "nodefleet.io/pool=kura-scw-fr-par"],
    });
    const option = calls.find((c) => c.token === "scaleway:elasticmetal/getOption:getOption");
    assert.deepEqual(option?.inputs, { zone: "fr-par-2", name: "Private Network" });
    const optionAnswer = scalewayLookup({ token: option.token, args: option.inputs, inputs: option.inputs, provider: "" } as never);
    const offerCall = calls.find((c) => c.token === "scaleway:elasticmetal/getOffer:getOffer");
    assert.deepEqual(offerCall?.inputs, { zone: "fr-par-2", name: "EM-B220E-NVME" });
    const osCall = calls.find((c) => c.token === "scaleway:elasticmetal/getOs:getOs");
    assert.deepEqual(osCall?.inputs, { zone: "fr-par-2", name: "Ubuntu", version: "22.04 LTS (Jammy Jellyfish)" });
    const offerAnswer = scalewayLookup({ token: offerCall.token, inputs: offerCall.inputs } as never);
    const osAnswer = scalewayLookup({ token: osCall.token, inputs: osCall.inputs } as never);

    for (const i of [0, 1]) {
      const server = byName(resources, `example-kura-kura-scw-fr-par-${i}`);
      const ip = byName(resources, `example-kura-kura-scw-fr-par-${i}-ip`);
      const inputs = plain(server.inputs);
      assert.deepEqual(inputs.options, [{ id: optionAnswer?.optionId }]);
      assert.deepEqual(inputs.privateNetworks, [{ id: pn.id, ipamIpIds: [ip.id] }]);
      assert.equal(inputs.offer, offerAnswer?.offerId);
      assert.equal(inputs.os, osAnswer?.osId);
      assert.equal(inputs.zone, "fr-par-2");
      assert.deepEqual(inputs.sshKeyIds, [SSH_KEY_ID]);
      assert.deepEqual(plain(ip.inputs).sources, [{ privateNetworkId: pn.id }]);
      assert.ok(String(ip.state.address).startsWith("172.16."), `IPAM address ${ip.state.address} inside the subnet`);
      assert.ok((inputs.tags as string[]).includes(`nodefleet.io/node=kura-scw-fr-par-${i}`));
    }
  });

  it("creates the private network outside any apply; privateNetwork.id attaches to an existing one without a look-up", async () => {
    const { resources, calls } = await runPool(spec({ replicas: 1 }));
    assert.equal(ofType(resources, PRIVATE_NETWORK).length, 1, "not found: created");
    const lookup = calls.find((c) => c.token === "scaleway:network/getPrivateNetwork:getPrivateNetwork");
    assert.deepEqual(lookup?.inputs, { name: "runner-cache", region: "fr-par" });

    const id = "fr-par/99999999-2222-4333-a444-555555555555";
    const attached = await runPool(spec({ replicas: 1, privateNetwork: { name: "runner-cache", subnet: "172.16.0.0/22", id } }));
    assert.equal(ofType(attached.resources, PRIVATE_NETWORK).length, 0);
    assert.equal(attached.calls.filter((c) => c.token === "scaleway:network/getPrivateNetwork:getPrivateNetwork").length, 0);
    assert.equal((plain(ofType(attached.resources, SERVER)[0].inputs).privateNetworks as Array<{ id: string }>)[0].id, id);
    assert.throws(
      () => spec({ privateNetwork: { name: "runner-cache", subnet: "172.16.0.0/22", id: "runner-cache" } }),
      /privateNetwork\.id must be a Scaleway private network id/,
    );
  });

  it("tells a missing network from a failed look-up: only the provider's not-found creates, another fleet's network of the name is shared", async () => {
    // The provider's data source answers a name nobody has with datasource.FindExact's words.
    assert.equal(
      isPrivateNetworkNotFound(
        new Error(
          "invocation of scaleway:network/getPrivateNetwork:getPrivateNetwork returned an error: no element found with the name runner-cache",
        ),
      ),
      true,
    );
    for (const failure of [
      "scaleway-sdk-go: http error 503 Service Unavailable",
      "multiple elements found with the name runner-cache",
      "scaleway-sdk-go: insufficient permissions",
    ]) {
      assert.equal(isPrivateNetworkNotFound(new Error(failure)), false, failure);
    }
    const pool = { name: "kura-scw-fr-par", privateNetwork: { name: "runner-cache", subnet: "172.16.0.0/22" } };
    const tags = ["nodefleet.io/cluster=example", "nodefleet.io/pool=kura-scw-fr-par"];
    const subnets = [{ subnet: "172.16.0.0/22" }];
    assert.equal(sharedPrivateNetworkId(pool, tags, undefined), undefined);
    assert.equal(sharedPrivateNetworkId(pool, tags, { id: "fr-par/a", tags, ipv4Subnets: subnets }), undefined, "its own is declared");
    assert.equal(sharedPrivateNetworkId(pool, tags, { id: "fr-par/abc", tags: ["team=other"], ipv4Subnets: subnets }), "fr-par/abc");
    assert.throws(
      () => sharedPrivateNetworkId(pool, tags, { id: "fr-par/abc", tags: [], ipv4Subnets: [{ subnet: "10.9.0.0/24" }] }),
      /pool kura-scw-fr-par: privateNetwork\.subnet is 172\.16\.0\.0\/22, but the shared private network runner-cache \(fr-par\/abc\) has 10\.9\.0\.0\/24; set privateNetwork\.subnet to its subnet/,
    );
  });

  it("attaches to another fleet's network of the same name, read-only: declares none and puts its members on it", async () => {
    const theirs = [{ name: "runner-cache", region: "fr-par", subnet: "172.16.0.0/22", tags: ["team=ci"] }];
    const { resources } = await runPool(spec({ replicas: 2 }), { privateNetworks: theirs });
    assert.equal(ofType(resources, PRIVATE_NETWORK).length, 0, "the shared network is not the pool's to manage");
    const servers = ofType(resources, SERVER);
    assert.equal(servers.length, 2);
    const attached = servers.map((server) => (plain(server.inputs).privateNetworks as Array<{ id: string }>)[0]!.id);
    assert.deepEqual(attached, [mockPrivateNetworkId("fr-par", "runner-cache"), mockPrivateNetworkId("fr-par", "runner-cache")]);
  });

  it("a failed look-up (not a not-found) fails the network's declaration, so a transient error creates no duplicate", async () => {
    const pool = { name: "kura", privateNetwork: { name: "runner-cache", subnet: "172.16.0.0/22" } };
    assert.equal(
      await settlePrivateNetworkLookup(pool, "fr-par", Promise.reject(new Error("no element found with the name runner-cache"))),
      undefined,
    );
    assert.deepEqual(await settlePrivateNetworkLookup(pool, "fr-par", Promise.resolve({ id: "fr-par/a" })), { id: "fr-par/a" });
    await assert.rejects(
      settlePrivateNetworkLookup(pool, "fr-par", Promise.reject(new Error("scaleway-sdk-go: http error 503 Service Unavailable"))),
      /pool kura: looking up private network runner-cache in fr-par failed, so none is created: scaleway-sdk-go: http error 503/,
    );
    // The mock answers a missing name in the provider's words, with the details the SDK reports.
    const missing = await runPool(spec({ replicas: 1 }));
    assert.equal(plain(ofType(missing.resources, PRIVATE_NETWORK)[0].inputs).name, "runner-cache");
  });

  it("keeps declaring the network it created once the look-up finds it (tagged as this pool's)", async () => {
    const ours = [
      {
        name: "runner-cache",
        region: "fr-par",
        subnet: "172.16.0.0/22",
        tags: ["nodefleet.io/cluster=example", "nodefleet.io/pool=kura-scw-fr-par"],
      },
    ];
    const { resources } = await runPool(spec({ replicas: 1 }), { privateNetworks: ours });
    assert.equal(ofType(resources, PRIVATE_NETWORK).length, 1);
  });

  it("chooses cloud-init or the SSH self-join by the offer's cloud-init tag, not the OS; `bootstrap` overrides where it fits", async () => {
    const pool = (p: Record<string, unknown>) => ({
      name: "kura",
      bootstrap: "auto" as const,
      os: "ubuntu_jammy",
      offer: "EM-B220E-NVME",
      sshKeyIds: [SSH_KEY_ID],
      ...p,
    });
    for (const os of ["ubuntu_noble", "ubuntu_jammy"]) {
      assert.equal(bootstrapMethod(pool({ os, offer: "EM-A610R-NVME" })), "cloud-init", `${os} on a cloud-init offer`);
      assert.equal(bootstrapMethod(pool({ os, offer: "EM-A116X-SSD" })), "ssh", `${os} on an offer without the tag`);
    }
    assert.equal(
      bootstrapMethod(pool({ offer: "EM-B220E-NVME" })),
      "ssh",
      "an offer with unknown tags takes the path that works everywhere",
    );
    assert.equal(bootstrapMethod(pool({ offer: "EM-A610R-NVME", bootstrap: "ssh" })), "ssh");
    assert.equal(bootstrapMethod(pool({ offer: "EM-X1-NEW", bootstrap: "cloud-init" }), { "EM-X1-NEW": ["cloud-init"] }), "cloud-init");
    assert.throws(
      () => bootstrapMethod(pool({ offer: "EM-A116X-SSD", bootstrap: "cloud-init" })),
      /pool kura: bootstrap is cloud-init, but offer EM-A116X-SSD has no cloud-init tag/,
    );
    assert.throws(
      () => bootstrapMethod(pool({ offer: "EM-A610R-NVME", sshKeyIds: [] })),
      /pool kura: sshKeyIds is empty, so no bootstrap fits/,
    );
    assert.throws(() => bootstrapMethod(pool({ bootstrap: "ssh", sshKeyIds: [] })), /no bootstrap fits/);
    await assert.rejects(runPool(spec({ sshKeyIds: [] })), /sshKeyIds is empty, so no bootstrap fits/);
    const empty = await runPool(spec({ sshKeyIds: [], replicas: 0 }));
    assert.equal(ofType(empty.resources, SERVER).length, 0, "a pool scaled to zero needs no key");

    const ssh = await runPool(spec({ os: "ubuntu_jammy" }));
    const sshServer = ofType(ssh.resources, SERVER)[0];
    assert.equal(sshServer.inputs.cloudInit, undefined);
    const join = byName(ssh.resources, "-join");
    assert.ok(isWrappedSecret(join.inputs.stdin), "the join script is a secret");
    assert.equal(join.inputs.create, "sudo -n bash -s");
    const script = plain<{ s: string }>({ s: join.inputs.stdin }).s;
    assertShellcheckClean(script);
    const vlan = (sshServer.state.privateNetworks as Array<{ vlan: number }>)[0].vlan;
    assert.match(script, new RegExp(`^vlan_id=${vlan}$`, "m"), "the VLAN id comes from the server's privateNetworks[].vlan");
    const ip = ofType(ssh.resources, IPAM_IP)[0];
    assert.ok(script.includes(`${PRIVATE_IPV4_LABEL}=${ip.state.address}`), "the node registers with its private IPv4 label");
    assert.ok(script.includes(`- ${ip.state.addressCidr}`), "the VLAN interface carries the IPAM address");
    assert.match(
      script,
      new RegExp(`^\\s*node_ip=${String(ip.state.address).replace(/\./g, "\\.")}$`, "m"),
      "the IPAM address is the kubelet's --node-ip",
    );
    assert.match(script, /--node-ip=\$\{node_ip\}/);
    assert.match(script, /tcp dport 10250 accept/, "the cluster firewall's rules become the host firewall");
    assert.ok(
      script.indexOf("systemctl restart nodefleet-firewall.service") < script.indexOf("k0s worker: the join token"),
      "loaded before the kubelet",
    );
    assert.equal(ssh.resources.filter((r) => r.name.endsWith("-vlan")).length, 0);

    for (const os of ["ubuntu_noble", "ubuntu_jammy"]) {
      const cloud = await runPool(spec({ os, ...CLOUD_INIT_OFFER, bootstrap: os === "ubuntu_noble" ? "auto" : "cloud-init" }));
      const server = ofType(cloud.resources, SERVER)[0];
      assert.ok(isWrappedSecret(server.inputs.cloudInit), "cloudInit is a secret");
      const userData = plain<{ u: string }>({ u: server.inputs.cloudInit }).u;
      assertCloudInitSchemaValid(userData);
      assert.match(userData, /until \[ -s "\$vlan_file" \]/, "cloud-init waits for the VLAN id");
      // The SSH join after cloud-init: the run succeeds only once the node joined, and a later
      // version change re-runs it.
      const sshJoin = byName(cloud.resources, "-join");
      const joinScript = String(plain({ s: sshJoin.inputs.stdin }).s);
      assert.match(joinScript, /^cloud-init status --wait >\/dev\/null 2>&1 \|\| true\n#!/, "waits for cloud-init's own join first");
      assertShellcheckClean(joinScript.replace(/^cloud-init[^\n]*\n/, ""));
      const delivery = byName(cloud.resources, "-vlan");
      const vlanId = (server.state.privateNetworks as Array<{ vlan: number }>)[0].vlan;
      assert.match(String(plain({ s: delivery.inputs.stdin }).s), new RegExp(`^${vlanId}$`, "m"));
    }
  });

  it("pins the host key: one first read without it, every later connection verifies it", async () => {
    for (const pool of [{ os: "ubuntu_jammy" }, { os: "ubuntu_noble", ...CLOUD_INIT_OFFER }]) {
      const { resources } = await runPool(spec(pool, KUBEADM), { sshPrivateKey: SSH_KEY });
      const server = ofType(resources, SERVER)[0];
      const host = (server.state.ipv4s as Array<{ address: string }>)[0].address;
      const first = byName(resources, "-hostkey");
      const firstConnection = plain<Record<string, unknown>>(first.inputs.connection);
      assert.equal(first.inputs.create, READ_HOST_KEY_COMMAND);
      assert.equal(firstConnection.hostKey, undefined, "trust on first use");
      assert.equal(firstConnection.host, host);
      assert.equal(firstConnection.user, "ubuntu");
      assert.deepEqual(first.inputs.triggers, [server.id], "a new server (each machine generation is one) is read afresh");
      assert.ok(containsSecret(first.inputs.connection), "the private key is a secret");
      const later = ofType(resources, REMOTE).filter((r) => r !== first);
      // join, host-firewall and kubelet-config re-push, plus the VLAN delivery on the cloud-init path.
      assert.equal(later.length, pool.os === "ubuntu_jammy" ? 3 : 4, later.map((r) => r.name).join(", "));
      for (const command of later) {
        const connection = plain<Record<string, unknown>>(command.inputs.connection);
        assert.equal(connection.hostKey, mockEd25519HostKey(host), `${command.name} verifies the pinned key`);
        assert.equal(connection.privateKey, SSH_KEY);
      }
    }
    assert.throws(() => parseHostKeyLine("ssh-rsa AAAAB3Nza..."), /ed25519 host key could not be read/);
    assert.throws(() => parseHostKeyLine(""), /could not be read/);
  });

  it("kubeadm: the re-push trigger is the kubelet-config hash, which moves with the config and nothing else", async () => {
    const base = await runPool(spec({}, KUBEADM));
    const repush = byName(base.resources, "-kubelet-config");
    const expected = kubeletConfigHash(
      renderKubeletConfig({ kubelet: spec({}, KUBEADM).cluster.kubelet, providerID: "nodefleet:///example/kura-scw-fr-par-0" }),
    );
    const serverId = ofType(base.resources, SERVER)[0].id;
    assert.deepEqual(repush.inputs.triggers, [serverId, expected]);
    const repushScript = String(plain({ s: repush.inputs.stdin }).s);
    assertShellcheckClean(repushScript);
    assert.match(repushScript, /systemctl restart kubelet/);

    const moreVods = await runPool(spec({}, { ...KUBEADM, kubelet: { maxPods: 200 } }));
    assert.notDeepEqual(byName(moreVods.resources, "-kubelet-config").inputs.triggers, [serverId, expected]);
    const relabelled = await runPool(spec({ labels: { "example.com/tier": "cache" } }, KUBEADM));
    assert.deepEqual(byName(relabelled.resources, "-kubelet-config").inputs.triggers, [serverId, expected]);

    // A kubelet-config change is not a server change: same server inputs, same token, same join.
    const serverOf = (r: Recorded) => plain(ofType(r.resources, SERVER)[0].inputs);
    assert.deepEqual(serverOf(moreVods), serverOf(base));
    assert.deepEqual(byName(moreVods.resources, "-join").inputs.triggers, byName(base.resources, "-join").inputs.triggers);
    assert.deepEqual(
      ofType(moreVods.resources, TOKEN).map((t) => t.name),
      ofType(base.resources, TOKEN).map((t) => t.name),
    );
  });

  it("offer, OS and zone replace the server (with a fresh token); other changes do not", async () => {
    assert.deepEqual([...ELASTIC_METAL_REPLACE_ON_CHANGES].sort(), ["offer", "os", "zone"]);
    const base = await runPool(spec());
    const opts = base.options.get(ofType(base.resources, SERVER)[0].name);
    assert.deepEqual([...(opts?.replaceOnChanges ?? [])].sort(), ["offer", "os", "zone"]);
    assert.equal(opts?.deleteBeforeReplace, true, "the IPAM address moves to the new server");

    const generation = (pool: Record<string, unknown>) =>
      elasticMetalGeneration({ zone: "fr-par-2", offer: "EM-B220E-NVME", os: "ubuntu_jammy", ...pool });
    const tokenName = (r: Recorded) => ofType(r.resources, TOKEN)[0].name;
    assert.ok(tokenName(base).includes(generation({})));
    for (const change of [{ offer: "EM-I220E-NVME" }, { os: "ubuntu_noble" }, { zone: "fr-par-1" }]) {
      const changed = await runPool(spec(change));
      const server = plain(ofType(changed.resources, SERVER)[0].inputs);
      const key = Object.keys(change)[0];
      if (key === "zone") assert.equal(server.zone, "fr-par-1");
      else assert.notEqual(server[key], plain(ofType(base.resources, SERVER)[0].inputs)[key]);
      assert.notEqual(tokenName(changed), tokenName(base), `${key} change gets a fresh token`);
    }
    const relabelled = await runPool(spec({ labels: { "example.com/tier": "cache" } }));
    assert.equal(tokenName(relabelled), tokenName(base));
  });

  it("with a kubeconfig: drains and removes the Node with the member and the local PVCs with the server (localStorageClass)", async () => {
    const kubeconfig = tokenKubeconfig("abc");
    const { resources } = await runPool(spec({ replicas: 2, localStorageClass: "scw-local-nvme" }), { kubeconfig });
    const pvcRemovals = resources.filter((r) => r.name.endsWith("-local-pvcs"));
    const nodeRemovals = resources.filter((r) => r.name.endsWith("-node-removal"));
    assert.equal(pvcRemovals.length, 2);
    assert.deepEqual(
      nodeRemovals.map((r) => plain(r.inputs).nodeName),
      ["example-kura-scw-fr-par-0", "example-kura-scw-fr-par-1"],
    );
    for (const [i, removal] of pvcRemovals.entries()) {
      const server = byName(resources, `example-kura-kura-scw-fr-par-${i}`);
      const inputs = plain(removal.inputs);
      assert.equal(inputs.nodeName, `example-kura-scw-fr-par-${i}`);
      assert.equal(inputs.storageClass, "scw-local-nvme");
      assert.equal(inputs.serverId, server.id, "a replaced server is a departed node");
      assert.equal(removal.type, "nodefleet:kubernetes:NodeLocalPvcRemoval", "a new member's removal is the plugin's");
      assert.deepEqual(Object.keys(removal.inputs).sort(), ["nodeName", "serverId", "storageClass"], "no credentials per member");
      assert.match(String(removal.provider), /pulumi:providers:nodefleet::example-kura-cluster-access::/);
    }
    assert.ok(nodeRemovals.every((r) => r.type === "nodefleet:kubernetes:NodeRemoval"));
    const removalDrains = resources.filter((r) => r.name.endsWith("-removal-drain"));
    assert.deepEqual(
      removalDrains.map((r) => [r.type, plain(r.inputs)]),
      [0, 1].map((i) => ["nodefleet:kubernetes:NodeDrain", { nodeName: `example-kura-scw-fr-par-${i}`, timeoutSeconds: 600 }]),
      "a scale-down drains each removed member's Node first (the default drain timeout)",
    );
    // The credentials sit once, in the pool's provider, as a secret.
    const providers = ofType(resources, "pulumi:providers:nodefleet");
    assert.deepEqual(
      providers.map((p) => p.name),
      ["example-kura-cluster-access"],
    );
    assert.ok(isWrappedSecret(providers[0]!.inputs.credentials), "credentials stay secret");
    assert.equal(JSON.parse(String(plain({ c: providers[0]!.inputs.credentials }).c)).token, "abc");
    const without = await runPool(spec({ replicas: 2 }), { kubeconfig });
    assert.equal(without.resources.filter((r) => r.name.endsWith("-local-pvcs")).length, 0);
    const rendered = await runPool(spec({ replicas: 2, localStorageClass: "scw-local-nvme" }));
    assert.equal(
      rendered.resources.filter((r) => /-(local-pvcs|node-removal|removal-drain)$/.test(r.name)).length,
      0,
      "nothing to remove with",
    );
  });

  it("never shows the bootstrap token outside secrets", async () => {
    for (const pool of [{ os: "ubuntu_jammy" }, { os: "ubuntu_noble", ...CLOUD_INIT_OFFER }]) {
      for (const cluster of [{}, KUBEADM]) {
        const { resources } = await runPool(spec(pool, cluster));
        assert.deepEqual(
          ofType(resources, "random:index/randomString:RandomString").filter((r) => r.name.endsWith("-secret")),
          [],
          "no token secret as a RandomString (its id)",
        );
        const tokens = ofType(resources, TOKEN).map((r) => String(resolveSecrets(r.state.token, true)).split(".")[1]!);
        assert.ok(tokens.length > 0);
        const masked = JSON.stringify(resources.map((r) => resolveSecrets(r.inputs, false)));
        for (const t of tokens) assert.ok(!masked.includes(t), `token secret ${t.slice(0, 3)}... leaked`);
      }
    }
  });

  it("refuses OSes without netplan/apt support, naming the supported ones", () => {
    assert.throws(
      () => bootstrapMethod({ name: "kura", os: "windows_2022", bootstrap: "auto", offer: "EM-A610R-NVME", sshKeyIds: [SSH_KEY_ID] }),
      /not supported.*ubuntu_noble/,
    );
  });

  it("no SSH command ignores changes to its connection or script: a replaced server is always the one dialled", async () => {
    for (const pool of [{}, CLOUD_INIT_OFFER]) {
      for (const cluster of [{}, KUBEADM]) {
        const { resources, options } = await runPool(spec(pool, cluster), { sshPrivateKey: SSH_KEY });
        const commands = ofType(resources, REMOTE);
        assert.ok(commands.length >= 2);
        for (const c of commands) {
          assert.deepEqual(options.get(c.name)?.ignoreChanges ?? [], [], `${c.name} ignores nothing`);
          const server = ofType(resources, SERVER)[0];
          assert.ok((c.inputs.triggers as unknown[]).includes(server.id), `${c.name} is replaced with the server`);
        }
      }
    }
  });

  it("labels and taints reach the running Node through the API (kubeconfig given); versions re-run the join; neither replaces the server", async () => {
    const kubeconfig = tokenKubeconfig("abc");
    const base = await runPool(spec({}), { kubeconfig });
    const metadata = byName(base.resources, "-node-metadata");
    const inputs = plain<{ nodeName: string; labels: Record<string, string>; taints: unknown[] }>(metadata.inputs);
    const ip = ofType(base.resources, IPAM_IP)[0];
    assert.equal(inputs.nodeName, "example-kura-scw-fr-par-0");
    assert.equal(inputs.labels[PRIVATE_IPV4_LABEL], ip.state.address);
    assert.equal(inputs.labels["nodefleet.io/pool"], "kura-scw-fr-par");
    assert.deepEqual(inputs.taints, [{ key: "tuist.dev/runner-cache", value: "true", effect: "NoSchedule" }]);
    assert.equal(metadata.type, "nodefleet:kubernetes:NodeMetadata");
    assert.equal(metadata.inputs.credentials, undefined, "the credentials are the pool provider's, not the member's");
    assert.match(String(metadata.provider), /pulumi:providers:nodefleet::example-kura-cluster-access::/);
    assert.deepEqual(base.options.get(metadata.name)?.dependsOn !== undefined, true);

    const relabelled = await runPool(spec({ labels: { "example.com/tier": "cache" }, taints: [] }), { kubeconfig });
    const relabelledInputs = plain<{ labels: Record<string, string>; taints: unknown[] }>(
      byName(relabelled.resources, "-node-metadata").inputs,
    );
    assert.equal(relabelledInputs.labels["example.com/tier"], "cache");
    assert.deepEqual(relabelledInputs.taints, []);
    const serverOf = (r: Recorded) => plain(ofType(r.resources, SERVER)[0].inputs);
    assert.deepEqual(serverOf(relabelled), serverOf(base), "a label or taint change keeps the server");
    assert.deepEqual(
      byName(relabelled.resources, "-join").inputs.triggers,
      byName(base.resources, "-join").inputs.triggers,
      "and does not re-run the join, which cannot relabel",
    );

    const upgraded = await runPool(spec({}, { k0sVersion: "v1.33.5+k0s.0" }), { kubeconfig });
    assert.deepEqual(serverOf(upgraded), serverOf(base), "a version change keeps the server");
    assert.notDeepEqual(
      byName(upgraded.resources, "-join").inputs.triggers,
      byName(base.resources, "-join").inputs.triggers,
      "the join re-runs and upgrades in place",
    );
    assert.match(String(plain({ s: byName(upgraded.resources, "-join").inputs.stdin }).s), /k0s_version='v1\.33\.5\+k0s\.0'/);

    const rendered = await runPool(spec({}));
    assert.equal(rendered.resources.filter((r) => r.name.endsWith("-node-metadata")).length, 0, "no kubeconfig (render): no Node patch");
  });

  it("an IPAM address moving to another private network is replaced (the provider would ignore it)", async () => {
    assert.deepEqual([...IPAM_IP_REPLACE_ON_CHANGES], ["sources"]);
    const base = await runPool(spec());
    assert.deepEqual(base.options.get(ofType(base.resources, IPAM_IP)[0].name)?.replaceOnChanges, ["sources"]);
  });

  it("the example stack declares its Elastic Metal pool next to the Hetzner Cloud pools, in the Fleet", async () => {
    const { resources, outputs } = await runFleetProgramUnderMocks(stackFileConfig("example"));
    assert.deepEqual(
      ofType(resources, "nodefleet:scaleway:ElasticMetalNodePool").map((p) => p.name),
      ["example-kura-scw-fr-par"],
    );
    assert.equal(ofType(resources, SERVER).length, 1);
    assert.ok(ofType(resources, "hcloud:index/server:Server").length > 0);
    const join = byName(resources, "-join");
    assert.match(String(plain({ s: join.inputs.stdin }).s), /--taints 'tuist\.dev\/runner-cache=true:NoSchedule'/);
    const nodes = (outputs as unknown as { nodes: Array<Record<string, unknown>> }).nodes;
    const em = nodes.find((n) => n.pool === "kura-scw-fr-par");
    assert.ok(em, "the fleet reports the Elastic Metal node");
    assert.equal(em.providerID, "nodefleet:///example/kura-scw-fr-par-0");
    assert.equal(em.bootstrap, "ssh");
    assert.match(String(em.privateIpv4), /^172\.16\./);
  });
});
