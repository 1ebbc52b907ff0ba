/**
 * cloud-init in the local cloud's machines (docs/local-cloud.md, "cloud-init in the machines").
 *
 * Every machine has a `cloud-init` stand-in whose `status` answers as cloud-init's own does
 * (cloudinit/cmd/status.py of cloud-init 22.4, read, not copied): from the systemd generator's
 * verdict of this boot (`/run/cloud-init/enabled` or `disabled`) and the run's `status.json` and
 * `result.json`; `--wait` polls until the run is neither "not run" nor "running". A machine boots
 * "disabled" (no datasource, as the generator decides); a machine whose server hands it user data
 * (an Elastic Metal server on an offer with the `cloud-init` tag) is enabled by its boot, which
 * runs the user data through the machine's sandbox as cloud-init would, in the background: stage
 * by stage (init-local, init, modules-config, modules-final, each in status.json), the modules
 * below once per instance (semaphores in /var/lib/cloud/instances/<id>/sem, so a reboot does not
 * run them again), output to /var/log/cloud-init-output.log, result.json and boot-finished last.
 *
 * Honoured, from a `#cloud-config` document (YAML 1.1, as cloud-init's PyYAML reads it):
 * - `write_files` (cc_write_files, init stage; `defer: true` entries in the final stage as
 *   cc_write_files_deferred): path, content, encoding (text/plain, b64/base64, gz/gzip and their
 *   +base64/+b64 forms), owner (default root:root), permissions (default 0644), append, defer;
 * - `runcmd` (cc_runcmd, config stage): written as a /bin/sh script (a string item as it is, a list
 *   item single-quoted word by word, as cloud-init's util.shellify), run by scripts_user in the
 *   final stage (cc_scripts_user: every executable of the instance's scripts directory, sorted; a
 *   failure is the stage's error).
 *
 * Anything else is refused loudly: another top-level key (module), another key or encoding in a
 * write_files entry, a runcmd item that is neither a string nor a list, user data that is not
 * `#cloud-config` (a `#!` script, `#include`, MIME multi-part, gzip). A refused run does nothing
 * but fail: `cloud-init status` says `error` with the refusal, the machine records it, and the
 * host says it (ScalewayMachines' log). Real cloud-init would warn and carry on; a stand-in that
 * silently skipped a module would let a test pass on a box that never did the work.
 */
import { spawn, spawnSync } from "node:child_process";
import { gunzipSync } from "node:zlib";
import { isMap, parseDocument } from "yaml";

/** The modules this stand-in runs; every other key of the user data is refused. */
export const HONOURED_CLOUD_INIT_MODULES = ["write_files", "runcmd"] as const;

/** Where the boot leaves the run's program inside the machine. */
const BOOT_PROGRAM_PATH = "/var/lib/nodefleet-machine/cloud-init-boot";
/** cloud-init's own paths. */
const RUN_DIR = "/run/cloud-init";
const DATA_DIR = "/var/lib/cloud/data";
/** Where the run's output goes, as Ubuntu's cloud-init configures `output: {all: ...}`. */
export const CLOUD_INIT_OUTPUT_LOG = "/var/log/cloud-init-output.log";
/** The run's result, on the machine's disk (result.json in /run links to it). */
export const CLOUD_INIT_RESULT_PATH = `${DATA_DIR}/result.json`;

/** User data this stand-in does not run (said in the machine's status and by the host). */
export class CloudConfigRefusal extends Error {
  override readonly name = "CloudConfigRefusal";
}

/** One write_files entry, decoded. */
interface PlannedFile {
  readonly path: string;
  readonly content: Buffer;
  readonly owner: string;
  readonly mode: number;
  readonly append: boolean;
  readonly defer: boolean;
}

/** What the user data asks for: files to write and the runcmd script (undefined: no runcmd key). */
export interface CloudConfigPlan {
  readonly files: readonly PlannedFile[];
  readonly runcmd: string | undefined;
}

const WRITE_FILES_KEYS = new Set(["path", "content", "encoding", "owner", "permissions", "append", "defer"]);

