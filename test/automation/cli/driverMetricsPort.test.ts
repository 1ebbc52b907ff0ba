/**
 * The Karpenter driver's default metrics port is the same in its code, its chart and the rendered
 * manifests, and is not the port `nodefleet serve` listens on by default (Karpenter's own default,
 * 8080, was): a driver run beside the service must be able to bind it.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { Command } from "commander";
import { parse } from "yaml";
import { registerServeCommand } from "../../../automation/cli/serveCommand";
import { REPOSITORY_ROOT } from "../../support/serveProcess";

const DRIVER = path.join(REPOSITORY_ROOT, "driver");

function read(...parts: string[]): string {
  return fs.readFileSync(path.join(DRIVER, ...parts), "utf8");
}

function serveDefaultPort(): number {
  const program = new Command("nodefleet");
  registerServeCommand(program);
  const port = program.commands.find((command) => command.name() === "serve")?.options.find((option) => option.long === "--port")
    ?.defaultValue as unknown;
  assert.equal(typeof port, "number", "serve declares a default --port");
  return port as number;
}

describe("the driver's default metrics port", () => {
  it("is one port in code, chart and manifests, and not serve's default port", () => {
    const inCode = /const defaultMetricsPort = "(\d+)"/.exec(read("cmd", "controller", "metricsport.go"))?.[1];
    const inChart = String((parse(read("charts", "nodefleet-karpenter", "values.yaml")) as { metricsPort: unknown }).metricsPort);
    const manifests = read("manifests", "nodefleet-karpenter.yaml");
    const inManifestEnv = /- name: METRICS_PORT\n\s+value: "(\d+)"/.exec(manifests)?.[1];
    const inManifestPort = /- name: http-metrics\n\s+containerPort: (\d+)/.exec(manifests)?.[1];
    assert.ok(inCode, "driver/cmd/controller/metricsport.go declares defaultMetricsPort");
    assert.deepEqual([inChart, inManifestEnv, inManifestPort], [inCode, inCode, inCode]);
    assert.notEqual(Number(inCode), serveDefaultPort());
    assert.match(
      read("cmd", "controller", "main.go"),
      /defaultMetricsPortUnlessSet\(\)\n\tctx, op := operator\.NewOperator\(\)/,
      "the default is set before Karpenter reads its options",
    );
  });
});
