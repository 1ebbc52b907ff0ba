/**
 * The fake Robot webservice's servers: GET /server, GET and POST (name) /server/{n}, the reset
 * options and resets (GET /reset, GET and POST /reset/{n}) and the boot configuration (GET /boot/{n},
 * the rescue system's GET, POST, DELETE /boot/{n}/rescue and GET .../rescue/last). Routes, inputs,
 * outputs and error codes as https://robot.hetzner.com/doc/webservice/en.html documents them
 * (sections "Server", "Reset", "Boot configuration").
 *
 * Reset types keep their meaning on Robot (docs.hetzner.com/robot/dedicated-server/maintenance/reset):
 * `sw` sends CTRL+ALT+DEL (a running machine reboots), `hw` presses the reset button (a running
 * machine restarts at once), `power` presses the power button (an off machine turns on; a running one
 * gets the ACPI signal and shuts down), `power_long` holds it (the machine goes off), `man` asks a
 * technician for a manual power cycle (acknowledged; the machine is back after `manualResetMs`, and
 * further resets answer 409 RESET_MANUAL_ACTIVE meanwhile). A boot with a rescue activation boots
 * the rescue system and uses the activation up, as on Robot. The fake records the boots
 * (FakeRobotServer.boots) and tells the machines attached to it (automation/local/robotMachines/),
 * which boot them and may say that a reset did not take.
 */
import { createHash, randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type FakeRobotContext, RobotError, formOf, formValue, invalidInput, robotDateTime, serverParam } from "./fakeRobotContext";
import { keyJson } from "./fakeRobotKeys";
import type { FakeRobotRescue, FakeRobotServer } from "./fakeRobotState";

/**
 * The products the fake seeds, one after the other: one offering the reset types of the
 * documentation's first reset example (`sw`, `hw`, `man`; no power readout), one offering every type
 * and reporting its power (`operating_status`), as the documentation's second example does.
 */
const SEED_PRODUCTS: ReadonlyArray<Pick<FakeRobotServer, "product" | "dc" | "resetTypes" | "powerReadable">> = [
  { product: "AX41-NVME", dc: "FSN1-DC14", resetTypes: ["sw", "hw", "man"], powerReadable: false },
  { product: "AX52", dc: "HEL1-DC7", resetTypes: ["sw", "hw", "power", "power_long", "man"], powerReadable: true },
];

/** Robot's rescue systems and architectures offered (en.html "GET /boot/{server-number}/rescue"). */
const RESCUE_OSES = ["linux", "vkvm"];
const ARCHES = [64, 32];
/** Keyboard layouts the rescue system takes (the fake's list; en.html names only the default, `us`). */
const KEYBOARDS = ["us", "uk", "ch", "de", "fi", "fr", "jp", "it", "es", "nl", "se", "dk", "no", "pl", "cz"];
/** The first server number the fake hands out (Robot's are 6 to 7 digits). */
const FIRST_SERVER_NUMBER = 2_000_001;

/**
 * Adds servers until the account has `count` (a restarted fake keeps the ones it has). Server i
 * gets the loopback address 127.0.3.(i+1), where its machine will listen in part 2, and an IPv6 net
 * from the documentation prefix 2001:db8::/32.
 */
export function seedServers(ctx: FakeRobotContext, count: number): void {
  for (let i = ctx.state.servers().length; i < count; i++) {
    const product = SEED_PRODUCTS[i % SEED_PRODUCTS.length]!;
    const serverNumber = FIRST_SERVER_NUMBER + i;
    ctx.state.putServer({
      id: String(serverNumber),
      serverNumber,
      name: `local-robot-${i + 1}`,
      ...product,
      resetTypes: [...product.resetTypes],
      ip: `127.0.3.${i + 1}`,
      ipv6Net: `2001:db8:0:${(i + 1).toString(16)}::`,
      paidUntil: "2099-12-31",
      poweredOn: true,
      rescue: null,
      lastRescue: null,
      resets: [],
      manualResetUntil: 0,
      boots: [],
    });
  }
}

/** The fields every per-server object starts with. */
function serverIdentity(s: FakeRobotServer) {
  return { server_ip: s.ip, server_ipv6_net: s.ipv6Net, server_number: s.serverNumber };
}

/** A server as GET /server lists it. */
function serverSummaryJson(s: FakeRobotServer) {
  return {
    ...serverIdentity(s),
    server_name: s.name,
    product: s.product,
    dc: s.dc,
    traffic: "unlimited",
    status: "ready",
    cancelled: false,
    paid_until: s.paidUntil,
    ip: s.ip === null ? [] : [s.ip],
    subnet: [{ ip: s.ipv6Net, mask: "64" }],
  };
}

/** A server as GET /server/{n} and POST /server/{n} answer it: the summary and the availability flags. */
function serverDetailJson(s: FakeRobotServer) {
  return {
    ...serverSummaryJson(s),
    reset: s.resetTypes.length > 0,
    rescue: true,
    vnc: false,
    windows: false,
    plesk: false,
    cpanel: false,
    wol: false,
    hot_swap: false,
    linked_storagebox: null,
  };
}