/** cloud-init's canonicalize_extraction: the decoding steps of an encoding, first to last. */
function extractions(encoding: unknown, index: number): Array<"base64" | "gzip"> {
  const name = encoding === undefined || encoding === null ? "" : String(encoding).trim().toLowerCase();
  if (name === "" || name === "text/plain") return [];
  if (name === "b64" || name === "base64") return ["base64"];
  if (name === "gz" || name === "gzip") return ["gzip"];
  if (["gz+base64", "gzip+base64", "gz+b64", "gzip+b64"].includes(name)) return ["base64", "gzip"];
  throw new CloudConfigRefusal(`write_files[${index}].encoding ${JSON.stringify(encoding)} is not one cloud-init knows`);
}

/** cloud-init's decode_perms: an integer as it is, a string in octal. */
function permissions(value: unknown, index: number): number {
  if (value === undefined || value === null) return 0o644;
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 0o7777) return value;
  if (typeof value === "string" && /^0?[0-7]{1,4}$/.test(value.trim())) return parseInt(value.trim(), 8);
  throw new CloudConfigRefusal(`write_files[${index}].permissions ${JSON.stringify(value)} is not an octal mode`);
}

function flag(value: unknown, field: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === "boolean") return value;
  throw new CloudConfigRefusal(`${field} ${JSON.stringify(value)} is not a boolean`);
}

function plannedFile(entry: unknown, index: number): PlannedFile {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry) || entry instanceof Uint8Array)
    throw new CloudConfigRefusal(`write_files[${index}] is not a mapping`);
  const fields = entry as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((k) => !WRITE_FILES_KEYS.has(k));
  if (unknown.length > 0)
    throw new CloudConfigRefusal(
      `write_files[${index}] has ${unknown.join(", ")}, which the stand-in does not honour (it honours ${[...WRITE_FILES_KEYS].join(", ")})`,
    );
  const path = fields.path;
  if (typeof path !== "string" || !path.startsWith("/") || path.includes("\0"))
    throw new CloudConfigRefusal(`write_files[${index}].path must be an absolute path`);
  const raw = fields.content ?? "";
  let content: Buffer =
    raw instanceof Uint8Array ? Buffer.from(raw) : typeof raw === "string" ? Buffer.from(raw, "utf8") : Buffer.from(String(raw), "utf8");
  for (const step of extractions(fields.encoding, index))
    content = step === "base64" ? Buffer.from(content.toString("latin1"), "base64") : gunzipSync(content);
  const owner = fields.owner ?? "root:root";
  if (typeof owner !== "string" || !/^[a-z_][a-z0-9_-]*(:[a-z_][a-z0-9_-]*)?$/i.test(owner))
    throw new CloudConfigRefusal(`write_files[${index}].owner ${JSON.stringify(owner)} is not user[:group]`);
  return {
    path,
    content,
    owner,
    mode: permissions(fields.permissions, index),
    append: flag(fields.append, `write_files[${index}].append`),
    defer: flag(fields.defer, `write_files[${index}].defer`),
  };
}

/** cloud-init's util.shellify: a /bin/sh script of the runcmd items. */
function shellify(items: unknown): string {
  if (!Array.isArray(items)) throw new CloudConfigRefusal("runcmd is not a list");
  const quote = (word: unknown) => `'${String(word).replace(/'/g, `'\\''`)}'`;
  const lines = items.flatMap((item, index) => {
    if (item === null) return [];
    if (typeof item === "string") return [item];
    if (Array.isArray(item) && item.every((w) => ["string", "number", "boolean"].includes(typeof w))) return [item.map(quote).join(" ")];
    throw new CloudConfigRefusal(`runcmd[${index}] is neither a string nor a list of words`);
  });
  return `#!/bin/sh\n${lines.map((line) => `${line}\n`).join("")}`;
}

/**
 * The plan of a server's user data (as the API stores it, decoded from base64), or a refusal
 * naming what the stand-in does not run. No user data: nothing to do.
 */
