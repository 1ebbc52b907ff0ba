/**
 * The Pulumi program entry (Pulumi.yaml `main: stacks/`). The Node.js language host calls an
 * exported function and awaits the Promise it returns; the resolved object becomes the stack outputs.
 */
import * as pulumi from "@pulumi/pulumi";
import { FleetSpecError } from "../components/fleet/fleetSpec";
import { runProgram } from "./fleetProgram";
import { ownPreviousOutputs } from "./ownPreviousOutputs";

// A RunError is printed as its message alone: the list of config problems, without a stack trace.
export = () =>
  runProgram({ readPreviousOutputs: ownPreviousOutputs }).catch((error: unknown) => {
    throw error instanceof FleetSpecError ? new pulumi.RunError(error.message) : error;
  });
