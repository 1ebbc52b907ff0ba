/**
 * The entry of nodefleet's provider plugin (`bin/pulumi-resource-nodefleet` starts it with Node.js):
 * serves the member resources of nodefleet's pools at this package's version.
 */
import { NODE_BOOTSTRAP_TOKEN_TYPE, nodeBootstrapTokenHandler } from "./bootstrapTokenResource";
import { NODE_DRAIN_TYPE, nodeDrainHandler } from "./nodeDrainResource";
import { NODE_REMOVAL_TYPE, nodeRemovalHandler } from "./nodeRemovalResource";
import { serveProvider } from "./providerServer";
import { packageVersion } from "../shared/packageVersion";

serveProvider(packageVersion(__dirname), {
  [NODE_BOOTSTRAP_TOKEN_TYPE]: nodeBootstrapTokenHandler,
  [NODE_DRAIN_TYPE]: nodeDrainHandler,
  [NODE_REMOVAL_TYPE]: nodeRemovalHandler,
}).catch((error: unknown) => {
  process.stderr.write(`nodefleet provider: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
