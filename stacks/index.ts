/**
 * The Pulumi program entry (Pulumi.yaml `main: stacks/`). The Node.js language host calls an
 * exported function and awaits the Promise it returns; the resolved object becomes the stack outputs.
 */
import { runProgram } from "./fleetProgram";

export = () => runProgram();
