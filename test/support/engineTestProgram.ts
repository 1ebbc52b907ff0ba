/**
 * A tiny Pulumi program for the engine contract tests, independent of the real fleet program:
 * a network with a subnet, and per member (config `enginetest:members`) an hcloud server with
 * ownership labels, a random suffix and a component grouping them.
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";

export interface TestMember {
  readonly name: string;
  readonly serverType: string;
  /** Changing it replaces the server (hcloud userData is ForceNew). */
  readonly userData?: string;
  /** Local mode: the stand-in server takes this long to create (a window to crash the engine in). */
  readonly createDelayMs?: number;
  /** Local mode: the stand-in server's create appends `start <ms>` and `end <ms>` lines to this file (how many ran at once). */
  readonly createTrace?: string;
  /** Declare the server and its suffix with `ignoreChanges` on user data (as a rollout keeps an old server). */
  readonly keepUserData?: boolean;
}

export interface TestProgramArgs {
  /** Namespaces the resources so several tests can share one data directory. */
  readonly prefix?: string;
  /**
   * `hcloud` (default): hcloud resources, for the simulated engine. `local`: the same shape with a
   * dynamic-provider "server" that needs no cloud, for the automation engine with a real pulumi CLI.
   */
  readonly mode?: "hcloud" | "local";
}

/** Properties whose change replaces a local test server, mirroring hcloud's ForceNew ones. */
const LOCAL_REPLACE_KEYS = ["userData", "image", "location"];

/** A cloud-free stand-in for a server: fails like a sold-out type when its serverType contains "soldout". */
const localServerProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs) {
    const trace = (event: string) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- serialized into the state: built-ins only, required at run time
      if (inputs.createTrace) require("node:fs").appendFileSync(String(inputs.createTrace), `${event} ${Date.now()}\n`);
    };
    trace("start");
    if (inputs.createDelayMs) await new Promise((resolve) => setTimeout(resolve, Number(inputs.createDelayMs)));
    trace("end");
    if (String(inputs.serverType).includes("soldout")) {
      throw new Error(`server type ${inputs.serverType} is sold out: error during placement (resource_unavailable)`);
    }
    return { id: `local-${inputs.name}`, outs: { ...inputs, ipv4Address: "203.0.113.200" } };
  },
  async diff(_id, olds, news) {
    const keys = [...new Set([...Object.keys(olds), ...Object.keys(news)])].filter(
      (k) => k !== "ipv4Address" && JSON.stringify(olds[k]) !== JSON.stringify(news[k]),
    );
    return { changes: keys.length > 0, replaces: keys.filter((k) => LOCAL_REPLACE_KEYS.includes(k)) };
  },
  async update(_id, olds, news) {
    return { outs: { ...news, ipv4Address: olds.ipv4Address } };
  },
};

class LocalServer extends pulumi.dynamic.Resource {
  declare readonly ipv4Address: pulumi.Output<string>;
  declare readonly name: pulumi.Output<string>;

  constructor(name: string, props: Record<string, pulumi.Input<unknown>>, opts?: pulumi.CustomResourceOptions) {
    super(localServerProvider, name, { ...props, ipv4Address: undefined }, opts);
  }
}

class TestMemberComponent extends pulumi.ComponentResource {
  readonly server: {
    readonly id: pulumi.Output<string>;
    readonly name: pulumi.Output<string>;
    readonly ipv4Address: pulumi.Output<string>;
  };

  constructor(
    name: string,
    args: { member: TestMember; networkId?: pulumi.Input<number>; cluster: string; mode: "hcloud" | "local" },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("enginetest:index:Member", name, {}, opts);
    const userData = args.member.userData ?? "#cloud-config\n{}\n";
    // keepers: a new user data also draws a new suffix (random resources replace on any input change).
    const keep = args.member.keepUserData === true;
    const suffix = new random.RandomString(
      `${name}-suffix`,
      { length: 6, special: false, upper: false, keepers: { userData } },
      { parent: this, ...(keep ? { ignoreChanges: ["keepers"] } : {}) },
    );
    const serverOptions = { parent: this, ...(keep ? { ignoreChanges: ["userData"] } : {}) };
    const common = {
      name: pulumi.interpolate`${args.cluster}-${args.member.name}-${suffix.result}`,
      serverType: args.member.serverType,
      image: "ubuntu-24.04",
      location: "hel1",
      userData,
      labels: { "nodefleet.io/cluster": args.cluster, "nodefleet.io/member": args.member.name },
    };
    this.server =
      args.mode === "local"
        ? new LocalServer(
            `${name}-server`,
            {
              ...common,
              ...(args.member.createDelayMs ? { createDelayMs: args.member.createDelayMs } : {}),
              ...(args.member.createTrace ? { createTrace: args.member.createTrace } : {}),
            },
            serverOptions,
          )
        : new hcloud.Server(`${name}-server`, { ...common, networks: [{ networkId: args.networkId! }] }, serverOptions);
    this.registerOutputs({ serverId: this.server.id });
  }
}

export function runProgram(args: TestProgramArgs = {}): Record<string, pulumi.Output<unknown>> {
  const config = new pulumi.Config("enginetest");
  const members = config.requireObject<TestMember[]>("members");
  const cluster = config.get("cluster") ?? "test";
  const prefix = args.prefix ? `${args.prefix}-` : "";
  if (args.mode === "local") {
    const servers = members.map((member) => new TestMemberComponent(`${prefix}${member.name}`, { member, cluster, mode: "local" }).server);
    // A secret config value reaches the program and its outputs as a secret.
    const token = config.getSecret("token");
    // A program error that quotes a secret (as a kubeconfig parse error might).
    if (config.getBoolean("throwWithToken")) throw new Error(`cannot parse kubeconfig: ${config.require("token")}`);
    return { servers: serverTable(servers), ...(token ? { token } : {}) };
  }
  const network = new hcloud.Network(`${prefix}net`, {
    name: `${prefix}${cluster}`,
    ipRange: "10.0.0.0/16",
    labels: { "nodefleet.io/cluster": cluster },
  });
  const subnet = new hcloud.NetworkSubnet(`${prefix}subnet`, {
    networkId: network.id.apply(Number),
    type: "cloud",
    networkZone: "eu-central",
    // A /24 holds 253 servers; the benchmark's 1000-node fleet sets a wider one.
    ipRange: config.get("subnet") ?? "10.0.1.0/24",
  });
  const servers = members.map(
    (member) =>
      new TestMemberComponent(
        `${prefix}${member.name}`,
        { member, networkId: network.id.apply(Number), cluster, mode: "hcloud" },
        { dependsOn: [subnet] },
      ).server,
  );
  return { networkId: network.id, servers: serverTable(servers) };
}

/** Server name -> {id, ip}: what the contract tests read back as outputs. */
function serverTable(servers: ReadonlyArray<TestMemberComponent["server"]>): pulumi.Output<Record<string, { id: string; ip: string }>> {
  return pulumi
    .all(servers.map((s) => pulumi.all([s.name, s.id, s.ipv4Address])))
    .apply((rows) => Object.fromEntries(rows.map(([name, id, ip]) => [name, { id, ip }])));
}
