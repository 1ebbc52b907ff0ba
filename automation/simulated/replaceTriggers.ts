/**
 * Which input changes force a provider to replace a resource instead of updating it in place, per
 * Pulumi type token. The simulated engine decides create/update/replace with this table, so it must
 * agree with what the real providers do; every entry names where that was read.
 *
 * Paths are dot-separated input property paths (`metadata.name`). A type missing from the table is
 * updated in place on any change (its provider can update everything, or we have not needed it).
 * Where a nodefleet component sets `replaceOnChanges` (the mock runtime does not pass resource
 * options to the simulation), those paths are listed too, from the component's own constant.
 */
import { NODE_BOOTSTRAP_TOKEN_REPLACE_ON_CHANGES, NODE_BOOTSTRAP_TOKEN_TYPE } from "../../components/provider/bootstrapTokenResource";
import { NODE_DRAIN_TYPE } from "../../components/provider/nodeDrainResource";
import { NODE_LOCAL_PVC_REMOVAL_TYPE } from "../../components/provider/nodeLocalPvcRemovalResource";
import { NODE_METADATA_REPLACE_ON_CHANGES, NODE_METADATA_TYPE } from "../../components/provider/nodeMetadataResource";
import { NODE_REMOVAL_TYPE } from "../../components/provider/nodeRemovalResource";
import { NODE_UPDATE_DRAIN_TYPE } from "../../components/provider/nodeUpdateDrainResource";
import { ELASTIC_METAL_REPLACE_ON_CHANGES, IPAM_IP_REPLACE_ON_CHANGES } from "../../components/scaleway/elasticMetalPlan";
import { ROBOT_RESCUE_REPLACE_ON_CHANGES } from "../../components/robot/robotRescue";
import { ROBOT_RESCUE_TYPE } from "../../components/robot/robotRescueResource";
import { NODE_DRAIN_REPLACE_ON_CHANGES } from "../../components/kubernetes/kubernetesNodeDrain";
import { NODE_LOCAL_PVC_REMOVAL_REPLACE_ON_CHANGES } from "../../components/kubernetes/nodeLocalPvcRemoval";

export interface ReplaceTriggerEntry {
  /** Input property paths whose change forces replacement. */
  readonly properties: readonly string[];
  /** Where the behaviour is documented: provider schema source or docs page. */
  readonly source: string;
  /** True when every input change replaces (e.g. random/time resources). */
  readonly allInputs?: boolean;
}

/** The engine replaces a dynamic resource on the properties its provider's diff lists in `replaces`. */
const DYNAMIC_DIFF =
  "https://www.pulumi.com/docs/reference/pkg/nodejs/pulumi/pulumi/interfaces/provider.DiffResult.html (replaces: the properties triggering a replacement)";

const PROVIDER_DIFF =
  "https://github.com/pulumi/pulumi/blob/master/proto/pulumi/provider.proto (DiffResponse.replaces: the properties whose change requires a replacement)";

const HCLOUD_TF = "https://github.com/hetznercloud/terraform-provider-hcloud/blob/main/internal";

