/**
 * This repository's Pulumi program (Pulumi.yaml `main: stacks/index.ts`). The Node.js language host
 * calls the exported function and awaits the Promise it returns; the resolved object becomes the
 * stack outputs.
 */
import { fleetStackProgram } from "./stackProgram";

export = fleetStackProgram;
