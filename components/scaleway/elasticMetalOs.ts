/**
 * What nodefleet knows about Elastic Metal operating systems, by the short names the pool config
 * uses. Whether cloud-init runs is a property of the offer, not the OS (elasticMetalOffers.ts).
 */
export interface ElasticMetalOs {
  /** `getOs` name argument (Scaleway's OS name). */
  readonly name: string;
  /** `getOs` version argument, exactly as Scaleway lists it (`scw baremetal os list`). */
  readonly version: string;
  /** The user the installer creates with the server's SSH keys. */
  readonly sshUser: string;
  /** netplan manages networking (the VLAN sub-interface is written as a netplan file). */
  readonly netplan: boolean;
}

const ELASTIC_METAL_OSES: Readonly<Record<string, ElasticMetalOs>> = {
  ubuntu_noble: { name: "Ubuntu", version: "24.04 LTS (Noble Numbat)", sshUser: "ubuntu", netplan: true },
  ubuntu_jammy: { name: "Ubuntu", version: "22.04 LTS (Jammy Jellyfish)", sshUser: "ubuntu", netplan: true },
  ubuntu_focal: { name: "Ubuntu", version: "20.04 LTS (Focal Fossa)", sshUser: "ubuntu", netplan: true },
};

export function elasticMetalOs(os: string): ElasticMetalOs {
  const found = ELASTIC_METAL_OSES[os];
  if (!found) {
    throw new Error(
      `os ${JSON.stringify(os)} is not supported for Elastic Metal pools; use one of ${Object.keys(ELASTIC_METAL_OSES).join(", ")} (the self-join needs netplan and apt)`,
    );
  }
  return found;
}
