/**
 * The simulated cloud as Pulumi's mock runtime sees it: `newResource` decides each registered
 * resource's step against the stack's previous state (stepDiff.ts), applies it (journalled before
 * the run moves on), and answers with persisted ids and outputs for existing resources and fresh
 * deterministic ones for new ones; `call` answers provider look-ups (network, firewall, offers)
 * from the simulated cloud. Fault injection (create failures, sold-out types, a crash) lives here.
 */
import type * as pulumi from "@pulumi/pulumi";
import { parseIpv4Cidr, hostAddress } from "../../components/shared/cidr";
import { sha256Hex } from "../../components/shared/canonicalJson";
import { computedOutputs } from "../mocks/deterministicOutputs";
import type { MockResourceArgsWithOptions } from "../mocks/runUnderMocks";
import { hashNumber, numericId } from "../mocks/seededValues";
import { type MockPrivateNetwork, mockPrivateNetworkId, mockUuid, scalewayLookup } from "../mocks/scalewayLookups";
import type { ResourceStep } from "../engine/stackEngine";
import { AddressPool } from "./addressPool";
import { SERVER_TYPES, type SimResource, type StackState, type StackStateFile, hashSecrets, matchesSelector } from "./simulatedCloud";
import { overQuota, type SimulationKnobs } from "./simulationKnobs";
import { decideStep, planDeletes } from "./stepDiff";

export interface SimulatedRunContext {
  readonly stack: string;
  readonly project: string;
  readonly mode: "up" | "preview";
  readonly knobs: SimulationKnobs;
  /** The stack's state; mutated as steps apply (up only). */
  readonly state: StackState;
  /** Where applied steps are journalled (up only). */
  readonly journal?: StackStateFile;
  /** Resources of other stacks and orphans: look-ups and taken addresses. */
  readonly others: readonly SimResource[];
  /** The fleet's configured private subnet, used when a server joins a network the cloud has no subnet for. */
  readonly defaultSubnet?: string;
  readonly onStep: (step: ResourceStep, count: number) => void;
  /** Called when NODEFLEET_SIM_CRASH_AFTER_STEPS is reached; must not return. */
  readonly crash: (applied: number) => void;
  readonly now: () => number;
}

const DEFAULT_PRIVATE_SUBNET = "10.0.1.0/24";
const DEFAULT_SCALEWAY_SUBNET = "172.16.0.0/22";

/** Data-source tokens answered from the simulated cloud's resources of the given type. */
const LOOKUPS: Readonly<Record<string, string>> = {
  "hcloud:index/getNetwork:getNetwork": "hcloud:index/network:Network",
  "hcloud:index/getFirewall:getFirewall": "hcloud:index/firewall:Firewall",
  "hcloud:index/getPlacementGroup:getPlacementGroup": "hcloud:index/placementGroup:PlacementGroup",
  "hcloud:index/getSshKey:getSshKey": "hcloud:index/sshKey:SshKey",
  "hcloud:index/getServer:getServer": "hcloud:index/server:Server",
};

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function leaves(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => leaves(v, out));
  else if (typeof value === "object" && value !== null) Object.values(value).forEach((v) => leaves(v, out));
  else if (typeof value === "string" || typeof value === "number") out.push(String(value));
  return out;
}

/** Every address a resource holds, so new allocations avoid them. */
function addressesOf(resource: Pick<SimResource, "outputs">): string[] {
  const o = resource.outputs;
  const found: string[] = [];
  if (typeof o.ipv4Address === "string") found.push(o.ipv4Address);
  if (typeof o.ip === "string") found.push(o.ip);
  if (typeof o.privateIpv4 === "string") found.push(o.privateIpv4);
  if (typeof o.address === "string") found.push(o.address.split("/")[0]);
  for (const n of Array.isArray(o.networks) ? o.networks : []) if (typeof asRecord(n).ip === "string") found.push(asRecord(n).ip as string);
  for (const ip of Array.isArray(o.ips) ? o.ips : [])
    if (typeof asRecord(ip).address === "string") found.push(asRecord(ip).address as string);
  return found;
}

export class SimulatedProvider {
  readonly steps: ResourceStep[] = [];
  private applied = 0;
  private readonly seen = new Set<string>();
  private readonly failedIds = new Set<string>();
  /** Resources registered in this run (also in preview, where nothing is applied). */
  private readonly current = new Map<string, SimResource>();
  private readonly previous: SimResource[];
  private readonly pool: AddressPool;
  private readonly offerNames = new Map<string, string>();

