/**
 * The service's Helm chart (deploy/charts/nodefleet): rendered with the toolchain's helm for several
 * value sets (defaults, HTTPS, existing Secrets, Secrets the chart creates, the shared mode with and
 * without Temporal, incomplete shared and Temporal values refused),
 * checked field by field against what the image and the service need (a read-only root filesystem
 * with the image's writable paths mounted, probes on the service's routes and scheme, credentials
 * only by Secret reference, env names the service reads), then applied with a server-side dry run
 * (`kubectl apply --server-side --dry-run=server`) to the local control plane, whose admission and
 * schema validation refuse what a cluster would refuse. No ServiceMonitor CRD is at hand (the
 * prometheus-operator module is not in the Go module cache, and its CRD is not copied into the
 * repository), so the dry runs render with the ServiceMonitor off and its rendering is checked
 * here on its own.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { findTool } from "../../automation/engine/toolchain";
import { type ControlPlane, startControlPlane } from "../../automation/local/controlPlane";
import { kube } from "../../automation/local/kubeClient";
import { REPOSITORY_ROOT } from "../support/serveProcess";
import { missingTools, skipUnlessAvailable } from "../support/toolchainRequirement";

const CHART = join(REPOSITORY_ROOT, "deploy", "charts", "nodefleet");
const CONTAINERFILE = join(REPOSITORY_ROOT, "deploy", "Containerfile");
const NAMESPACE = "nodefleet";
const RELEASE = "nodefleet";

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}

interface Probe {
  httpGet: { path: string; port: string | number; scheme?: string };
}

interface Container {
  name: string;
  args: string[];
  env: EnvVar[];
  ports: Array<{ name: string; containerPort: number }>;
  livenessProbe: Probe;
  readinessProbe: Probe;
  securityContext: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
  };
  volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean; subPath?: string }>;
}

interface Volume {
  name: string;
  emptyDir?: object;
  configMap?: { name: string };
  secret?: { secretName: string; items?: Array<{ key: string; path: string }> };
}

interface StatefulSet extends Manifest {
  spec: {
    replicas: number;
    template: {
      spec: {
        securityContext: { runAsNonRoot?: boolean; fsGroup?: number; seccompProfile?: { type: string } };
        containers: Container[];
        volumes: Volume[];
      };
    };
    volumeClaimTemplates?: Array<{ metadata: { name: string } }>;
  };
}

interface Rendered {
  readonly status: number | null;
  readonly output: string;
  readonly manifests: Manifest[];
}

let workDir: string;

function helmEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HELM_CACHE_HOME: join(workDir, "helm", "cache"),
    HELM_CONFIG_HOME: join(workDir, "helm", "config"),
    HELM_DATA_HOME: join(workDir, "helm", "data"),
  };
}

let renders = 0;
/** `helm template` of the chart with `values` (from a file, as an operator passes them). */
function render(values: Record<string, unknown>): Rendered {
  const valuesFile = join(workDir, `values-${++renders}.yaml`);
  writeFileSync(valuesFile, stringify(values), { mode: 0o600 });
  const result = spawnSync(findTool("helm")!, ["template", RELEASE, CHART, "--namespace", NAMESPACE, "--values", valuesFile], {
    env: helmEnv(),
    encoding: "utf8",
  });
  const manifests =
    result.status === 0
      ? parseAllDocuments(result.stdout)
          .map((doc) => doc.toJS() as Manifest | null)
          .filter((m): m is Manifest => m !== null)
      : [];
  return { status: result.status, output: `${result.stdout}${result.stderr}`, manifests };
}

function rendered(values: Record<string, unknown>): Manifest[] {
  const result = render(values);
  assert.equal(result.status, 0, `helm template failed:\n${result.output}`);
  return result.manifests;
}

function only<T extends Manifest>(manifests: Manifest[], kind: string): T {
  const found = manifests.filter((m) => m.kind === kind);
  assert.equal(found.length, 1, `expected one ${kind}, got ${found.map((m) => m.metadata.name).join(", ") || "none"}`);
  return found[0] as T;
}

function serviceContainer(manifests: Manifest[]): { pod: StatefulSet["spec"]["template"]["spec"]; container: Container } {
  const pod = only<StatefulSet>(manifests, "StatefulSet").spec.template.spec;
  assert.equal(pod.containers.length, 1);
  return { pod, container: pod.containers[0]! };
}

function envOf(container: Container, name: string): EnvVar | undefined {
  return container.env.find((e) => e.name === name);
}

