/**
 * What nodefleet knows about Elastic Metal operating systems, by the short names the pool config
 * uses. The provider's `getOs` returns only id, name and version, not whether the image runs
 * cloud-init, so that capability is committed here. Only images known to ship cloud-init with
 * Scaleway's datasource are marked; everything else takes the SSH self-join (a pool can force
 * either with `bootstrap`).
 */
export interface ElasticMetalOs {
  /** `getOs` name argument (Scaleway's OS name). */
  readonly name: string;
  /** `getOs` version argument, exactly as Scaleway lists it (`scw baremetal os list`). */
  readonly version: string;
  /** The image runs cloud-init on first boot with the server's `cloudInit` as user data. */
  readonly cloudInit: boolean;
  /** The user the installer creates with the server's SSH keys. */
  readonly sshUser: string;
  /** netplan manages networking (the VLAN sub-interface is written as a netplan file). */
  readonly netplan: boolean;
}

export const ELASTIC_METAL_OSES: Readonly<Record<string, ElasticMetalOs>> = {
  ubuntu_noble: { name: "Ubuntu", version: "24.04 LTS (Noble Numbat)", cloudInit: true, sshUser: "ubuntu", netplan: true },
  ubuntu_jammy: { name: "Ubuntu", version: "22.04 LTS (Jammy Jellyfish)", cloudInit: false, sshUser: "ubuntu", netplan: true },
  ubuntu_focal: { name: "Ubuntu", version: "20.04 LTS (Focal Fossa)", cloudInit: false, sshUser: "ubuntu", netplan: true },
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
