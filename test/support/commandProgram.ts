/**
 * A Pulumi program for the command provider plugin's real-engine test: one remote.Command against
 * the test's sshd that records each run in a log file on the "remote" side, one shaped like the
 * pools' self-join (script on stdin, `update` that records only), and one local.Command,
 * shaped by config `commandtest:*` so successive runs create, update, replace and delete them.
 */
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { RECORD_ONLY_UPDATE } from "../../components/bootstrap/sshConnection";

export function runProgram(): Record<string, pulumi.Output<unknown>> {
  const config = new pulumi.Config("commandtest");
  const log = config.require("log");
  const outputs: Record<string, pulumi.Output<unknown>> = {};
  if (config.getBoolean("remote") ?? true) {
    const stdin = config.require("stdin");
    // A failing script echoes its stdin first: an error that quoted the output would show it.
    const exit = config.getBoolean("fail") ? "; exit 3" : "";
    const remote = new command.remote.Command("remote", {
      connection: {
        host: "127.0.0.1",
        port: config.requireNumber("port"),
        user: config.require("user"),
        privateKey: config.requireSecret("privateKey"),
        hostKey: config.require("hostKey"),
        dialErrorLimit: 2,
      },
      // Each run appends what ran to the log, writes a line to stderr (the only stream `logging` shows),
      // then echoes its stdin: the outputs say what the script saw.
      create: `echo "create $NODEFLEET_TEST_RUN" >> ${log}; echo "to-stderr $NODEFLEET_TEST_RUN" >&2; cat${exit}`,
      update: `echo "update $NODEFLEET_TEST_RUN prev=$PULUMI_COMMAND_STDOUT" >> ${log}; echo "to-stderr $NODEFLEET_TEST_RUN" >&2; cat${exit}`,
      delete: `echo "delete prev=$PULUMI_COMMAND_STDOUT" >> ${log}`,
      environment: { NODEFLEET_TEST_RUN: config.require("run") },
      stdin: config.getBoolean("secretStdin") ? pulumi.secret(stdin) : stdin,
      triggers: [config.require("trigger")],
      logging: "stderr",
    });
    outputs.remoteStdout = remote.stdout;
    // The pools' self-join shape: the script on stdin of `bash -s`, re-run only when a trigger changes.
    new command.remote.Command("join", {
      connection: remote.connection,
      create: "bash -s",
      stdin: `echo "join $NODEFLEET_TEST_RUN" >> ${log}.join`,
      update: RECORD_ONLY_UPDATE,
      environment: { NODEFLEET_TEST_RUN: config.require("run") },
      triggers: [config.require("trigger")],
    });
  }
  const local = new command.local.Command("local", {
    create: `printf 'local %s' "$NODEFLEET_TEST_RUN"`,
    environment: { NODEFLEET_TEST_RUN: config.require("run") },
  });
  outputs.localStdout = local.stdout;
  return outputs;
}
