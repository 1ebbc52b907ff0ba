/**
 * The `nodefleet` package: the Fleet component and its parts for programs of your own, and the
 * ready-made program (`fleetStackProgram`) that `nodefleet init` projects export.
 */
export * from "./components";
export { fleetStackProgram } from "./stacks/stackProgram";
export { parseFleetSpec, FleetSpecError, type FleetSpec } from "./components/fleet/fleetSpec";
