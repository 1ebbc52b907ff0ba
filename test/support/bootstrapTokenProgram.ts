/**
 * A Pulumi program for the real-engine bootstrap test: nodefleet's BootstrapToken component for
 * each node in config `bootstraptest:nodes`, against the cluster of the secret config
 * `bootstraptest:kubeconfig` (through the Kubernetes provider plugin), exporting each node's k0s
 * join token as a secret.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { encodeK0sJoinToken } from "../../components/bootstrap/k0sJoinToken";
import { BootstrapToken } from "../../components/kubernetes/bootstrapToken";

export function runProgram(): Record<string, pulumi.Output<unknown>> {
  const config = new pulumi.Config("bootstraptest");
  const provider = new k8s.Provider("cluster", { kubeconfig: config.requireSecret("kubeconfig") });
  const apiServer = config.require("apiServer");
  const caCertificate = config.require("caCertificate");
  const outputs: Record<string, pulumi.Output<unknown>> = {};
  for (const node of config.requireObject<string[]>("nodes")) {
    const token = new BootstrapToken(`${node}-token`, { clusterKind: "k0s", ttlMinutes: 60, nodeName: node }, { providers: [provider] });
    outputs[`joinToken-${node}`] = pulumi.secret(token.token.apply((t) => encodeK0sJoinToken({ apiServer, caCertificate, token: t })));
    outputs[`expiration-${node}`] = token.expiration;
  }
  return outputs;
}
