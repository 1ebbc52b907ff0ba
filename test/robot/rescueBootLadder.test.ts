/**
 * The checked boot into rescue (components/robot/rescueBootLadder.ts) over a scripted server: it
 * stops at the first rung after which the rescue answers, escalates when the box comes back into
 * the installed OS (ssh reboot, sw, hw; never power), re-activates rescue between rungs, and fails
 * after the last rung naming each outcome.
 */
import assert from "node:assert/strict";
import { type RescueProbe, bootIntoRescue, isRescueBootError, rescueBootRungs } from "../../components/robot/rescueBootLadder";

/**
 * A server answering `before` until a reboot, then, per reboot, the probes of `after[i]` (the
 * last one repeated); `sshReboot` present when `canSsh`.
 */
function scriptedServer(before: RescueProbe, after: RescueProbe[][], canSsh = true) {
  const calls: string[] = [];
  let reboots = -1;
  let probes = 0;
  const reboot = (what: string) => {
    calls.push(what);
    reboots++;
    probes = 0;
  };
  const probe = async (): Promise<RescueProbe> => {
    const script = reboots < 0 ? [before] : (after[Math.min(reboots, after.length - 1)] ?? [before]);
    const answer = script[Math.min(probes++, script.length - 1)]!;
    calls.push(`probe ${answer}`);
    return answer;
  };
  return {
    calls,
    io: {
      reset: async (type: "sw" | "hw") => reboot(`reset ${type}`),
      ...(canSsh ? { sshReboot: async () => reboot("ssh reboot") } : {}),
      probe,
      ensureRescueActive: async () => void calls.push("ensure rescue"),
      sleep: async () => undefined,
      waitSeconds: 20,
      probeSeconds: 5,
    },
  };
}

describe("booting a Robot server into rescue, checked", () => {
  it("orders the rungs ssh reboot, sw, hw of those offered, never power", () => {
    assert.deepEqual(rescueBootRungs(["sw", "hw", "power", "man"], true), ["ssh-reboot", "sw", "hw"]);
    assert.deepEqual(rescueBootRungs(["hw", "power", "sw"], false), ["sw", "hw"]);
    assert.deepEqual(rescueBootRungs(["power", "man"], false), []);
  });

  it("stops at the first rung after which the rescue answers and passes the check", async () => {
    const server = scriptedServer("other", [["down", "rescue"]]);
    assert.deepEqual(await bootIntoRescue(1, ["sw", "hw"], server.io), ["ssh-reboot"]);
    assert.deepEqual(server.calls, ["probe other", "ssh reboot", "probe down", "probe rescue"]);
  });

  it("adopts a box already in the rescue (a killed run's boot) without a reboot", async () => {
    const server = scriptedServer("rescue", [["rescue"]]);
    assert.deepEqual(await bootIntoRescue(1, ["sw", "hw"], server.io), []);
    assert.deepEqual(server.calls, ["probe rescue"]);
  });

  it("escalates as soon as the box comes back into the installed OS, re-activating rescue first", async () => {
    const server = scriptedServer("other", [
      ["down", "other"],
      ["down", "other"],
      ["down", "rescue"],
    ]);
    assert.deepEqual(await bootIntoRescue(1, ["sw", "hw", "power"], server.io), ["ssh-reboot", "sw", "hw"]);
    assert.deepEqual(
      server.calls.filter((c) => !c.startsWith("probe")),
      ["ssh reboot", "ensure rescue", "reset sw", "ensure rescue", "reset hw"],
    );
    assert.ok(!server.calls.some((c) => c.includes("power")), "never power");
  });

  it("waits a rung's whole time when the installed OS never goes down, then escalates", async () => {
    const server = scriptedServer("other", [["other"], ["down", "rescue"]], false);
    assert.deepEqual(await bootIntoRescue(1, ["sw", "hw"], server.io), ["sw", "hw"]);
    assert.equal(server.calls.filter((c) => c === "probe other").length, 1 + 4, "four probes of 5 s within the 20 s wait");
  });

  it("starts at hw when nothing answers (CTRL+ALT+DEL reaches no hung kernel)", async () => {
    const server = scriptedServer("down", [["down", "rescue"]]);
    assert.deepEqual(await bootIntoRescue(1, ["sw", "hw"], server.io), ["hw"]);
  });

  it("goes on to sw when the ssh reboot fails", async () => {
    const server = scriptedServer("other", [["rescue"]]);
    const io = { ...server.io, sshReboot: async () => Promise.reject(new Error("Permission denied (publickey)")) };
    assert.deepEqual(await bootIntoRescue(1, ["sw"], io), ["sw"]);
  });

  it("fails after the last rung, naming the server, each rung and what came back", async () => {
    const server = scriptedServer("other", [["down", "other"]]);
    await assert.rejects(
      bootIntoRescue(2000001, ["sw", "hw", "man"], server.io),
      (e: Error) =>
        isRescueBootError(e) &&
        /^Robot server 2000001 did not boot into the rescue system after ssh-reboot, sw, hw \(ssh-reboot: came back into the installed system; sw: came back/.test(
          e.message,
        ) &&
        /check its boot order in Robot/.test(e.message),
    );
    const hung = scriptedServer("down", [["down"]]);
    await assert.rejects(bootIntoRescue(7, ["sw", "hw"], hung.io), /after hw \(hw: did not answer SSH\)/);
    await assert.rejects(bootIntoRescue(7, ["power", "man"], hung.io), /offers neither an sw nor an hw reset \(only power, man\)/);
  });
});
