/** Loaded by mocha before any test (.mocharc.json `require`, and `npm run test:one`): see processGroups.ts. */
import { installReaper } from "./processGroups";

installReaper();
