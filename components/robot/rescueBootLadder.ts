/**
 * Booting a Robot server into its activated rescue system, checked (issue #38 part 4): after each
 * reboot the rescue host must answer SSH and pass RESCUE_SYSTEM_CHECK. A box that comes back into
 * its installed OS instead (the reset did not take, or the boot skipped the rescue's PXE entry) is
 * rebooted with the next rung: an SSH reboot of the installed system, then the `sw` and `hw` resets
 * the server offers; never `power`, a power-button press that shuts a running box down. After the
 * last rung it fails, saying what came back. A pure walk over injected I/O, so tests need no server.
 */
import type { RobotResetType } from "./robotClient";

/** A rung: a reboot over SSH of the installed system, or a Robot reset type. */
export type RescueBootRung = "ssh-reboot" | Extract<RobotResetType, "sw" | "hw">;

/** What answers on the server's address after a reboot. */
export type RescueProbe =
  /** SSH answers and RESCUE_SYSTEM_CHECK passes. */
  | "rescue"
  /** SSH answers, but it is not the rescue system (the check fails or our key is refused). */
  | "other"
  /** Nothing answers SSH (rebooting, off, hung). */
  | "down";

export interface RescueBootIo {
  /** Robot's reset call. */
  readonly reset: (type: Extract<RobotResetType, "sw" | "hw">) => Promise<void>;
  /** Reboots the installed system over SSH; absent when nodefleet cannot log in to it (an adopted server). */
  readonly sshReboot?: () => Promise<void>;
  /** Checks what answers on the server's SSH port. */
  readonly probe: () => Promise<RescueProbe>;
  /** Re-activates rescue when a boot into the installed OS used the activation up (Robot's state says inactive). */
  readonly ensureRescueActive: () => Promise<void>;
  readonly sleep: (ms: number) => Promise<void>;
  /** Seconds a rung waits for the rescue to answer. Default RESCUE_BOOT_WAIT_SECONDS. */
  readonly waitSeconds?: number;
  /** Seconds between probes. Default 5. */
  readonly probeSeconds?: number;
}

/** How long a rung waits for the rescue system: a dedicated server's reboot with POST takes minutes. */
const RESCUE_BOOT_WAIT_SECONDS = 300;

/**
 * The box never answered as the rescue system after the last rung: an Error named
 * `RescueBootError`. Made by a function, not a subclass: the rescue provider is serialized into the
 * state, and a serialized subclass of Error loses its message (measured: it threw `{}`).
 */
function rescueBootError(message: string): Error {
  const error = new Error(message);
  error.name = "RescueBootError";
  return error;
}

/** Whether `error` is a RescueBootError. */
export function isRescueBootError(error: unknown): error is Error {
  return error instanceof Error && error.name === "RescueBootError";
}

/** The rungs to try, in order: an SSH reboot when possible, then `sw` and `hw` of those offered. */
export function rescueBootRungs(offered: readonly string[], canSshReboot: boolean): RescueBootRung[] {
  const resets = (["sw", "hw"] as const).filter((type) => offered.includes(type));
  return [...(canSshReboot ? (["ssh-reboot"] as const) : []), ...resets];
}

/** How a rung ended: in rescue, back in the installed OS after going down, or no answer in time. */
type RungOutcome = "rescue" | "came-back" | "still-other" | "no-answer";

async function waitForRescue(io: RescueBootIo): Promise<RungOutcome> {
  const waitMs = (io.waitSeconds ?? RESCUE_BOOT_WAIT_SECONDS) * 1000;
  const stepMs = (io.probeSeconds ?? 5) * 1000;
  let wentDown = false;
  let last: RescueProbe = "down";
  for (let waited = 0; waited < waitMs; waited += stepMs) {
    await io.sleep(stepMs);
    last = await io.probe();
    if (last === "rescue") return "rescue";
    if (last === "down") wentDown = true;
    // It rebooted and the installed OS answers again: this rung did not reach rescue; do not wait longer.
    else if (wentDown) return "came-back";
  }
  return last === "other" ? "still-other" : "no-answer";
}

const OUTCOME_WORDS: Record<Exclude<RungOutcome, "rescue">, string> = {
  "came-back": "came back into the installed system",
  "still-other": "kept running the installed system",
  "no-answer": "did not answer SSH",
};

/**
 * Walks the rungs until the rescue answers; returns the rungs used. A box already in rescue needs
 * none (nothing is reset); one that answers nothing (hung or off) skips the SSH reboot and `sw` (CTRL+ALT+DEL reaches
 * no hung kernel) when `hw` is offered. Throws a RescueBootError naming each rung and its outcome.
 */
export async function bootIntoRescue(serverNumber: number, offered: readonly string[], io: RescueBootIo): Promise<RescueBootRung[]> {
  const first = await io.probe();
  // Already there (an earlier run's reset, its `pulumi up` killed before it recorded the rescue): no reset.
  if (first === "rescue") return [];
  const all = rescueBootRungs(offered, io.sshReboot !== undefined && first === "other");
  if (all.length === 0)
    throw rescueBootError(
      `Robot server ${serverNumber} offers neither an sw nor an hw reset (only ${offered.join(", ") || "none"}); reset it by hand after rescue activation`,
    );
  const rungs = first === "down" && all.includes("hw") ? all.filter((r) => r !== "sw") : all;
  const used: RescueBootRung[] = [];
  const outcomes: string[] = [];
  for (const rung of rungs) {
    if (used.length > 0) await io.ensureRescueActive();
    if (rung === "ssh-reboot") {
      try {
        await io.sshReboot!();
      } catch (error) {
        outcomes.push(`ssh-reboot failed (${error instanceof Error ? error.message : String(error)})`);
        continue;
      }
    } else await io.reset(rung);
    used.push(rung);
    const outcome = await waitForRescue(io);
    if (outcome === "rescue") return used;
    outcomes.push(`${rung}: ${OUTCOME_WORDS[outcome]}`);
  }
  throw rescueBootError(
    `Robot server ${serverNumber} did not boot into the rescue system after ${rungs.join(", ")} (${outcomes.join("; ")}); ` +
      "check its boot order in Robot (network boot first) and the rescue activation, or reset it by hand",
  );
}