export function planUserData(userData: string | null | undefined): CloudConfigPlan {
  if (userData === null || userData === undefined || userData.trim() === "") return { files: [], runcmd: undefined };
  const firstLine = userData.slice(0, userData.indexOf("\n") === -1 ? undefined : userData.indexOf("\n")).trim();
  if (firstLine !== "#cloud-config")
    throw new CloudConfigRefusal(
      `user data starting ${JSON.stringify(firstLine.slice(0, 40))} is not #cloud-config, the only format the stand-in runs`,
    );
  const document = parseDocument(userData, { version: "1.1", uniqueKeys: true });
  if (document.errors.length > 0) throw new CloudConfigRefusal(`the #cloud-config is not valid YAML: ${document.errors[0]!.message}`);
  if (document.contents !== null && !isMap(document.contents)) throw new CloudConfigRefusal("the #cloud-config is not a mapping");
  const config = (document.toJS({ maxAliasCount: 100 }) ?? {}) as Record<string, unknown>;
  const honoured = new Set<string>(HONOURED_CLOUD_INIT_MODULES);
  const unknown = Object.keys(config).filter((key) => !honoured.has(key));
  if (unknown.length > 0)
    throw new CloudConfigRefusal(
      `the #cloud-config asks for ${unknown.join(", ")}, which the stand-in does not run (it honours ${HONOURED_CLOUD_INIT_MODULES.join(", ")})`,
    );
  const writeFiles = config.write_files ?? [];
  if (!Array.isArray(writeFiles)) throw new CloudConfigRefusal("write_files is not a list");
  return {
    files: writeFiles.map(plannedFile),
    runcmd: config.runcmd === undefined ? undefined : shellify(config.runcmd),
  };
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The bash that writes one planned file, as cc_write_files does (parents created, mode, owner). */
function writeFileCommands(file: PlannedFile, module: string): string {
  const path = shellQuote(file.path);
  return [
    `mkdir -p "$(dirname ${path})"`,
    `printf '%s' ${shellQuote(file.content.toString("base64"))} | base64 -d ${file.append ? ">>" : ">"} ${path}`,
    `chmod ${file.mode.toString(8).padStart(4, "0")} ${path}`,
    `chown ${shellQuote(file.owner)} ${path}`,
    `record cloud-init ${module} ${path}`,
  ].join("\n");
}

/**
 * The program one boot of the machine runs as cloud-init: the stages in order, each in
 * status.json; the plan's modules once per instance; result.json and boot-finished at the end.
 * Exits 1 when the run ended in error.
 */
function renderCloudInitBoot(plan: CloudConfigPlan | CloudConfigRefusal, instanceId: string): string {
  if (!/^[A-Za-z0-9-]+$/.test(instanceId)) throw new Error(`instance id ${JSON.stringify(instanceId)}: letters, digits and hyphens`);
  const refusal = plan instanceof CloudConfigRefusal ? plan.message : undefined;
  const modules = plan instanceof CloudConfigRefusal ? { files: [], runcmd: undefined } : plan;
  const early = modules.files.filter((f) => !f.defer);
  const deferred = modules.files.filter((f) => f.defer);
  const body = (lines: string[]) => (lines.length > 0 ? lines.join("\n") : ":");
  return `#!/bin/bash
# nodefleet machine: cloud-init's run at this boot (automation/local/machines/machineCloudInit.ts).
set -u
exec >>${CLOUD_INIT_OUTPUT_LOG} 2>&1 </dev/null
. /usr/lib/nodefleet-machine/record.sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
inst=/var/lib/cloud/instances/${instanceId}
mkdir -p ${RUN_DIR} ${DATA_DIR} "$inst/sem" "$inst/scripts"
ln -sfn "$inst" /var/lib/cloud/instance
rm -f ${DATA_DIR}/status.json ${DATA_DIR}/result.json ${RUN_DIR}/status.json ${RUN_DIR}/result.json
echo "Cloud-init v. 22.4 (nodefleet machine stand-in) running at $(date -u)"
# status.json as cloud-init's status_wrapper keeps it: the current stage, each stage's start, end and errors.
stages="init-local init modules-init modules-config modules-final"
declare -A started finished errors
current=null
for s in $stages; do started[$s]=null; finished[$s]=null; errors[$s]=""; done
write_status() {
  local s entries=""
  for s in $stages; do
    entries="$entries, \\"$s\\": {\\"errors\\": [\${errors[$s]}], \\"start\\": \${started[$s]}, \\"finished\\": \${finished[$s]}}"
  done
  printf '{"v1": {"datasource": null, "stage": %s%s}}\\n' "$current" "$entries" > ${DATA_DIR}/status.json.new
  mv ${DATA_DIR}/status.json.new ${DATA_DIR}/status.json
  ln -sfn ${DATA_DIR}/status.json ${RUN_DIR}/status.json
}
begin() { current="\\"$1\\""; started[$1]=$(date +%s.%N); write_status; }
end() { current=null; finished[$1]=$(date +%s.%N); write_status; }
# fail STAGE MESSAGE: one error of the stage (MESSAGE is JSON-safe).
fail() { errors[$1]="\${errors[$1]:+\${errors[$1]}, }\\"$2\\""; }
# once MODULE FUNCTION: a per-instance module runs once; its semaphore is taken before it runs, as cloud-init's.
once() {
  if [ -e "$inst/sem/config_$1" ]; then echo "module $1 already ran for this instance"; return 0; fi
  : > "$inst/sem/config_$1"
  "$2"
}

begin init-local
end init-local

begin init
${
  refusal !== undefined
    ? `record cloud-init refused ${shellQuote(refusal)}
fail init ${shellQuote(JSON.stringify(`nodefleet machine: ${refusal}`).slice(1, -1))}
echo ${shellQuote(`cloud-init stand-in: refused the user data: ${refusal}`)}`
    : `write_files() {
${body(early.map((f) => writeFileCommands(f, "write_files")))}
}
once write_files write_files`
}
end init

begin modules-config
${
  modules.runcmd !== undefined
    ? `runcmd() {
  printf '%s' ${shellQuote(Buffer.from(modules.runcmd).toString("base64"))} | base64 -d > "$inst/scripts/runcmd"
  chmod 0700 "$inst/scripts/runcmd"
  record cloud-init runcmd "$inst/scripts/runcmd"
}
once runcmd runcmd`
    : ""
}
end modules-config

begin modules-final
write_files_deferred() {
${body(deferred.map((f) => writeFileCommands(f, "write_files_deferred")))}
}
once write_files_deferred write_files_deferred
# scripts_user: every executable script of the instance, sorted; a failure fails the module.
scripts_user() {
  local script failed=() attempted=0
  for script in "$inst"/scripts/*; do
    [ -f "$script" ] && [ -x "$script" ] || continue
    attempted=$((attempted + 1))
    record cloud-init scripts_user "$(basename "$script")"
    if ! "$script"; then failed+=("$(basename "$script")"); fi
  done
  if [ "\${#failed[@]}" -gt 0 ]; then
    local joined
    joined=$(IFS=,; echo "\${failed[*]}")
    fail modules-final "('scripts_user', RuntimeError('Runparts: \${#failed[@]} failures ($joined) in $attempted attempted commands'))"
  fi
}
${refusal === undefined ? "once scripts_user scripts_user" : ""}
end modules-final

all=""
for s in $stages; do if [ -n "\${errors[$s]}" ]; then all="\${all:+$all, }\${errors[$s]}"; fi; done
printf '{"v1": {"datasource": null, "errors": [%s]}}\\n' "$all" > ${CLOUD_INIT_RESULT_PATH}.new
mv ${CLOUD_INIT_RESULT_PATH}.new ${CLOUD_INIT_RESULT_PATH}
ln -sfn ${CLOUD_INIT_RESULT_PATH} ${RUN_DIR}/result.json
echo "$(cut -d' ' -f1 /proc/uptime) - $(date -u) - v. 22.4" > "$inst/boot-finished"
if [ -n "$all" ]; then
  record cloud-init final error
  echo "Cloud-init finished with errors: $all"
  exit 1
fi
record cloud-init final done
echo "Cloud-init v. 22.4 finished at $(date -u)"
`;
}

/**
 * `cloud-init` in every machine: `status [--wait] [--long] [--format tabular|json|yaml]`, as
 * cloudinit/cmd/status.py reports it; anything else is refused (exit 1, said on stderr).
 */
export const CLOUD_INIT_STAND_IN = `#!/usr/bin/python3
# nodefleet machine stand-in for cloud-init (automation/local/machines/machineCloudInit.ts): status only.
import json, os, sys, time

RUN = "${RUN_DIR}"

def boot_status():
    if os.path.exists("/etc/cloud/cloud-init.disabled"):
        return "disabled-by-marker-file", "Cloud-init disabled by /etc/cloud/cloud-init.disabled"
    if os.path.exists(RUN + "/disabled"):
        return "disabled-by-generator", "Cloud-init disabled by cloud-init-generator"
    if os.path.exists(RUN + "/enabled"):
        return "enabled-by-generator", "Cloud-init enabled by systemd cloud-init-generator"
    return "unknown", "Systemd generator may not have run yet."

def load(name):
    try:
        with open(os.path.join(RUN, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def details():
    code, detail = boot_status()
    state = "disabled" if code.startswith("disabled") else "not run"
    status = load("status.json")
    if status is not None and load("result.json") is None:
        state = "running"
    v1 = (status or {}).get("v1", {})
    errors, latest = [], 0
    for key, value in sorted(v1.items()):
        if key == "stage":
            if value:
                state, detail = "running", "Running in stage: " + value
        elif isinstance(value, dict):
            errors.extend(value.get("errors") or [])
            start, finished = value.get("start") or 0, value.get("finished") or 0
            if start and not finished:
                state = "running"
            latest = max(latest, start, finished)
    if errors:
        state, detail = "error", "\\n".join(errors)
    elif state == "not run" and latest > 0:
        state = "done"
    last = time.strftime("%a, %d %b %Y %H:%M:%S %z", time.gmtime(latest)) if latest else ""
    return {"status": state, "boot_status_code": code, "detail": detail, "errors": errors, "last_update": last, "datasource": ""}

args = sys.argv[1:]
if not args or args[0] != "status":
    sys.stderr.write("cloud-init: the nodefleet machine stand-in answers only 'cloud-init status' (not %r)\\n" % " ".join(args))
    sys.exit(1)
wait = "--wait" in args or "-w" in args
long = "--long" in args or "-l" in args
fmt = args[args.index("--format") + 1] if "--format" in args and args.index("--format") + 1 < len(args) else "tabular"
d = details()
while wait and d["status"] in ("not run", "running"):
    if fmt == "tabular":
        sys.stdout.write(".")
        sys.stdout.flush()
    time.sleep(0.25)
    d = details()
if fmt == "json":
    print(json.dumps(d, indent=2, sort_keys=True))
elif fmt == "yaml":
    for key in sorted(d):
        print("%s: %s" % (key, json.dumps(d[key])))
else:
    print(("\\n" if wait else "") + "status: " + d["status"])
    if long:
        print("boot_status_code: " + d["boot_status_code"])
        if d["last_update"]:
            print("last_update: " + d["last_update"])
        print("detail:\\n" + d["detail"])
sys.exit(1 if d["status"] == "error" else 0)
`;

/** The shell lines the machine's boot runs for cloud-init's generator when no datasource is found (every machine's default). */
export function cloudInitGeneratorDisabled(mergedRoot: string): string {
  return `mkdir -p "${mergedRoot}${RUN_DIR}" && : > "${mergedRoot}${RUN_DIR}/disabled"`;
}

/** One boot's cloud-init run, started in the machine. */
export interface CloudInitRun {
  /** Why the user data was not run, if it was refused (the run then ends in error). */
  readonly refusal?: string;
  /** Resolves when the run ends: its exit code (0: done; 1: error), or null when the machine stopped it. */
  readonly ended: Promise<number | null>;
}

/**
 * Enables cloud-init in the booted machine (as the generator does when the datasource has user
 * data), leaves it the program of this boot's run and starts the run in the background, inside
 * the machine (its session command: the host never writes the machine's mounted upper layer). The
 * run ends with the machine, at the latest.
 */
export function startCloudInit(session: string, userData: string | null, instanceId: string): CloudInitRun {
  let plan: CloudConfigPlan | CloudConfigRefusal;
  try {
    plan = planUserData(userData);
  } catch (error) {
    if (!(error instanceof CloudConfigRefusal)) throw error;
    plan = error;
  }
  const program = renderCloudInitBoot(plan, instanceId);
  const env = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };
  const prepared = spawnSync(session, [], {
    input: program,
    encoding: "utf8",
    timeout: 30_000,
    env: {
      ...env,
      SSH_ORIGINAL_COMMAND: `umask 077; mkdir -p ${RUN_DIR} "$(dirname ${BOOT_PROGRAM_PATH})" && cat > ${BOOT_PROGRAM_PATH} && rm -f ${RUN_DIR}/disabled && : > ${RUN_DIR}/enabled`,
    },
  });
  if (prepared.status !== 0) throw new Error(`preparing cloud-init failed: ${prepared.stderr || prepared.error?.message}`);
  const run = spawn(session, [], { stdio: "ignore", env: { ...env, SSH_ORIGINAL_COMMAND: `exec /bin/bash ${BOOT_PROGRAM_PATH}` } });
  const ended = new Promise<number | null>((resolve) => {
    run.once("error", () => resolve(null));
    run.once("exit", (code) => resolve(code));
  });
  return { ...(plan instanceof CloudConfigRefusal ? { refusal: plan.message } : {}), ended };
}