function secretRef(container: Container, name: string): { name: string; key: string; optional?: boolean } {
  const variable = envOf(container, name);
  assert.ok(variable, `${name} is not set`);
  assert.equal(variable.value, undefined, `${name} is a literal value, not a Secret reference`);
  assert.ok(variable.valueFrom?.secretKeyRef, `${name} is not from a Secret`);
  return variable.valueFrom.secretKeyRef;
}

/** What the image needs writable: its HOME, /tmp and the data directory its command names (deploy/Containerfile). */
function imageWritablePaths(): { home: string; dataDir: string; paths: string[] } {
  const text = readFileSync(CONTAINERFILE, "utf8");
  const home = /^\s*HOME=(\S+)/m.exec(text)?.[1];
  const cmd = /^CMD (\[.*\])$/m.exec(text)?.[1];
  assert.ok(home && cmd, "the Containerfile sets HOME and a CMD");
  const args = JSON.parse(cmd) as string[];
  const dataDir = args[args.indexOf("--data-dir") + 1];
  assert.ok(dataDir, "the Containerfile's CMD names --data-dir");
  return { home, dataDir, paths: [home, "/tmp", dataDir] };
}

/** The first-column names of docs/environment.md's table. */
function documentedVariables(): Set<string> {
  const names = new Set<string>();
  for (const line of readFileSync(join(REPOSITORY_ROOT, "docs", "environment.md"), "utf8").split("\n")) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    for (const match of first?.matchAll(/`([A-Z0-9_]+)`/g) ?? []) names.add(match[1]!);
  }
  return names;
}

const TLS_VALUES = {
  stacks: ["prod"],
  project: { stackFiles: { "Pulumi.prod.yaml": "config:\n  nodefleet:cluster:\n    id: prod\n" } },
  tls: { enabled: true, secretName: "nodefleet-tls" },
  driverServiceAccount: "karpenter/nodefleet-karpenter",
};
const EXISTING_SECRETS_VALUES = {
  stacks: ["prod-*", "staging"],
  project: { existingConfigMap: "fleet-project" },
  cloudCredentials: { existingSecret: "cloud-credentials" },
  apiTokens: { existingSecret: "api-tokens", key: "tokens" },
  passphrase: { existingSecret: "pulumi-passphrase", key: "passphrase" },
  engineState: {
    backendUrl: "s3://fleet-state/prod?endpoint=fsn1.your-objectstorage.com&region=fsn1",
    existingSecret: "state-credentials",
  },
};
/** Several replicas in the shared mode: claims in PostgreSQL, state in object storage, one passphrase and token set. */
const SHARED_VALUES = {
  ...EXISTING_SECRETS_VALUES,
  replicas: 3,
  database: { existingSecret: "fleet-database", urlKey: "uri" },
};
/** The shared mode with the engine runs on Temporal, over mTLS with a CA of its own. */
const TEMPORAL_VALUES = {
  ...SHARED_VALUES,
  temporal: {
    address: "temporal-frontend.temporal:7233",
    namespace: "fleet-prod",
    taskQueue: "fleet-prod-runs",
    tls: { enabled: true, existingSecret: "temporal-client", keys: ["ca.crt", "tls.crt", "tls.key"] },
  },
};
/** Two clusters with credentials of their own, the rest the service's. */
const PER_CLUSTER_VALUES = {
  cloudCredentials: {
    existingSecret: "cloud-credentials",
    perCluster: { "prod-eu": "prod-eu-credentials", staging: "staging-credentials" },
  },
};
const CHART_SECRETS_VALUES = {
  cloudCredentials: { values: { HCLOUD_TOKEN: "h".repeat(64), HROBOT_USER: "robot", HROBOT_PASSWORD: "secret-password" } },
  apiTokens: { value: "prod:0123456789abcdef0123" },
  passphrase: { value: "correct horse battery staple" },
  pulumiBackendUrl: "file:///var/lib/nodefleet/git-backend",
  networkPolicy: { enabled: true, ingressFrom: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "karpenter" } } }] },
};

