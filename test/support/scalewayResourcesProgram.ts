/**
 * A Pulumi program for the Scaleway provider plugin's real-engine test: what the Elastic Metal pool
 * declares (a private network, an IPAM address on it, a server with the Private Network option
 * attached to both) and the four look-ups it makes, shaped by config `scwtest:revision` so that
 * successive runs update in place (revision 2: tags and OS), replace (revision 3: the offer) or run
 * out of a custom timeout (`scwtest:updateTimeout`); revision 0 declares nothing (everything deleted).
 */
import * as scaleway from "@pulumiverse/scaleway";
import * as pulumi from "@pulumi/pulumi";

export const SCW_TEST_ZONE = "fr-par-2";
/** Any UUID: the fake checks the form of SSH key ids, not that the key exists. */
export const SCW_TEST_SSH_KEY = "0b0b7c6e-2f4c-4c56-9a52-3f4c2d0a1e11";
/** The OS each revision installs: a new version reinstalls the server in place. */
export const scwTestOsVersion = (revision: number) => (revision >= 2 ? "22.04 LTS (Jammy Jellyfish)" : "24.04 LTS (Noble Numbat)");
/** The offer each revision orders: a new offer replaces the server. */
const scwTestOffer = (revision: number) => (revision >= 3 ? "EM-A215R-HDD" : "EM-A116X-SSD");

export function runProgram(): Record<string, pulumi.Output<unknown>> {
  const config = new pulumi.Config("scwtest");
  const revision = config.requireNumber("revision");
  if (revision === 0) return {};
  const updateTimeout = config.get("updateTimeout");
  const zone = SCW_TEST_ZONE;
  const region = "fr-par";
  // The name is given lower-case, as the pool's config may: upstream upper-cases it to match.
  const offer = scaleway.elasticmetal.getOfferOutput({ zone, name: scwTestOffer(revision).toLowerCase() });
  const os = scaleway.elasticmetal.getOsOutput({ zone, name: "Ubuntu", version: scwTestOsVersion(revision) });
  const option = scaleway.elasticmetal.getOptionOutput({ zone, name: "Private Network" });
  const tags = ["scwtest", `rev=${Math.min(revision, 2)}`];
  const network = new scaleway.network.PrivateNetwork("pn", { name: "scwtest-pn", region, ipv4Subnet: { subnet: "172.16.8.0/22" }, tags });
  const found = network.name.apply((name) => scaleway.network.getPrivateNetwork({ name, region }));
  const ip = new scaleway.ipam.Ip("ip", { region, sources: [{ privateNetworkId: network.id }], tags });
  const server = new scaleway.elasticmetal.Server(
    "server",
    {
      name: "scwtest-server",
      hostname: "scwtest-server",
      zone,
      offer: offer.apply((o) => o.offerId!),
      os: os.apply((o) => o.osId!),
      sshKeyIds: [SCW_TEST_SSH_KEY],
      options: [{ id: option.apply((o) => o.optionId!) }],
      privateNetworks: [{ id: network.id, ipamIpIds: [ip.id] }],
      tags,
    },
    updateTimeout ? { customTimeouts: { update: updateTimeout } } : {},
  );
  return {
    serverId: server.id,
    offerId: offer.apply((o) => o.offerId),
    offerCores: offer.cpu.coreCount,
    offerName: server.offerName,
    osId: os.apply((o) => o.osId),
    osName: server.osName,
    optionId: option.apply((o) => o.optionId),
    attached: server.privateNetworks.apply((pns) =>
      (pns ?? []).map((pn) => ({ id: pn.id, vlan: pn.vlan, status: pn.status, ipamIpIds: pn.ipamIpIds })),
    ),
    publicIpv4: server.ipv4s.apply((ips) => ips?.[0]?.address),
    networkId: network.id,
    networkSubnet: network.ipv4Subnet.apply((s) => s?.subnet),
    lookedUpNetworkId: found.apply((f) => f.id),
    lookedUpSubnets: found.apply((f) => f.ipv4Subnets.map((s) => s.subnet)),
    ipId: ip.id,
    ipAddress: ip.address,
    ipAddressCidr: ip.addressCidr,
  };
}