/** `operating_status`: the documentation shows `running` and `not supported`; `shut off` is the fake's word for off. */
function operatingStatus(s: FakeRobotServer): string {
  if (!s.powerReadable) return "not supported";
  return s.poweredOn ? "running" : "shut off";
}

/** The authorized keys of a rescue, as `{key: {...}}` records (the shape hrobot-rs reads, src/api/boot/rescue.rs). */
function authorizedKeysJson(ctx: FakeRobotContext, fingerprints: readonly string[]) {
  return fingerprints.map((fingerprint) => {
    const key = ctx.state.key(fingerprint);
    // A key deleted after the activation is still named by its fingerprint.
    const json = key ? keyJson(key) : { name: "", fingerprint, type: "", size: 0, created_at: robotDateTime(0) };
    const { data: _data, ...reference } = json as ReturnType<typeof keyJson>;
    return { key: reference };
  });
}

/**
 * The rescue object. An active (or last) rescue names its OS, architecture and keys; an inactive
 * one lists what can be activated. `password` is the generated one while active and known, else null.
 */
function rescueJson(ctx: FakeRobotContext, s: FakeRobotServer, rescue: FakeRobotRescue | null, active: boolean, password: string | null) {
  if (!rescue)
    return { ...serverIdentity(s), os: RESCUE_OSES, arch: ARCHES, active: false, password: null, authorized_key: [], host_key: [] };
  return {
    ...serverIdentity(s),
    os: rescue.os,
    arch: 64,
    active,
    password,
    authorized_key: authorizedKeysJson(ctx, rescue.authorizedKeys),
    // The rescue system's host keys belong to the machines of part 2; none are known here.
    host_key: [],
  };
}

/** Records a boot caused by `cause` at `at`, into the rescue when one is active (using it up). */
function boot(ctx: FakeRobotContext, s: FakeRobotServer, cause: string, at: number): void {
  s.poweredOn = true;
  if (ctx.machines?.takes(s.serverNumber) === false) {
    // The box comes back into the OS it ran; the rescue activation was not used.
    const previous = s.boots[s.boots.length - 1];
    s.boots.push({ at, cause, into: previous?.into ?? "installed", rescue: previous?.rescue ?? null, took: false });
  } else {
    const rescue = s.rescue;
    s.boots.push({ at, cause, into: rescue ? "rescue" : "installed", rescue });
    s.rescue = null;
    ctx.state.rescuePasswords.delete(s.serverNumber);
  }
  ctx.machines?.onBoot(s.serverNumber, s.boots[s.boots.length - 1]!);
}

/**
 * A reboot the running OS asked for itself (`reboot` in it, as the install script and the ssh-reboot
 * rung run): a boot as a reset causes, into the rescue when one is active; nothing for a server that
 * is off or unknown.
 */
export function rebootFromOs(ctx: FakeRobotContext, serverNumber: number): void {
  const s = ctx.state.server(serverNumber);
  if (!s?.poweredOn) return;
  boot(ctx, s, "reboot", Date.now());
  ctx.state.putServer(s);
}

/** The machine goes off (its SSH server with it). */
function powerOff(ctx: FakeRobotContext, s: FakeRobotServer): void {
  s.poweredOn = false;
  ctx.machines?.onPowerOff?.(s.serverNumber);
}

/** Applies a reset to the machine as Robot's reset types do (see the file header). */
function applyReset(ctx: FakeRobotContext, s: FakeRobotServer, type: string, now: number): void {
  s.resets.push({ type, at: now });
  switch (type) {
    case "sw":
    case "hw":
      // CTRL+ALT+DEL and the reset button do nothing to a machine that is off.
      if (s.poweredOn) boot(ctx, s, type, now);
      break;
    case "power":
      if (s.poweredOn) powerOff(ctx, s);
      else boot(ctx, s, type, now);
      break;
    case "power_long":
      powerOff(ctx, s);
      break;
    case "man":
      s.manualResetUntil = now + ctx.manualResetMs;
      boot(ctx, s, type, s.manualResetUntil);
      break;
  }
}