describe("the service's Helm chart (deploy/charts/nodefleet)", function () {
  this.timeout(120_000);

  before(function () {
    skipUnlessAvailable(this, missingTools("helm"));
    workDir = mkdtempSync(join(tmpdir(), "nodefleet-service-chart-"));
    mkdirSync(join(workDir, "helm"));
  });
  after(() => {
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  describe("rendered", () => {
    it("passes helm lint --strict", () => {
      const result = spawnSync(findTool("helm")!, ["lint", "--strict", CHART], { env: helmEnv(), encoding: "utf8" });
      assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
    });

    it("refuses no replica, and several without every piece of the shared mode, naming each missing one", () => {
      assert.match(render({ replicas: 0 }).output, /replicas is 0, but must be 1 or more/);
      const bare = render({ replicas: 2 });
      assert.notEqual(bare.status, 0, "two replicas rendered without the shared mode");
      assert.match(
        bare.output,
        /replicas is 2, which needs the shared mode; missing: database\.existingSecret .*; engineState\.backendUrl, an s3:\/\/ URL .*; passphrase .*; apiTokens /,
      );
      assert.match(bare.output, /docs\/deploy\.md, "Replicas"/);
      // Every piece but one: only that one is named.
      const { database: _database, ...withoutDatabase } = SHARED_VALUES;
      assert.match(render(withoutDatabase).output, /missing: database\.existingSecret \(claims and engine runs in PostgreSQL\)\. With/);
      assert.match(
        render({ ...SHARED_VALUES, engineState: { backendUrl: "file:///var/lib/state" } }).output,
        /missing: engineState\.backendUrl, an s3:\/\/ URL/,
      );
      assert.match(
        render({ ...SHARED_VALUES, engine: "simulated" }).output,
        /missing: engine automation or "" \(the simulated cloud lives in one pod\)/,
      );
    });

    it("runs several replicas in the shared mode: the database URL from its Secret, replicas spread over nodes", () => {
      const manifests = rendered(SHARED_VALUES);
      const statefulSet = only<StatefulSet>(manifests, "StatefulSet");
      assert.equal((statefulSet.spec as unknown as { replicas: number }).replicas, 3);
      const { pod, container } = serviceContainer(manifests);
      assert.deepEqual(secretRef(container, "NODEFLEET_DATABASE_URL"), { name: "fleet-database", key: "uri" });
      const spread = (pod as unknown as { topologySpreadConstraints?: Array<Record<string, unknown>> }).topologySpreadConstraints;
      assert.equal(spread?.length, 1);
      assert.equal(spread?.[0]?.topologyKey, "kubernetes.io/hostname");
      // One replica: no database variable, no spread.
      const single = serviceContainer(rendered({}));
      assert.equal(envOf(single.container, "NODEFLEET_DATABASE_URL"), undefined);
      assert.equal((single.pod as unknown as { topologySpreadConstraints?: unknown }).topologySpreadConstraints, undefined);
    });

    it("hands the engine runs to Temporal when temporal.address is set, with its namespace, task queue and TLS files", () => {
      const temporalVariables = (container: Container) =>
        Object.fromEntries(container.env.filter((e) => e.name.startsWith("NODEFLEET_TEMPORAL_")).map((e) => [e.name, e.value]));
      const { pod, container } = serviceContainer(rendered(TEMPORAL_VALUES));
      assert.deepEqual(temporalVariables(container), {
        NODEFLEET_TEMPORAL_ADDRESS: "temporal-frontend.temporal:7233",
        NODEFLEET_TEMPORAL_NAMESPACE: "fleet-prod",
        NODEFLEET_TEMPORAL_TASK_QUEUE: "fleet-prod-runs",
        NODEFLEET_TEMPORAL_TLS: "true",
        NODEFLEET_TEMPORAL_TLS_CA_FILE: "/etc/nodefleet/temporal-tls/ca.crt",
        NODEFLEET_TEMPORAL_TLS_CERT_FILE: "/etc/nodefleet/temporal-tls/tls.crt",
        NODEFLEET_TEMPORAL_TLS_KEY_FILE: "/etc/nodefleet/temporal-tls/tls.key",
      });
      assert.deepEqual(secretRef(container, "NODEFLEET_DATABASE_URL"), { name: "fleet-database", key: "uri" });
      // The Secret, read-only, with only the keys named: each file a variable points at is one of them.
      const mount = container.volumeMounts.find((m) => m.mountPath === "/etc/nodefleet/temporal-tls");
      assert.ok(mount?.readOnly, "the Temporal TLS Secret is mounted read-only");
      assert.deepEqual(pod.volumes.find((v) => v.name === mount.name)?.secret, {
        secretName: "temporal-client",
        items: ["ca.crt", "tls.crt", "tls.key"].map((key) => ({ key, path: key })),
      });

      // The defaults for namespace and task queue, plain gRPC: no TLS variable, no mount.
      const plain = serviceContainer(rendered({ database: { existingSecret: "fleet-database" }, temporal: { address: "10.0.0.7:7233" } }));
      assert.deepEqual(temporalVariables(plain.container), {
        NODEFLEET_TEMPORAL_ADDRESS: "10.0.0.7:7233",
        NODEFLEET_TEMPORAL_NAMESPACE: "default",
        NODEFLEET_TEMPORAL_TASK_QUEUE: "nodefleet-stack-runs",
      });
      assert.equal(
        plain.pod.volumes.find((v) => v.name === mount.name),
        undefined,
      );
      // TLS on the system's roots, a CA alone, a client certificate alone.
      const withTls = (tls: Record<string, unknown>) =>
        temporalVariables(
          serviceContainer(rendered({ database: { existingSecret: "db" }, temporal: { address: "[fd00::7]:7233", tls } })).container,
        );
      assert.deepEqual(withTls({ enabled: true }), {
        NODEFLEET_TEMPORAL_ADDRESS: "[fd00::7]:7233",
        NODEFLEET_TEMPORAL_NAMESPACE: "default",
        NODEFLEET_TEMPORAL_TASK_QUEUE: "nodefleet-stack-runs",
        NODEFLEET_TEMPORAL_TLS: "true",
      });
      const caOnly = withTls({ enabled: true, existingSecret: "temporal-ca", keys: ["ca.crt"] });
      assert.equal(caOnly.NODEFLEET_TEMPORAL_TLS_CA_FILE, "/etc/nodefleet/temporal-tls/ca.crt");
      assert.equal("NODEFLEET_TEMPORAL_TLS_CERT_FILE" in caOnly || "NODEFLEET_TEMPORAL_TLS_KEY_FILE" in caOnly, false);
      const mtlsOnly = withTls({ enabled: true, existingSecret: "temporal-client", keys: ["tls.key", "tls.crt"] });
      assert.equal("NODEFLEET_TEMPORAL_TLS_CA_FILE" in mtlsOnly, false);
      assert.equal(mtlsOnly.NODEFLEET_TEMPORAL_TLS_KEY_FILE, "/etc/nodefleet/temporal-tls/tls.key");

      // By default: runs in process, nothing of Temporal's.
      for (const values of [{}, SHARED_VALUES]) {
        const byDefault = serviceContainer(rendered(values));
        assert.deepEqual(temporalVariables(byDefault.container), {});
        assert.equal(
          byDefault.container.volumeMounts.find((m) => m.mountPath === "/etc/nodefleet/temporal-tls"),
          undefined,
        );
      }
    });

    it("refuses Temporal values the service would refuse, and TLS pieces that do not fit together, naming the value", () => {
      const withDatabase = (temporal: Record<string, unknown>) => render({ database: { existingSecret: "db" }, temporal });
      const refusals: Array<[Rendered, RegExp]> = [
        [render({ temporal: { address: "temporal:7233" } }), /temporal\.address needs database\.existingSecret/],
        [withDatabase({ address: "temporal" }), /temporal\.address is "temporal", not HOST:PORT/],
        [withDatabase({ address: "http://temporal:7233" }), /temporal\.address is "http:\/\/temporal:7233", not HOST:PORT/],
        [withDatabase({ address: "temporal:72330" }), /temporal\.address is "temporal:72330": its port must be 1 to 65535/],
        [withDatabase({ address: "temporal:0" }), /temporal\.address is "temporal:0": its port must be 1 to 65535/],
        [withDatabase({ address: "temporal:7233", namespace: "fleet prod" }), /temporal\.namespace is "fleet prod", not a name/],
        [withDatabase({ address: "temporal:7233", taskQueue: "" }), /temporal\.taskQueue is "", not a name/],
        [render({ temporal: { tls: { enabled: true } } }), /temporal\.tls is set, but temporal\.address is empty/],
        [
          withDatabase({ address: "temporal:7233", tls: { enabled: true, existingSecret: "temporal-client", keys: ["tls.crt"] } }),
          /temporal\.tls\.keys names one of tls\.crt and tls\.key: a client certificate needs its key/,
        ],
        [
          withDatabase({
            address: "temporal:7233",
            tls: { enabled: true, existingSecret: "temporal-client", keys: ["ca.crt", "tls.key"] },
          }),
          /temporal\.tls\.keys names one of tls\.crt and tls\.key/,
        ],
        [
          withDatabase({ address: "temporal:7233", tls: { enabled: true, existingSecret: "temporal-client", keys: ["ca.pem"] } }),
          /temporal\.tls\.keys has "ca\.pem": the Secret's keys are among ca\.crt, tls\.crt, tls\.key/,
        ],
        [
          withDatabase({ address: "temporal:7233", tls: { enabled: true, existingSecret: "temporal-client" } }),
          /temporal\.tls\.existingSecret needs temporal\.tls\.keys/,
        ],
        [
          withDatabase({ address: "temporal:7233", tls: { enabled: true, keys: ["ca.crt"] } }),
          /temporal\.tls\.keys needs temporal\.tls\.existingSecret/,
        ],
        [
          withDatabase({ address: "temporal:7233", tls: { existingSecret: "temporal-client", keys: ["ca.crt"] } }),
          /temporal\.tls\.existingSecret needs temporal\.tls\.enabled/,
        ],
      ];
      for (const [result, message] of refusals) {
        assert.notEqual(result.status, 0, `rendered, expected ${message}`);
        assert.match(result.output, message);
      }
    });

    it("refuses HTTPS without a certificate Secret, unknown credential names, misnamed stack files and state credentials without a backend", () => {
      assert.match(render({ tls: { enabled: true } }).output, /tls\.enabled needs tls\.secretName/);
      assert.match(render({ cloudCredentials: { values: { HCLOUD_TOKN: "x" } } }).output, /cloudCredentials\.values has HCLOUD_TOKN/);
      assert.match(
        render({ project: { stackFiles: { "prod.yaml": "" } } }).output,
        /each key is a stack file's name, Pulumi\.<stack>\.yaml/,
      );
      assert.match(render({ engine: "fast" }).output, /engine is "fast"/);
      assert.match(
        render({ engineState: { existingSecret: "state-credentials" } }).output,
        /engineState\.existingSecret needs engineState\.backendUrl/,
      );
    });

    it("runs one non-root replica on a read-only root filesystem, every capability dropped, seccomp RuntimeDefault", () => {
      const manifests = rendered({});
      const statefulSet = only<StatefulSet>(manifests, "StatefulSet");
      assert.equal(statefulSet.spec.replicas, 1);
      const { pod, container } = serviceContainer(manifests);
      assert.equal(pod.securityContext.runAsNonRoot, true);
      assert.equal(pod.securityContext.seccompProfile?.type, "RuntimeDefault");
      assert.equal(pod.securityContext.fsGroup, 65532, "the data volume is writable by the image's user");
      assert.deepEqual(container.securityContext, {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      });
      assert.match(readFileSync(CONTAINERFILE, "utf8"), /^USER 65532:65532$/m, "the image's user is the one the chart runs as");
    });

    it("mounts a writable volume at each path the image writes (HOME, /tmp, the data directory of its command), and serves that directory", () => {
      const { home, dataDir, paths } = imageWritablePaths();
      for (const values of [{}, { persistence: { enabled: false } }]) {
        const manifests = rendered(values);
        const { pod, container } = serviceContainer(manifests);
        for (const path of paths) {
          const mount = container.volumeMounts.find((m) => m.mountPath === path);
          assert.ok(mount, `nothing is mounted at ${path}`);
          assert.notEqual(mount.readOnly, true, `${path} is mounted read-only`);
          assert.equal(mount.subPath, undefined);
          const volume = pod.volumes.find((v) => v.name === mount.name);
          const claim = only<StatefulSet>(manifests, "StatefulSet").spec.volumeClaimTemplates?.find((c) => c.metadata.name === mount.name);
          assert.ok(volume?.emptyDir || claim, `${path}: volume ${mount.name} is neither an emptyDir nor a claim`);
          if (path === dataDir) assert.equal(Boolean(claim), values !== undefined && !("persistence" in values), `${path} persistence`);
          if (path === home) assert.ok(volume?.emptyDir, "HOME is scratch");
        }
        assert.equal(container.args[container.args.indexOf("--data-dir") + 1], dataDir);
        assert.equal(container.args[0], "serve");
      }
    });

    it("reads the project from the ConfigMap: Pulumi.yaml in the working directory, the stack files as stacks/", () => {
      const manifests = rendered(TLS_VALUES);
      const { pod, container } = serviceContainer(manifests);
      const configMap = only<Manifest & { data: Record<string, string> }>(manifests, "ConfigMap");
      assert.deepEqual(Object.keys(configMap.data).sort(), ["Pulumi.prod.yaml", "Pulumi.yaml"]);
      assert.match(configMap.data["Pulumi.yaml"]!, /^stackConfigDir: stacks$/m);
      const project = pod.volumes.find((v) => v.configMap?.name === configMap.metadata.name);
      assert.ok(project);
      const mounts = container.volumeMounts.filter((m) => m.name === project.name);
      assert.deepEqual(
        mounts.map((m) => [m.mountPath, m.subPath, m.readOnly]),
        [
          ["/etc/nodefleet/project/Pulumi.yaml", "Pulumi.yaml", true],
          ["/etc/nodefleet/project/stacks", undefined, true],
        ],
      );
      assert.match(
        readFileSync(CONTAINERFILE, "utf8"),
        /^WORKDIR \/etc\/nodefleet\/project$/m,
        "the image's working directory is the project",
      );
      assert.deepEqual(container.args.slice(0, 3), ["serve", "--stack", "prod"]);
      const existing = serviceContainer(rendered(EXISTING_SECRETS_VALUES));
      assert.equal(existing.pod.volumes.find((v) => v.name === "project")?.configMap?.name, "fleet-project");
      assert.deepEqual(
        existing.container.args.filter((_, i, args) => args[i - 1] === "--stack"),
        ["prod-*", "staging"],
      );
    });

    it("probes /healthz and /readyz on the API's port over HTTP, and over HTTPS with the certificate mounted when TLS is on", () => {
      for (const [values, scheme] of [
        [{}, "HTTP"],
        [TLS_VALUES, "HTTPS"],
      ] as const) {
        const manifests = rendered(values);
        const { pod, container } = serviceContainer(manifests);
        const port = container.ports.find((p) => p.name === container.livenessProbe.httpGet.port);
        assert.ok(port, "the liveness probe's port is a named port of the container");
        assert.equal(container.args[container.args.indexOf("--port") + 1], String(port.containerPort));
        assert.deepEqual(container.livenessProbe.httpGet, { path: "/healthz", port: "api", scheme });
        assert.deepEqual(container.readinessProbe.httpGet, { path: "/readyz", port: "api", scheme });
        const service = only<Manifest & { spec: { ports: Array<{ name: string; targetPort: string }> } }>(manifests, "Service");
        assert.deepEqual(
          service.spec.ports.map((p) => [p.name, p.targetPort]),
          [[scheme.toLowerCase(), "api"]],
        );
        if (scheme === "HTTP") {
          assert.equal(envOf(container, "NODEFLEET_TLS_CERT_FILE"), undefined);
          continue;
        }
        const tlsVolume = pod.volumes.find((v) => v.secret?.secretName === "nodefleet-tls");
        assert.ok(tlsVolume, "the certificate Secret is a volume");
        const mount = container.volumeMounts.find((m) => m.name === tlsVolume.name);
        assert.ok(mount?.readOnly);
        assert.equal(envOf(container, "NODEFLEET_TLS_CERT_FILE")?.value, `${mount.mountPath}/tls.crt`);
        assert.equal(envOf(container, "NODEFLEET_TLS_KEY_FILE")?.value, `${mount.mountPath}/tls.key`);
        assert.equal(envOf(container, "NODEFLEET_SERVICE_ACCOUNT")?.value, "karpenter/nodefleet-karpenter");
      }
    });

    it("takes credentials, API tokens and the passphrase from existing Secrets by reference, and creates no Secret", () => {
      const manifests = rendered(EXISTING_SECRETS_VALUES);
      assert.deepEqual(
        manifests.filter((m) => m.kind === "Secret" || m.kind === "ConfigMap").map((m) => m.metadata.name),
        [],
      );
      const { container } = serviceContainer(manifests);
      for (const name of ["HCLOUD_TOKEN", "SCW_ACCESS_KEY", "SCW_SECRET_KEY", "SCW_DEFAULT_PROJECT_ID", "HROBOT_USER", "HROBOT_PASSWORD"])
        assert.deepEqual(secretRef(container, name), { name: "cloud-credentials", key: name, optional: true });
      assert.deepEqual(secretRef(container, "NODEFLEET_API_TOKENS"), { name: "api-tokens", key: "tokens" });
      assert.deepEqual(secretRef(container, "PULUMI_CONFIG_PASSPHRASE"), { name: "pulumi-passphrase", key: "passphrase" });
      assert.equal(envOf(container, "NODEFLEET_API_STACK_BACKEND_URL")?.value, EXISTING_SECRETS_VALUES.engineState.backendUrl);
      for (const name of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])
        assert.deepEqual(secretRef(container, name), { name: "state-credentials", key: name });
    });

    it("mounts each cluster's own credentials Secret under the directory the service reads them from", () => {
      const manifests = rendered(PER_CLUSTER_VALUES);
      const { pod, container } = serviceContainer(manifests);
      assert.equal(envOf(container, "NODEFLEET_CLUSTER_CREDENTIALS_DIR")?.value, "/etc/nodefleet/cluster-credentials");
      const mounts = (container as unknown as { volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }> })
        .volumeMounts;
      const volumes = (pod as unknown as { volumes: Array<{ name: string; secret?: { secretName: string } }> }).volumes;
      const secretAt = (mountPath: string) => {
        const mount = mounts.find((m) => m.mountPath === mountPath);
        assert.ok(mount?.readOnly, `${mountPath} mounted read-only`);
        return volumes.find((v) => v.name === mount.name)?.secret?.secretName;
      };
      assert.equal(secretAt("/etc/nodefleet/cluster-credentials/prod-eu"), "prod-eu-credentials");
      assert.equal(secretAt("/etc/nodefleet/cluster-credentials/staging"), "staging-credentials");
      assert.equal(envOf(serviceContainer(rendered({})).container, "NODEFLEET_CLUSTER_CREDENTIALS_DIR"), undefined, "none by default");
      assert.match(
        render({ cloudCredentials: { perCluster: { "prod eu": "x" } } }).output,
        /cloudCredentials\.perCluster has "prod eu": each key is a stack name/,
      );
      assert.match(render({ cloudCredentials: { perCluster: { prod: "" } } }).output, /cloudCredentials\.perCluster\.prod is empty/);
    });

    it("puts values given for Secrets into Secrets of its own, never into the pod spec", () => {
      const manifests = rendered(CHART_SECRETS_VALUES);
      const secrets = manifests.filter((m) => m.kind === "Secret") as Array<Manifest & { data: Record<string, string> }>;
      const decoded = Object.fromEntries(
        secrets.map((s) => [
          s.metadata.name,
          Object.fromEntries(Object.entries(s.data).map(([k, v]) => [k, Buffer.from(v, "base64").toString()])),
        ]),
      );
      assert.deepEqual(decoded, {
        "nodefleet-cloud": CHART_SECRETS_VALUES.cloudCredentials.values,
        "nodefleet-api-tokens": { NODEFLEET_API_TOKENS: CHART_SECRETS_VALUES.apiTokens.value },
        "nodefleet-passphrase": { PULUMI_CONFIG_PASSPHRASE: CHART_SECRETS_VALUES.passphrase.value },
      });
      const { container } = serviceContainer(manifests);
      assert.deepEqual(secretRef(container, "HCLOUD_TOKEN"), { name: "nodefleet-cloud", key: "HCLOUD_TOKEN" });
      assert.equal(envOf(container, "SCW_SECRET_KEY"), undefined, "a credential not given is not set");
      assert.deepEqual(secretRef(container, "NODEFLEET_API_TOKENS"), { name: "nodefleet-api-tokens", key: "NODEFLEET_API_TOKENS" });
      const podSpec = JSON.stringify(only(manifests, "StatefulSet"));
      for (const secret of ["h".repeat(64), "secret-password", "0123456789abcdef0123", "correct horse"])
        assert.ok(!podSpec.includes(secret), "a secret value is in the StatefulSet");
      assert.equal(envOf(container, "PULUMI_BACKEND_URL")?.value, CHART_SECRETS_VALUES.pulumiBackendUrl);
    });

    it("sets only environment variables docs/environment.md documents", () => {
      const documented = documentedVariables();
      const set = new Set<string>();
      for (const values of [{}, TLS_VALUES, EXISTING_SECRETS_VALUES, CHART_SECRETS_VALUES, TEMPORAL_VALUES])
        for (const variable of serviceContainer(rendered(values)).container.env) set.add(variable.name);
      for (const match of readFileSync(CONTAINERFILE, "utf8").matchAll(/\b(NODEFLEET_[A-Z0-9_]+)=/g)) set.add(match[1]!);
      assert.deepEqual(
        [...set].filter((name) => !documented.has(name)),
        [],
      );
      assert.ok(set.has("NODEFLEET_PLUGIN_DIR") && set.has("NODEFLEET_SHUTDOWN_GRACE_MS"));
      for (const name of ["NODEFLEET_TEMPORAL_ADDRESS", "NODEFLEET_TEMPORAL_TLS_KEY_FILE"])
        assert.ok(set.has(name), `${name} not rendered`);
    });

    it("renders a ServiceMonitor only when asked, scraping /metrics through the Service's port and scheme", () => {
      assert.equal(rendered({}).filter((m) => m.kind === "ServiceMonitor").length, 0);
      for (const [values, scheme] of [
        [{ metrics: { serviceMonitor: { enabled: true, additionalLabels: { release: "prometheus" }, interval: "30s" } } }, "http"],
        [{ ...TLS_VALUES, metrics: { serviceMonitor: { enabled: true } } }, "https"],
      ] as const) {
        const manifests = rendered(values);
        const monitor = only<
          Manifest & {
            spec: {
              selector: { matchLabels: Record<string, string> };
              endpoints: Array<{ port: string; path: string; scheme: string; interval?: string; tlsConfig?: object }>;
            };
          }
        >(manifests, "ServiceMonitor");
        assert.equal(monitor.apiVersion, "monitoring.coreos.com/v1");
        const service = only<Manifest & { spec: { ports: Array<{ name: string }> } }>(manifests, "Service");
        for (const [label, value] of Object.entries(monitor.spec.selector.matchLabels))
          assert.equal(service.metadata.labels?.[label], value, `the Service lacks the selector's ${label}`);
        const [endpoint] = monitor.spec.endpoints;
        assert.deepEqual(
          { port: endpoint?.port, path: endpoint?.path, scheme: endpoint?.scheme },
          { port: service.spec.ports[0]!.name, path: "/metrics", scheme },
        );
        if (scheme === "https") assert.deepEqual(endpoint?.tlsConfig, { insecureSkipVerify: true });
        else assert.equal(monitor.metadata.labels?.release, "prometheus");
      }
    });
  });

  describe("applied with a server-side dry run to the local control plane", function () {
    this.timeout(300_000);
    let plane: ControlPlane | undefined;

    before(async function () {
      skipUnlessAvailable(this, missingTools("kubectl", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
      plane = await startControlPlane({ dir: join(workDir, "control-plane") });
      await kube(plane.admin, "POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
    });
    after(async () => {
      await plane?.stop();
    });

    /** `kubectl apply --server-side --dry-run=server` of `manifests`: the API server's answer. */
    const dryRun = (manifests: Manifest[], name: string) => {
      const file = join(workDir, `${name}.yaml`);
      writeFileSync(file, manifests.map((m) => stringify(m)).join("---\n"));
      return spawnSync(
        findTool("kubectl")!,
        [
          "--kubeconfig",
          plane!.adminKubeconfig,
          "apply",
          "--server-side",
          "--dry-run=server",
          "--field-manager=nodefleet-chart-test",
          "-f",
          file,
        ],
        { encoding: "utf8" },
      );
    };

    for (const [name, values] of [
      ["defaults", {}],
      ["tls", TLS_VALUES],
      ["existing-secrets", EXISTING_SECRETS_VALUES],
      ["shared", SHARED_VALUES],
      ["temporal", TEMPORAL_VALUES],
      ["per-cluster-credentials", PER_CLUSTER_VALUES],
      ["chart-secrets", CHART_SECRETS_VALUES],
      ["no-persistence", { persistence: { enabled: false }, podDisruptionBudget: { maxUnavailable: 0 } }],
    ] as const) {
      it(`accepts every object of the ${name} rendering`, () => {
        const manifests = rendered(values);
        assert.equal(manifests.filter((m) => m.kind === "ServiceMonitor").length, 0);
        const result = dryRun(manifests, name);
        assert.equal(result.status, 0, `kubectl apply --dry-run=server failed:\n${result.stdout}${result.stderr}`);
        for (const manifest of manifests)
          assert.match(
            result.stdout,
            new RegExp(
              `^${manifest.kind.toLowerCase()}(\\.[a-z0-9.]+)?/${manifest.metadata.name} serverside-applied \\(server dry run\\)$`,
              "m",
            ),
            `${manifest.kind} ${manifest.metadata.name} not applied:\n${result.stdout}`,
          );
      });
    }

    it("refuses a rendering the API server would refuse (the dry run validates, it is not a no-op)", () => {
      const manifests = rendered({});
      const statefulSet = only<StatefulSet>(manifests, "StatefulSet");
      statefulSet.spec.template.spec.containers[0]!.securityContext.seccompProfile = { type: "Unconfined-ish" };
      const result = dryRun(manifests, "refused");
      assert.notEqual(result.status, 0, result.stdout);
      assert.match(result.stderr, /seccompProfile/);
    });
  });
});
