/**
 * The fake Scaleway API's Elastic Metal catalog: offers, operating systems and options, in the
 * shape `GET /baremetal/v1/zones/{zone}/{offers,os,options}` returns them.
 *
 * Every figure is Scaleway's own, as its API answered terraform-provider-scaleway's recorded
 * acceptance tests in fr-par-2 (repository scaleway/terraform-provider-scaleway, file
 * internal/services/baremetal/testdata/action-basic.cassette.yaml at commit d3c07077c8, recorded
 * 2025-12): offer ids, CPU model, cores, threads and MHz, memory bytes, type and MHz, disk bytes and
 * type, hourly price, bandwidths, commercial range, stock, tags (the `cloud-init` tag marks the
 * offers whose installer runs the server's user data), and the OS and option ids and fields. Only
 * the offers nodefleet names (components/scaleway/elasticMetalOffers.ts) and a few neighbours are
 * kept. Not recorded, and the fake's choice: every offer is sold in every Elastic Metal zone with
 * the fr-par-2 ids, and each offers the Private Network and Remote Access options.
 */

/** One offer's published figures. */
interface OfferFigures {
  readonly id: string;
  readonly cpu: { readonly name: string; readonly cores: number; readonly threads: number; readonly mhz: number; readonly sockets: number };
  readonly memory: { readonly bytes: number; readonly type: string; readonly mhz: number };
  /** Identical disks: how many, bytes each, type. */
  readonly disks: { readonly count: number; readonly bytes: number; readonly type: string };
  readonly tags: readonly string[];
  /** EUR an hour, in nanos. */
  readonly hourlyNanos: number;
  /** Public, maximum public and private bandwidth, bits/s. */
  readonly bandwidth: readonly [number, number, number];
  readonly range: string;
  readonly stock: "available" | "low" | "empty";
  readonly monthlyOfferId: string;
}

const GBIT = 1_000_000_000;
const XEON_E5_2600 = "Intel Xeon E5 2600 or equivalent";

