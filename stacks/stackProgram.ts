/**
 * The Pulumi program of a nodefleet project: reads the stack's `nodefleet:*` config, declares the
 * fleet, and returns its outputs. This repository's `stacks/index.ts` and a team's own project
 * (`nodefleet init`) both export it as their program.
 */
import * as pulumi from "@pulumi/pulumi";
import { FleetSpecError } from "../components/fleet/fleetSpec";
import { runProgram } from "./fleetProgram";
import { ownPreviousOutputs } from "./ownPreviousOutputs";

// A RunError is printed as its message alone: the list of config problems, without a stack trace.
export function fleetStackProgram(): Promise<Record<string, unknown>> {
  return runProgram({ readPreviousOutputs: ownPreviousOutputs }).catch((error: unknown) => {
    throw error instanceof FleetSpecError ? new pulumi.RunError(error.message) : error;
  });
}