  constructor(private readonly ctx: SimulatedRunContext) {
    this.previous = [...ctx.state.resources.values()];
    this.pool = new AddressPool([...ctx.others, ...this.previous].flatMap(addressesOf));
    if (ctx.mode === "up" && ctx.journal) {
      ctx.state.runs += 1;
      ctx.journal.append({ t: "runs", runs: ctx.state.runs });
    }
  }

  get appliedSteps(): number {
    return this.applied;
  }

  urnOf(type: string, name: string): string {
    return `urn:pulumi:${this.ctx.stack}::${this.ctx.project}::${type}::${name}`;
  }

  newResource(args: MockResourceArgsWithOptions): { id: string | undefined; state: Record<string, unknown> } {
    const custom = args.custom !== false;
    if (args.id && custom) return this.read(args);
    const urn = this.urnOf(args.type, args.name);
    if (this.seen.has(urn)) throw new Error(`Duplicate resource URN '${urn}'; try giving it a unique name`);
    this.seen.add(urn);
    const prev = this.ctx.state.resources.get(urn);
    // As the real engine does: an ignored input keeps the state's value (top-level keys only).
    const ignored = prev ? (args.ignoreChanges ?? []).filter((key) => !key.includes(".") && !key.includes("[")) : [];
    const liveInputs = asRecord(args.inputs);
    const inputs = hashSecrets(liveInputs) as Record<string, unknown>;
    for (const key of ignored) {
      if (prev && key in prev.inputs) inputs[key] = prev.inputs[key];
      else delete inputs[key];
    }
    const decision = decideStep(prev && { type: prev.type, inputs: prev.inputs }, { type: args.type, inputs });
    const base: ResourceStep = {
      op: decision.op,
      urn,
      type: args.type,
      name: args.name,
      keys: decision.keys,
      ...(decision.op === "replace" ? { replaceKeys: decision.replaceKeys } : {}),
    };

    let error =
      this.dependencyFailure(liveInputs) ??
      (this.ctx.mode === "up" && custom && (decision.op === "create" || decision.op === "replace")
        ? this.createFailure(args, urn)
        : undefined);
    let resource: SimResource | undefined;
    if (!error) {
      try {
        resource = this.apply(args, urn, custom, inputs, decision.op, prev);
      } catch (failure) {
        // e.g. a full subnet: the provider call fails for this resource only, as at a real cloud.
        error = `[simulated] ${(failure as Error).message}`;
      }
    }
    if (error || !resource) {
      error ??= "[simulated] failed";
      this.record({ ...base, error });
      if (prev && decision.op === "replace") return { id: prev.id, state: { ...liveInputs, ...prev.outputs } };
      const sentinel = this.freshId(args.type, args.name, liveInputs, (prev?.generation ?? 0) + 1000);
      if (sentinel) this.failedIds.add(sentinel);
      return { id: sentinel, state: { ...liveInputs } };
    }

    this.current.set(urn, resource);
    if (decision.op !== "same" && this.ctx.mode === "up") {
      this.ctx.state.resources.set(urn, resource);
      this.ctx.journal?.append({ t: "put", r: resource });
      this.applied += 1;
    }
    this.record(base);
    this.maybeCrash();
    return { id: resource.id, state: { ...liveInputs, ...resource.outputs } };
  }

  /** The resource as it is after the step (not yet recorded anywhere). */
  private apply(
    args: pulumi.runtime.MockResourceArgs,
    urn: string,
    custom: boolean,
    inputs: Record<string, unknown>,
    op: ResourceStep["op"],
    prev: SimResource | undefined,
  ): SimResource {
    const liveInputs = asRecord(args.inputs);
    const now = new Date(this.ctx.now()).toISOString();
    let resource: SimResource;
    if (prev && op === "same") {
      resource = prev;
    } else if (prev && op === "update") {
      resource = { ...prev, inputs, outputs: this.computeOutputs(args, urn, prev.id, prev.generation, prev.outputs), updatedAt: now };
    } else {
      const generation = prev ? prev.generation + 1 : 0;
      const id = custom ? this.freshId(args.type, args.name, liveInputs, generation) : undefined;
      resource = {
        urn,
        type: args.type,
        name: args.name,
        custom,
        id,
        inputs,
        outputs: this.computeOutputs(args, urn, id, generation, undefined),
        createdAt: now,
        updatedAt: now,
        runningAt: SERVER_TYPES[args.type] ? new Date(this.ctx.now() + this.ctx.knobs.bootDelayMs).toISOString() : undefined,
        generation,
      };
    }
    return resource;
  }