export const ELASTIC_METAL_OFFERS: Readonly<Record<string, OfferFigures>> = {
  "EM-A116X-SSD": {
    id: "8779d2c1-cd10-4a34-a006-cb5b1fb5cbc7",
    cpu: { name: "Intel Xeon E3 1220 or equivalent", cores: 4, threads: 4, mhz: 3100, sockets: 1 },
    memory: { bytes: 32_000_000_000, type: "DDR3", mhz: 1600 },
    disks: { count: 2, bytes: 1_024_209_543_168, type: "SSD" },
    tags: [],
    hourlyNanos: 77_000_000,
    bandwidth: [GBIT / 2, GBIT, GBIT],
    range: "aluminium",
    stock: "available",
    monthlyOfferId: "7b3dae29-0658-4351-b8a7-7b97aef6efc2",
  },
  "EM-A215R-HDD": {
    id: "256e9714-4c9b-4727-840a-f9810df2c2b4",
    cpu: { name: "AMD Ryzen PRO 3600", cores: 6, threads: 12, mhz: 3600, sockets: 1 },
    memory: { bytes: 16_000_000_000, type: "DDR4", mhz: 3200 },
    disks: { count: 2, bytes: 1_000_000_000_000, type: "HDD" },
    tags: ["install-system-v2", "cloud-init", "new"],
    hourlyNanos: 101_000_000,
    bandwidth: [GBIT / 2, GBIT, GBIT],
    range: "aluminium",
    stock: "available",
    monthlyOfferId: "dcc6b018-6aaf-4ad2-a6dc-b779c24a738f",
  },
  "EM-A315X-SSD": {
    id: "6ec5bbb2-8267-41cd-aaf6-d43ea1b59372",
    cpu: { name: "Intel Xeon E5 1410 v2", cores: 4, threads: 8, mhz: 2800, sockets: 1 },
    memory: { bytes: 64_000_000_000, type: "DDR3", mhz: 1600 },
    disks: { count: 2, bytes: 1_024_209_543_168, type: "SSD" },
    tags: [],
    hourlyNanos: 153_000_000,
    bandwidth: [GBIT, GBIT, GBIT],
    range: "aluminium",
    stock: "low",
    monthlyOfferId: "6b91e989-5251-4d89-b366-0f5565339fdc",
  },
  "EM-A410X-SSD": {
    id: "5a505e81-5f6a-42bd-acec-0b290be92697",
    cpu: { name: "Intel Xeon E5 1650", cores: 6, threads: 12, mhz: 3200, sockets: 1 },
    memory: { bytes: 64_000_000_000, type: "DDR3", mhz: 1600 },
    disks: { count: 2, bytes: 1_024_209_543_168, type: "SSD" },
    tags: [],
    hourlyNanos: 153_000_000,
    bandwidth: [GBIT, GBIT, GBIT],
    range: "aluminium",
    stock: "low",
    monthlyOfferId: "7adc4a66-da70-40e3-856b-7b952b77fbf9",
  },
  "EM-A610R-NVME": {
    id: "e1680dec-52aa-4cbc-b70c-ef32d863fdb0",
    cpu: { name: "AMD Ryzen PRO 3600", cores: 6, threads: 12, mhz: 3600, sockets: 1 },
    memory: { bytes: 32_000_000_000, type: "DDR4", mhz: 3200 },
    disks: { count: 2, bytes: 1_024_209_543_168, type: "NVMe" },
    tags: ["new", "install-system-v2", "cloud-init"],
    hourlyNanos: 110_000_000,
    bandwidth: [GBIT / 2, GBIT, GBIT],
    range: "aluminium",
    stock: "available",
    monthlyOfferId: "60bfff09-7b6e-4004-9b74-1957f26bf070",
  },
  "EM-B112X-SSD": {
    id: "a5065ba4-dde2-45f3-adec-1ebbb27b766b",
    cpu: { name: XEON_E5_2600, cores: 6, threads: 12, mhz: 2000, sockets: 2 },
    memory: { bytes: 192_000_000_000, type: "DDR3", mhz: 1600 },
    disks: { count: 2, bytes: 1_000_204_886_016, type: "SSD" },
    tags: [],
    hourlyNanos: 263_000_000,
    bandwidth: [GBIT, GBIT, GBIT],
    range: "beryllium",
    stock: "available",
    monthlyOfferId: "3032af6b-d3ad-424c-b986-58b9dce1f6ee",
  },
  "EM-B220E-NVME": {
    id: "206ea234-9097-4ae1-af68-6d2be09f47ed",
    cpu: { name: "AMD EPYC 7232P", cores: 8, threads: 16, mhz: 3100, sockets: 1 },
    memory: { bytes: 64_000_000_000, type: "DDR4", mhz: 2400 },
    disks: { count: 2, bytes: 1_024_209_543_168, type: "NVMe" },
    tags: ["install-system-v2", "cloud-init"],
    hourlyNanos: 333_000_000,
    bandwidth: [GBIT, 10 * GBIT, 10 * GBIT],
    range: "beryllium",
    stock: "available",
    monthlyOfferId: "8852ff25-c867-4d58-a1f8-40b9968119b7",
  },
  "EM-I120E-NVME": {
    id: "0e1f7c5b-05bf-4863-ba58-9ee07496d1f7",
    cpu: { name: "AMD EPYC 8024P", cores: 8, threads: 16, mhz: 2400, sockets: 1 },
    memory: { bytes: 64_000_000_000, type: "DDR5", mhz: 3200 },
    disks: { count: 2, bytes: 960_000_000_000, type: "NVMe" },
    tags: ["new", "install-system-v2", "cloud-init"],
    hourlyNanos: 356_000_000,
    bandwidth: [GBIT, 25 * GBIT, 25 * GBIT],
    range: "iridium",
    stock: "available",
    monthlyOfferId: "5e226c64-3ceb-470e-a9bb-d01aff3dc335",
  },
  "EM-I220E-NVME": {
    id: "fd7605a7-7493-49ba-9019-0e9c2897d4a0",
    cpu: { name: "AMD EPYC 8124P", cores: 16, threads: 32, mhz: 2450, sockets: 1 },
    memory: { bytes: 128_000_000_000, type: "DDR5", mhz: 3200 },
    disks: { count: 2, bytes: 960_000_000_000, type: "NVMe" },
    tags: ["new", "install-system-v2", "cloud-init"],
    hourlyNanos: 548_000_000,
    bandwidth: [GBIT, 25 * GBIT, 25 * GBIT],
    range: "iridium",
    stock: "available",
    monthlyOfferId: "293cc6d1-0ac8-4bc4-a5a1-8ed2096b045c",
  },
  "EM-L101X-SATA": {
    id: "bd757ca3-a71b-4158-9ef5-39436b6db2a4",
    cpu: { name: "Intel Xeon E5 1410 v2", cores: 4, threads: 8, mhz: 2800, sockets: 1 },
    memory: { bytes: 96_000_000_000, type: "DDR3", mhz: 1600 },
    disks: { count: 2, bytes: 6_001_175_126_016, type: "HDD" },
    tags: [],
    hourlyNanos: 122_000_000,
    bandwidth: [GBIT, GBIT, GBIT],
    range: "lithium",
    stock: "available",
    monthlyOfferId: "1b067ec1-e383-4756-bbc2-d2ba5a76aa08",
  },
  "EM-L105X-SATA": {
    id: "c5853302-63e4-40c7-a711-4a91629565c8",
    cpu: { name: "Intel Xeon E5 1410 v2", cores: 4, threads: 8, mhz: 2800, sockets: 1 },
    memory: { bytes: 96_000_000_000, type: "DDR3", mhz: 1600 },
    disks: { count: 4, bytes: 6_001_175_126_016, type: "HDD" },
    tags: [],
    hourlyNanos: 213_000_000,
    bandwidth: [GBIT, GBIT, GBIT],
    range: "lithium",
    stock: "available",
    monthlyOfferId: "3b36516b-34e5-4ab1-8b05-0cda2adbc84c",
  },
};