export const REPLACE_TRIGGERS: Readonly<Record<string, ReplaceTriggerEntry>> = {
  // ForceNew on image, location, datacenter, user_data, ssh_keys; name, labels, server_type,
  // firewall_ids, placement_group_id, backups, protection are updated in place (rename, change-type ...).
  "hcloud:index/server:Server": {
    properties: ["image", "location", "datacenter", "userData", "sshKeys"],
    source: `${HCLOUD_TF}/server/resource.go (schema: ForceNew)`,
  },
  // ip_range is ForceNew; name and labels are updated.
  "hcloud:index/network:Network": {
    properties: ["ipRange"],
    source: `${HCLOUD_TF}/network/resource.go (schema: ip_range ForceNew)`,
  },
  // The subnet resource has no Update at all: every argument is ForceNew.
  "hcloud:index/networkSubnet:NetworkSubnet": {
    properties: ["networkId", "type", "networkZone", "ipRange", "vswitchId"],
    source: `${HCLOUD_TF}/network/resource_subnet.go (schema: ForceNew, no UpdateContext)`,
  },
  // The route resource has no Update either: network_id, destination and gateway are ForceNew.
  "hcloud:index/networkRoute:NetworkRoute": {
    properties: ["networkId", "destination", "gateway"],
    source: `${HCLOUD_TF}/network/resource_route.go (schema: ForceNew, no UpdateContext)`,
  },
  // server_id, network_id, subnet_id and ip carry RequiresReplace; alias_ips is updated.
  "hcloud:index/serverNetwork:ServerNetwork": {
    properties: ["serverId", "networkId", "subnetId", "ip"],
    source: `${HCLOUD_TF}/server/resource_network.go (plan modifiers: RequiresReplace)`,
  },
  // `type` is not ForceNew and Update handles only name and labels, so a type change is planned as an
  // update that changes nothing (Hetzner has one type, spread). Name and labels update in place.
  "hcloud:index/placementGroup:PlacementGroup": {
    properties: [],
    source: `${HCLOUD_TF}/placementgroup/resource.go (schema: type Required, not ForceNew; resourcePlacementGroupUpdate: name, labels)`,
  },
  // apply_to is Optional+Computed, not ForceNew: Update syncs it with the apply_to_resources and
  // remove_from_resources actions (syncApplyTo), as it does rules (set_rules), name and labels.
  "hcloud:index/firewall:Firewall": {
    properties: [],
    source: `${HCLOUD_TF}/firewall/resource.go (schema: apply_to not ForceNew; resourceFirewallUpdate: name, rule, labels, apply_to via syncApplyTo)`,
  },
  "hcloud:index/sshKey:SshKey": {
    properties: ["publicKey"],
    source: `${HCLOUD_TF}/sshkey/resource.go (schema: public_key ForceNew; name and labels updated)`,
  },
  // offer and zone (zonal.Schema) are ForceNew; an os change is an Update that reinstalls the same
  // server (installServer). nodefleet's pool adds os to replaceOnChanges (a new OS is a new machine
  // generation; elasticMetalPlan.ts says why), so Pulumi replaces it and the simulation must too.
  "scaleway:elasticmetal/server:Server": {
    properties: [...new Set(["offer", "zone", ...ELASTIC_METAL_REPLACE_ON_CHANGES])],
    source:
      "https://github.com/scaleway/terraform-provider-scaleway/blob/master/internal/services/baremetal/server.go (schema: offer ForceNew, zone via zonal.Schema ForceNew, os not ForceNew; ResourceServerUpdate reinstalls on HasChange(os)) and the component's replaceOnChanges (components/scaleway/elasticMetalPlan.ts ELASTIC_METAL_REPLACE_ON_CHANGES)",
  },
  // Name and tags are updated; the IPv4 subnet, VPC and region are ForceNew.
  "scaleway:network/privateNetwork:PrivateNetwork": {
    properties: ["ipv4Subnet.subnet", "vpcId", "region"],
    source:
      "https://github.com/scaleway/terraform-provider-scaleway/blob/master/internal/services/vpc/private_network.go (schema: ipv4_subnet.subnet, vpc_id ForceNew; regional.Schema)",
  },
  // address, is_ipv6 and region (regional.Schema) are ForceNew; `source` is not, and Update handles
  // only tags and custom_resource, so a source change would change nothing. The pool adds sources to
  // replaceOnChanges (IPAM_IP_REPLACE_ON_CHANGES): an address on another network is a new address.
  "scaleway:ipam/ip:Ip": {
    properties: [...new Set(["address", "isIpv6", "region", ...IPAM_IP_REPLACE_ON_CHANGES])],
    source:
      "https://github.com/scaleway/terraform-provider-scaleway/blob/master/internal/services/ipam/ip.go (schema: address, is_ipv6 ForceNew, region via regional.Schema, source not ForceNew; ResourceIPAMIPUpdate: custom_resource, tags) and the component's replaceOnChanges (components/scaleway/elasticMetalPlan.ts IPAM_IP_REPLACE_ON_CHANGES)",
  },
  // Every argument of the random resources is RequiresReplace (keepers included): a change makes a new value.
  "random:index/randomString:RandomString": {
    properties: [],
    allInputs: true,
    source: "https://registry.terraform.io/providers/hashicorp/random/latest/docs/resources/string (all arguments force a new resource)",
  },
  "random:index/randomPassword:RandomPassword": {
    properties: [],
    allInputs: true,
    source: "https://registry.terraform.io/providers/hashicorp/random/latest/docs/resources/password (all arguments force a new resource)",
  },
  "random:index/randomId:RandomId": {
    properties: [],
    allInputs: true,
    source: "https://registry.terraform.io/providers/hashicorp/random/latest/docs/resources/id (all arguments force a new resource)",
  },
  // Only triggers replace (a new base timestamp is saved); base_rfc3339 and offset_* are recomputed in
  // place (terraform-provider-time v0.12.1, internal/provider/resource_time_offset.go: no RequiresReplace on base_rfc3339).
  "time:index/offset:Offset": {
    properties: ["triggers"],
    source:
      "https://registry.terraform.io/providers/hashicorp/time/latest/docs/resources/offset (triggers: a change saves a new base timestamp)",
  },
  "time:index/static:Static": {
    properties: ["triggers", "rfc3339"],
    source: "https://registry.terraform.io/providers/hashicorp/time/latest/docs/resources/static (rfc3339, triggers: forces new)",
  },
  "time:index/rotating:Rotating": {
    properties: ["triggers", "rfc3339"],
    source: "https://registry.terraform.io/providers/hashicorp/time/latest/docs/resources/rotating (rfc3339, triggers: forces new)",
  },
  // Kubernetes objects are identified by namespace/name; a Secret's type is immutable (API validation).
  "kubernetes:core/v1:Secret": {
    properties: ["metadata.name", "metadata.namespace", "type"],
    source:
      "https://www.pulumi.com/registry/packages/kubernetes/api-docs/core/v1/secret/ and https://kubernetes.io/docs/concepts/configuration/secret/#secret-types (type is immutable)",
  },
  "kubernetes:core/v1:ConfigMap": {
    properties: ["metadata.name", "metadata.namespace"],
    source:
      "https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/managing-resources-with-server-side-apply/ (name/namespace identify the object)",
  },
  // remote/local Command: `triggers` replaces; create/update/delete/connection changes run `update` in place.
  "command:remote:Command": {
    properties: ["triggers"],
    source: "https://www.pulumi.com/registry/packages/command/api-docs/remote/command/ (triggers: trigger a replacement when changed)",
  },
  // nodefleet's own dynamic resources: their providers' diff (replaces) decides, as the real engine asks it.
  "pulumi-nodejs:dynamic/nodefleet:RobotRescue": {
    properties: [...ROBOT_RESCUE_REPLACE_ON_CHANGES],
    source: `${DYNAMIC_DIFF} and components/robot/robotRescue.ts robotRescueProvider.diff (ROBOT_RESCUE_REPLACE_ON_CHANGES)`,
  },
  "pulumi-nodejs:dynamic/nodefleet:KubernetesNodeUpdateDrain": {
    properties: [...NODE_DRAIN_REPLACE_ON_CHANGES],
    source: `${DYNAMIC_DIFF} and components/kubernetes/kubernetesNodeDrain.ts nodeUpdateDrainProvider.diff (NODE_DRAIN_REPLACE_ON_CHANGES)`,
  },
  // nodefleet's own plugin: each handler's diff lists its replace keys (components/provider/).
  [NODE_BOOTSTRAP_TOKEN_TYPE]: {
    properties: [...NODE_BOOTSTRAP_TOKEN_REPLACE_ON_CHANGES],
    source: `${PROVIDER_DIFF} and components/provider/bootstrapTokenResource.ts nodeBootstrapTokenHandler.diff (NODE_BOOTSTRAP_TOKEN_REPLACE_ON_CHANGES)`,
  },
  [NODE_DRAIN_TYPE]: {
    properties: ["nodeName"],
    source: `${PROVIDER_DIFF} and components/provider/nodeDrainResource.ts nodeDrainHandler.diff`,
  },
  [NODE_REMOVAL_TYPE]: {
    properties: ["nodeName"],
    source: `${PROVIDER_DIFF} and components/provider/nodeRemovalResource.ts nodeRemovalHandler.diff`,
  },
  [NODE_METADATA_TYPE]: {
    properties: [...NODE_METADATA_REPLACE_ON_CHANGES],
    source: `${PROVIDER_DIFF} and components/provider/nodeMetadataResource.ts nodeMetadataHandler.diff (NODE_METADATA_REPLACE_ON_CHANGES)`,
  },
  [NODE_UPDATE_DRAIN_TYPE]: {
    properties: [...NODE_DRAIN_REPLACE_ON_CHANGES],
    source: `${PROVIDER_DIFF} and components/provider/nodeUpdateDrainResource.ts nodeUpdateDrainHandler.diff (NODE_DRAIN_REPLACE_ON_CHANGES)`,
  },
  [ROBOT_RESCUE_TYPE]: {
    properties: [...ROBOT_RESCUE_REPLACE_ON_CHANGES],
    source: `${PROVIDER_DIFF} and components/robot/robotRescueResource.ts robotRescueHandler.diff (ROBOT_RESCUE_REPLACE_ON_CHANGES)`,
  },
  [NODE_LOCAL_PVC_REMOVAL_TYPE]: {
    properties: [...NODE_LOCAL_PVC_REMOVAL_REPLACE_ON_CHANGES],
    source: `${PROVIDER_DIFF} and components/provider/nodeLocalPvcRemovalResource.ts nodeLocalPvcRemovalHandler.diff (NODE_LOCAL_PVC_REMOVAL_REPLACE_ON_CHANGES)`,
  },
  "command:local:Command": {
    properties: ["triggers"],
    source: "https://www.pulumi.com/registry/packages/command/api-docs/local/command/ (triggers: trigger a replacement when changed)",
  },
};

export function replaceTriggersFor(type: string): ReplaceTriggerEntry | undefined {
  return REPLACE_TRIGGERS[type];
}