  /** Deletes what the program no longer declares and records the outputs; call after the program finished. */
  finish(outputs: Record<string, unknown>): void {
    for (const gone of planDeletes(this.previous, this.seen)) {
      if (this.ctx.mode === "up") {
        this.ctx.state.resources.delete(gone.urn);
        this.ctx.journal?.append({ t: "del", urn: gone.urn });
        this.applied += 1;
      }
      this.record({ op: "delete", urn: gone.urn, type: gone.type, name: gone.name, keys: [] });
      this.maybeCrash();
    }
    if (this.ctx.mode === "up" && this.ctx.journal) {
      this.ctx.state.outputs = hashSecrets(outputs) as Record<string, unknown>;
      this.ctx.journal.append({ t: "outputs", outputs: this.ctx.state.outputs });
    }
  }

  call(args: pulumi.runtime.MockCallArgs): Record<string, unknown> {
    const inputs = asRecord(args.inputs);
    const lookupType = LOOKUPS[args.token];
    if (lookupType) return this.lookup(lookupType, inputs, args.token);
    const answer = scalewayLookup(args, this.privateNetworks());
    if (!answer) return inputs;
    if (args.token === "scaleway:elasticmetal/getOffer:getOffer") {
      const name = String(answer.name);
      this.offerNames.set(String(answer.offerId), name);
      this.offerNames.set(String(answer.id), name);
      return { ...answer, stock: this.ctx.knobs.outOfStock.includes(name) ? "empty" : "available" };
    }
    return answer;
  }

  /** Private networks that exist in the simulated cloud, for `getPrivateNetwork` look-ups by name. */
  private privateNetworks(): MockPrivateNetwork[] {
    const found: MockPrivateNetwork[] = [];
    for (const r of this.knownResources()) {
      if (r.type !== "scaleway:network/privateNetwork:PrivateNetwork" || typeof r.inputs.name !== "string") continue;
      const subnet = asRecord(r.outputs.ipv4Subnet).subnet;
      found.push({
        name: r.inputs.name,
        region: typeof r.inputs.region === "string" ? r.inputs.region : "fr-par",
        subnet: typeof subnet === "string" ? subnet : DEFAULT_SCALEWAY_SUBNET,
        tags: Array.isArray(r.inputs.tags) ? r.inputs.tags.map(String) : [],
      });
    }
    return found;
  }

  private record(step: ResourceStep): void {
    this.steps.push(step);
    this.ctx.onStep(step, this.steps.length);
  }

  private maybeCrash(): void {
    const limit = this.ctx.knobs.crashAfterSteps;
    if (this.ctx.mode === "up" && limit !== undefined && this.applied >= limit) this.ctx.crash(this.applied);
  }

  private read(args: pulumi.runtime.MockResourceArgs): { id: string | undefined; state: Record<string, unknown> } {
    const found = this.findKnown((r) => r.type === args.type && r.id === args.id);
    if (!found) throw new Error(`simulated cloud: ${args.type} with id ${args.id} not found`);
    return { id: found.id, state: { ...found.inputs, ...found.outputs } };
  }

  /** This run's view first, then the stack's recorded state, then other stacks and orphans. */
  private *knownResources(): Generator<SimResource> {
    yield* this.current.values();
    for (const [urn, r] of this.ctx.state.resources) if (!this.current.has(urn)) yield r;
    yield* this.ctx.others;
  }

  private findKnown(predicate: (r: SimResource) => boolean): SimResource | undefined {
    for (const r of this.knownResources()) if (predicate(r)) return r;
    return undefined;
  }

  private lookup(type: string, inputs: Record<string, unknown>, token: string): Record<string, unknown> {
    const match = this.findKnown((r) => {
      if (r.type !== type || !r.id) return false;
      if (inputs.id !== undefined && inputs.id !== null && String(inputs.id) !== r.id) return false;
      if (typeof inputs.name === "string" && r.inputs.name !== inputs.name) return false;
      // As the provider: with a name, with_selector is not consulted.
      if (
        typeof inputs.name !== "string" &&
        typeof inputs.withSelector === "string" &&
        !matchesSelector(asRecord(r.inputs.labels) as Record<string, string>, inputs.withSelector)
      )
        return false;
      return true;
    });
    if (!match) throw new Error(`simulated cloud: ${token} found nothing for ${JSON.stringify(inputs)}`);
    const id = type.startsWith("hcloud:") ? Number(match.id) : match.id;
    return { ...match.inputs, ...match.outputs, ...inputs, id, name: match.inputs.name };
  }