export function registerServers(app: FastifyInstance, ctx: FakeRobotContext): void {
  const server = (request: FastifyRequest) => serverParam(request, ctx.state);

  app.get("/server", async () => {
    const servers = ctx.state.servers();
    if (servers.length === 0) throw new RobotError(404, "SERVER_NOT_FOUND", "No server found");
    return servers.map((s) => ({ server: serverSummaryJson(s) }));
  });
  app.get("/server/:serverNumber", async (request) => ({ server: serverDetailJson(server(request)) }));
  app.post("/server/:serverNumber", async (request) => {
    const s = server(request);
    const name = formValue(formOf(request), "server_name");
    if (name === undefined) throw invalidInput(["server_name"]);
    // The fake's bound (the documentation states none): a printable name of at most 100 characters.
    if (name.length > 100 || [...name].some((c) => c.charCodeAt(0) < 0x20)) throw invalidInput([], ["server_name"]);
    s.name = name;
    return { server: serverDetailJson(ctx.state.putServer(s)) };
  });

  const resetOptions = (s: FakeRobotServer) => ({ ...serverIdentity(s), type: s.resetTypes });
  app.get("/reset", async () => {
    const servers = ctx.state.servers().filter((s) => s.resetTypes.length > 0);
    if (servers.length === 0) throw new RobotError(404, "NOT_FOUND", "No servers with reset option found");
    return servers.map((s) => ({ reset: resetOptions(s) }));
  });
  app.get("/reset/:serverNumber", async (request) => {
    const s = server(request);
    if (s.resetTypes.length === 0) throw new RobotError(404, "RESET_NOT_AVAILABLE", "The server has no reset option");
    return { reset: { ...resetOptions(s), operating_status: operatingStatus(s) } };
  });
  app.post("/reset/:serverNumber", async (request) => {
    const s = server(request);
    if (s.resetTypes.length === 0) throw new RobotError(404, "RESET_NOT_AVAILABLE", "The server has no reset option");
    const type = formValue(formOf(request), "type");
    if (type === undefined) throw invalidInput(["type"]);
    if (!s.resetTypes.includes(type)) throw invalidInput([], ["type"]);
    const now = Date.now();
    if (s.manualResetUntil > now) throw new RobotError(409, "RESET_MANUAL_ACTIVE", "There is already a running manual reset");
    applyReset(ctx, s, type, now);
    ctx.state.putServer(s);
    return { reset: { ...serverIdentity(s), type } };
  });

  app.get("/boot/:serverNumber", async (request) => {
    const s = server(request);
    const id = serverIdentity(s);
    const unavailable = { dist: null, arch: null, lang: null, active: false, password: null };
    return {
      boot: {
        rescue: rescueJson(ctx, s, s.rescue, s.rescue !== null, ctx.state.rescuePasswords.get(s.serverNumber) ?? null),
        // The fake installs only through the rescue system (installimage, part 2): the other boot
        // configurations are listed, as Robot lists them, with nothing to offer.
        linux: { ...id, ...unavailable, authorized_key: [], host_key: [] },
        vnc: { ...id, ...unavailable },
        windows: { ...id, ...unavailable },
        plesk: { ...id, ...unavailable, hostname: null },
        cpanel: { ...id, ...unavailable, hostname: null },
      },
    };
  });

  const rescuePath = "/boot/:serverNumber/rescue";
  app.get(rescuePath, async (request) => {
    const s = server(request);
    return { rescue: rescueJson(ctx, s, s.rescue, s.rescue !== null, ctx.state.rescuePasswords.get(s.serverNumber) ?? null) };
  });
  app.post(rescuePath, async (request, reply) => {
    const s = server(request);
    const form = formOf(request);
    const os = formValue(form, "os");
    const arch = formValue(form, "arch");
    const keyboard = formValue(form, "keyboard") ?? "us";
    const authorizedKeys = form.get("authorized_key") ?? [];
    if (os === undefined) throw invalidInput(["os"]);
    const invalid = [
      ...(RESCUE_OSES.includes(os) ? [] : ["os"]),
      ...(arch === undefined || ARCHES.map(String).includes(arch) ? [] : ["arch"]),
      ...(KEYBOARDS.includes(keyboard) ? [] : ["keyboard"]),
      // Each fingerprint must name a key uploaded to the account (POST /key).
      ...(authorizedKeys.every((f) => ctx.state.key(f) !== undefined) ? [] : ["authorized_key"]),
    ];
    if (invalid.length > 0) throw invalidInput([], invalid);
    // A new activation replaces a pending one (nodefleet deactivates first anyway).
    const password = randomBytes(12).toString("base64url");
    s.rescue = {
      os,
      keyboard,
      authorizedKeys: [...new Set(authorizedKeys)],
      passwordSha256: createHash("sha256").update(password).digest("hex"),
      activatedAt: Date.now(),
    };
    s.lastRescue = s.rescue;
    ctx.state.rescuePasswords.set(s.serverNumber, password);
    ctx.state.putServer(s);
    return reply.status(200).send({ rescue: rescueJson(ctx, s, s.rescue, true, password) });
  });
  app.delete(rescuePath, async (request) => {
    const s = server(request);
    s.rescue = null;
    ctx.state.rescuePasswords.delete(s.serverNumber);
    ctx.state.putServer(s);
    return { rescue: rescueJson(ctx, s, null, false, null) };
  });
  app.get(`${rescuePath}/last`, async (request) => {
    const s = server(request);
    if (!s.lastRescue) throw new RobotError(404, "BOOT_NOT_AVAILABLE", "No boot configuration available for this server");
    // The last activation's password is not shown again (hrobot-rs notes the same of Robot).
    return { rescue: rescueJson(ctx, s, s.lastRescue, sameRescue(s.rescue, s.lastRescue), null) };
  });
}

/** Whether two activations are the same one (records read back from disk are copies, not the same object). */
function sameRescue(a: FakeRobotRescue | null, b: FakeRobotRescue | null): boolean {
  return a !== null && b !== null && a.activatedAt === b.activatedAt && a.passwordSha256 === b.passwordSha256;
}
