/**
 * The entry of nodefleet's provider plugin (`bin/pulumi-resource-nodefleet` starts it with Node.js):
 * serves the member resources of nodefleet's pools (Hetzner Cloud and bare metal) at this package's version.
 */
import { NODE_BOOTSTRAP_TOKEN_TYPE, nodeBootstrapTokenHandler } from "./bootstrapTokenResource";
import { NODE_DRAIN_TYPE, nodeDrainHandler } from "./nodeDrainResource";
import { NODE_LOCAL_PVC_REMOVAL_TYPE, nodeLocalPvcRemovalHandler } from "./nodeLocalPvcRemovalResource";
import { NODE_METADATA_TYPE, nodeMetadataHandler } from "./nodeMetadataResource";
import { NODE_REMOVAL_TYPE, nodeRemovalHandler } from "./nodeRemovalResource";
import { NODE_UPDATE_DRAIN_TYPE, nodeUpdateDrainHandler } from "./nodeUpdateDrainResource";
import { serveProvider } from "./providerServer";
import { packageVersion } from "../shared/packageVersion";

serveProvider(packageVersion(__dirname), {
  [NODE_BOOTSTRAP_TOKEN_TYPE]: nodeBootstrapTokenHandler,
  [NODE_DRAIN_TYPE]: nodeDrainHandler,
  [NODE_REMOVAL_TYPE]: nodeRemovalHandler,
  [NODE_METADATA_TYPE]: nodeMetadataHandler,
  [NODE_UPDATE_DRAIN_TYPE]: nodeUpdateDrainHandler,
  [NODE_LOCAL_PVC_REMOVAL_TYPE]: nodeLocalPvcRemovalHandler,
}).catch((error: unknown) => {
  process.stderr.write(`nodefleet provider: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