  private dependencyFailure(inputs: Record<string, unknown>): string | undefined {
    if (this.failedIds.size === 0) return undefined;
    const failed = leaves(inputs).find((v) => this.failedIds.has(v));
    return failed ? `skipped: it depends on a resource that failed to create (id ${failed})` : undefined;
  }

  private createFailure(args: pulumi.runtime.MockResourceArgs, urn: string): string | undefined {
    const provider = SERVER_TYPES[args.type];
    if (!provider) return undefined;
    const inputs = asRecord(args.inputs);
    const kind = provider === "hcloud" ? String(inputs.serverType) : (this.offerNames.get(String(inputs.offer)) ?? String(inputs.offer));
    const where = String(inputs.location ?? inputs.datacenter ?? inputs.zone ?? "its location");
    const stock = this.ctx.knobs.outOfStock;
    // `<type>@<location>`: sold out in that location only (a multi-location pool's fallback).
    const soldOutHere = provider === "hcloud" && stock.includes(`${kind}@${where}`);
    if (stock.includes(kind) || soldOutHere || (provider === "scaleway" && stock.includes(String(inputs.offer)))) {
      return `[simulated] creating server ${args.name}: ${kind} is sold out in ${where}: error during placement (resource_unavailable)`;
    }
    if (overQuota(this.ctx.knobs.quotaExceeded, kind)) {
      return `[simulated] creating server ${args.name}: server limit exceeded for this project (resource_limit_exceeded)`;
    }
    const rate = this.ctx.knobs.failCreateRate;
    if (rate > 0 && hashNumber(`${this.ctx.knobs.seed}/${this.ctx.stack}/${this.ctx.state.runs}/${urn}`, 1_000_000) < rate * 1_000_000) {
      return `[simulated] creating server ${args.name}: create_server action failed (NODEFLEET_SIM_FAIL_CREATE_RATE=${rate})`;
    }
    return undefined;
  }

  private freshId(type: string, name: string, inputs: Record<string, unknown>, generation: number): string | undefined {
    const seed = `${this.ctx.stack}/${type}/${name}#${generation}`;
    if (type === "hcloud:index/networkSubnet:NetworkSubnet") return `${inputs.networkId}-${inputs.ipRange}`;
    if (type === "hcloud:index/serverNetwork:ServerNetwork")
      return `${inputs.serverId}-${inputs.networkId ?? String(inputs.subnetId).split("-")[0]}`;
    if (type.startsWith("hcloud:")) return numericId(seed);
    if (type === "scaleway:network/privateNetwork:PrivateNetwork" && typeof inputs.name === "string") {
      // The id getPrivateNetwork reports for that name, so look-ups and creations agree.
      return mockPrivateNetworkId(typeof inputs.region === "string" ? inputs.region : "fr-par", inputs.name);
    }
    if (type.startsWith("scaleway:")) {
      const scope = typeof inputs.zone === "string" ? inputs.zone : typeof inputs.region === "string" ? inputs.region : undefined;
      return scope ? `${scope}/${mockUuid(seed)}` : mockUuid(seed);
    }
    return `${name}-${sha256Hex(seed).slice(0, 8)}`;
  }

  /** The private range servers joining this hcloud network get addresses from. */
  private subnetOf(networkId: unknown): string {
    const subnet = this.findKnown(
      (r) =>
        r.type === "hcloud:index/networkSubnet:NetworkSubnet" &&
        String(r.inputs.networkId) === String(networkId) &&
        typeof r.inputs.ipRange === "string",
    );
    return (subnet?.inputs.ipRange as string | undefined) ?? this.ctx.defaultSubnet ?? DEFAULT_PRIVATE_SUBNET;
  }

  private scalewaySubnetOf(privateNetworkId: unknown): string {
    const pn = this.findKnown((r) => r.type === "scaleway:network/privateNetwork:PrivateNetwork" && r.id === String(privateNetworkId));
    const subnet = asRecord(pn?.outputs.ipv4Subnet).subnet ?? asRecord(pn?.inputs.ipv4Subnet).subnet;
    return typeof subnet === "string" ? subnet : DEFAULT_SCALEWAY_SUBNET;
  }

