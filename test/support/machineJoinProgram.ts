/**
 * A Pulumi program for the Elastic Metal machine join test: the pools' self-join shape (the script
 * on stdin of `bash -s`, pinned to the machine's host key, a secret stdin, `update` that records
 * only), one remote.Command against the machine config `machinejoin:*` names.
 */
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { RECORD_ONLY_UPDATE } from "../../components/bootstrap/sshConnection";

export function runProgram(): Record<string, pulumi.Output<unknown>> {
  const config = new pulumi.Config("machinejoin");
  const join = new command.remote.Command("join", {
    connection: {
      host: config.require("address"),
      port: 22,
      user: config.require("user"),
      privateKey: config.requireSecret("privateKey"),
      hostKey: config.require("hostKey"),
      dialErrorLimit: 2,
    },
    create: "bash -s",
    stdin: config.requireSecret("script"),
    update: RECORD_ONLY_UPDATE,
    logging: "stderr",
  });
  return { joinStderr: join.stderr };
}
