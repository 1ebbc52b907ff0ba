/**
 * The entry of nodefleet's provider plugin (`bin/pulumi-resource-nodefleet` starts it with Node.js):
 * serves the member resources of nodefleet's pools (Hetzner Cloud and bare metal) at this package's
 * version: the cluster-side ones of provider/ and the Robot rescue of robot/. Here, beside index.ts,
 * because it composes folders that may not import one another.
 */
import { NODE_BOOTSTRAP_TOKEN_TYPE, nodeBootstrapTokenHandler } from "./provider/bootstrapTokenResource";
import { NODE_DRAIN_TYPE, nodeDrainHandler } from "./provider/nodeDrainResource";
import { NODE_LOCAL_PVC_REMOVAL_TYPE, nodeLocalPvcRemovalHandler } from "./provider/nodeLocalPvcRemovalResource";
import { NODE_METADATA_TYPE, nodeMetadataHandler } from "./provider/nodeMetadataResource";
import { NODE_REMOVAL_TYPE, nodeRemovalHandler } from "./provider/nodeRemovalResource";
import { NODE_UPDATE_DRAIN_TYPE, nodeUpdateDrainHandler } from "./provider/nodeUpdateDrainResource";
import { serveProvider } from "./provider/providerServer";
import { ROBOT_RESCUE_TYPE, robotRescueHandler } from "./robot/robotRescueResource";
import { packageVersion } from "./shared/packageVersion";

serveProvider(packageVersion(__dirname), {
  [NODE_BOOTSTRAP_TOKEN_TYPE]: nodeBootstrapTokenHandler,
  [NODE_DRAIN_TYPE]: nodeDrainHandler,
  [NODE_REMOVAL_TYPE]: nodeRemovalHandler,
  [NODE_METADATA_TYPE]: nodeMetadataHandler,
  [NODE_UPDATE_DRAIN_TYPE]: nodeUpdateDrainHandler,
  [NODE_LOCAL_PVC_REMOVAL_TYPE]: nodeLocalPvcRemovalHandler,
  [ROBOT_RESCUE_TYPE]: robotRescueHandler,
}).catch((error: unknown) => {
  process.stderr.write(`nodefleet provider: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