  private computeOutputs(
    args: pulumi.runtime.MockResourceArgs,
    urn: string,
    id: string | undefined,
    generation: number,
    prev: Record<string, unknown> | undefined,
  ): Record<string, unknown> {
    const inputs = asRecord(args.inputs);
    const key = `${urn}#${generation}`;
    // The shared mock outputs (random results, time stamps, Elastic Metal shapes, host keys), salted by
    // generation so a replacement gets new values; addresses are then allocated without collisions.
    const salted = { ...args, name: generation === 0 ? args.name : `${args.name}#${generation}` };
    const computed = computedOutputs(salted, id ?? "");
    switch (args.type) {
      case "hcloud:index/server:Server": {
        const ipv4Address = typeof prev?.ipv4Address === "string" ? prev.ipv4Address : this.pool.public(key);
        const prevNetworks = Array.isArray(prev?.networks) ? prev.networks.map(asRecord) : [];
        const networks = (Array.isArray(inputs.networks) ? inputs.networks : []).map((raw) => {
          const n = asRecord(raw);
          const kept = prevNetworks.find((p) => String(p.networkId) === String(n.networkId));
          const ip =
            typeof n.ip === "string" && n.ip !== ""
              ? n.ip
              : typeof kept?.ip === "string"
                ? kept.ip
                : this.pool.private(this.subnetOf(n.networkId), `${key}/${n.networkId}`);
          this.pool.markUsed(ip);
          return {
            ...n,
            ip,
            macAddress: `86:00:00:${sha256Hex(`${key}/${n.networkId}`)
              .slice(0, 6)
              .replace(/(..)(..)(..)/, "$1:$2:$3")}`,
          };
        });
        return {
          ...computed,
          ipv4Address,
          ipv6Address: `2001:db8:${hashNumber(key, 0xffff).toString(16)}::1`,
          ipv6Network: `2001:db8:${hashNumber(key, 0xffff).toString(16)}::/64`,
          status: "running",
          ...(networks.length > 0 ? { networks, privateIpv4: networks[0].ip } : {}),
        };
      }
      case "hcloud:index/serverNetwork:ServerNetwork": {
        const networkId = inputs.networkId ?? String(inputs.subnetId ?? "").split("-")[0];
        const fromSubnet = typeof inputs.subnetId === "string" ? inputs.subnetId.slice(inputs.subnetId.indexOf("-") + 1) : undefined;
        const ip =
          typeof inputs.ip === "string" && inputs.ip !== ""
            ? inputs.ip
            : typeof prev?.ip === "string"
              ? prev.ip
              : this.pool.private(fromSubnet ?? this.subnetOf(networkId), key);
        return {
          ip,
          networkId,
          macAddress: `86:00:01:${sha256Hex(key)
            .slice(0, 6)
            .replace(/(..)(..)(..)/, "$1:$2:$3")}`,
        };
      }
      case "hcloud:index/networkSubnet:NetworkSubnet": {
        const cidr = typeof inputs.ipRange === "string" ? parseIpv4Cidr(inputs.ipRange) : undefined;
        return cidr ? { gateway: hostAddress(cidr, 1) } : {};
      }
      case "hcloud:index/placementGroup:PlacementGroup":
        return { servers: [] };
      case "scaleway:elasticmetal/server:Server": {
        const kept = Array.isArray(prev?.ips) ? asRecord(prev.ips[0]).address : undefined;
        const address = typeof kept === "string" ? kept : this.pool.public(key);
        const ip = { id: mockUuid(`${key}/ip`), address, version: "IPv4", reverse: "" };
        return { ...computed, ips: [ip], ipv4s: [ip], offerName: this.offerNames.get(String(inputs.offer)) ?? inputs.offer };
      }
      case "scaleway:ipam/ip:Ip": {
        const kept =
          typeof inputs.address === "string" ? inputs.address.split("/")[0] : typeof prev?.address === "string" ? prev.address : undefined;
        const source = asRecord(Array.isArray(inputs.sources) ? inputs.sources[0] : undefined);
        const subnet = this.scalewaySubnetOf(source.privateNetworkId);
        const address = kept ?? this.pool.private(subnet, key);
        return { address, addressCidr: `${address}/${subnet.split("/")[1]}` };
      }
      default:
        return computed;
    }
  }
}