/** The options the fake sells (ids and kinds as recorded); every offer carries the first two. */
export const ELASTIC_METAL_OPTIONS = [
  {
    id: "cd4158d7-2d65-49be-8803-c4b8ab6f760c",
    name: "Private Network",
    kind: { private_network: { bandwidth_in_bps: 0 } },
    hourlyNanos: 30_000_000,
  },
  { id: "931df052-d713-4674-8b58-96a63244c8e2", name: "Remote Access", kind: { remote_access: {} }, hourlyNanos: 0 },
  {
    id: "9ce714f1-ed03-4e3b-8c69-d46957ab0ebb",
    name: "Public Bandwidth 1Gbps",
    kind: { public_bandwidth: { bandwidth_in_bps: GBIT } },
    hourlyNanos: 28_000_000,
  },
] as const;

export const PRIVATE_NETWORK_OPTION_ID = ELASTIC_METAL_OPTIONS[0].id;

/** One operating system as recorded: id, name, version, default user, cloud-init support and version. */
interface OsFigures {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  readonly user: string;
  readonly cloudInitVersion: string | null;
  readonly logo: string;
}

export const ELASTIC_METAL_OSES: readonly OsFigures[] = [
  {
    id: "7d1914e1-f4ab-47fc-bd8c-b3a23143e87a",
    name: "Ubuntu",
    version: "24.04 LTS (Noble Numbat)",
    user: "ubuntu",
    cloudInitVersion: "22.1",
    logo: "ubuntu",
  },
  {
    id: "96e5f0f2-d216-4de2-8a15-68730d877885",
    name: "Ubuntu",
    version: "22.04 LTS (Jammy Jellyfish)",
    user: "ubuntu",
    cloudInitVersion: "22.1",
    logo: "ubuntu",
  },
  {
    id: "03b7f4ba-a6a1-4305-984e-b54fafbf1681",
    name: "Ubuntu",
    version: "20.04 LTS (Focal Fossa)",
    user: "ubuntu",
    cloudInitVersion: null,
    logo: "ubuntu",
  },
  {
    id: "83640d93-a0b8-45ad-9c9f-30cae48380a4",
    name: "Debian",
    version: "12 (Bookworm)",
    user: "root",
    cloudInitVersion: "25.1",
    logo: "debian",
  },
  {
    id: "8d034a5d-84c6-4b24-af8a-60ab7c55807f",
    name: "Debian",
    version: "13 (Trixie)",
    user: "root",
    cloudInitVersion: "25.1",
    logo: "debian",
  },
];

