/**
 * The API stack's program with a fault for the preview-guard test: when NODEFLEET_TEST_FORCE_IMAGE
 * is set (the simulated engine's child inherits the environment), every member is rendered with
 * that image, as a bug that leaked a template change into running members would, which forces the
 * replacement of their servers.
 */
import type { AutoscaledProgramArgs } from "../../automation/reconciler/apiStack";
import { runProgram as realProgram } from "../../stacks/autoscaledProgram";

export function runProgram(args: AutoscaledProgramArgs): Promise<Record<string, unknown>> {
  const image = process.env.NODEFLEET_TEST_FORCE_IMAGE;
  if (!image) return realProgram(args);
  return realProgram({
    ...args,
    members: args.members.map((m) => ({ ...m, snapshot: { ...m.snapshot, template: { ...m.snapshot.template, image } } })),
  });
}