function money(nanos: number): { currency_code: string; units: number; nanos: number } {
  return { currency_code: "EUR", units: Math.floor(nanos / 1e9), nanos: nanos % 1e9 };
}

export function offerById(id: string): [string, OfferFigures] | undefined {
  return Object.entries(ELASTIC_METAL_OFFERS).find(([, o]) => o.id === id);
}

/** Whether the offer's installer runs the server's user data (its `cloud-init` tag). */
export function offerRunsCloudInit(offer: OfferFigures): boolean {
  return offer.tags.includes("cloud-init");
}

export function offerJson(name: string, offer: OfferFigures, zone: string, outOfStock: ReadonlySet<string>): Record<string, unknown> {
  return {
    id: offer.id,
    name,
    stock: outOfStock.has(name) ? "empty" : offer.stock,
    bandwidth: offer.bandwidth[0],
    max_bandwidth: offer.bandwidth[1],
    commercial_range: offer.range,
    price_per_hour: money(offer.hourlyNanos),
    price_per_month: null,
    disks: Array.from({ length: offer.disks.count }, () => ({ capacity: offer.disks.bytes, type: offer.disks.type })),
    enable: true,
    cpus: Array.from({ length: offer.cpu.sockets }, () => ({
      name: offer.cpu.name,
      core_count: offer.cpu.cores,
      thread_count: offer.cpu.threads,
      frequency: offer.cpu.mhz,
      benchmark: "",
    })),
    memories: [
      { capacity: offer.memory.bytes, type: offer.memory.type, frequency: offer.memory.mhz, is_ecc: true, ecc_type: "unknown_ecc_type" },
    ],
    quota_name: name.replace(/-/g, "_"),
    persistent_memories: [],
    raid_controllers: [],
    incompatible_os_ids: [],
    subscription_period: "hourly",
    operation_path: "",
    fee: money(0),
    options: ELASTIC_METAL_OPTIONS.slice(0, 2).map((o) => ({
      id: o.id,
      name: o.name,
      enabled: false,
      subscription_period: "hourly",
      price: money(o.hourlyNanos),
      manageable: true,
      ...o.kind,
    })),
    private_bandwidth: offer.bandwidth[2],
    shared_bandwidth: true,
    tags: [...offer.tags],
    gpus: [],
    monthly_offer_id: offer.monthlyOfferId,
    zone,
    dual_attach: null,
  };
}

export function osJson(os: OsFigures, zone: string): Record<string, unknown> {
  const field = (required: boolean, defaultValue: string | null = null) => ({ editable: false, required, default_value: defaultValue });
  return {
    id: os.id,
    name: os.name,
    version: os.version,
    logo_url: `https://baremetal-logos-fr.s3.fr-par.scw.cloud/${os.logo}.png`,
    ssh: field(true),
    user: field(false, os.user),
    password: field(false),
    service_user: field(false),
    service_password: field(false),
    enabled: true,
    license_required: false,
    allowed: true,
    custom_partitioning_supported: true,
    cloud_init_supported: os.cloudInitVersion !== null,
    cloud_init_version: os.cloudInitVersion,
    zone,
  };
}

export function optionJson(option: (typeof ELASTIC_METAL_OPTIONS)[number]): Record<string, unknown> {
  return { id: option.id, name: option.name, manageable: true, ...option.kind };
}
