import { strict as assert } from "node:assert";
import fc from "fast-check";
import { parse } from "yaml";
import { kubeletSchema } from "../../components/fleet/fleetSpec";
import {
  KUBELET_PATHS,
  RESOLVED_UPSTREAM_RESOLV_CONF,
  kubeletConfigHash,
  renderKubeletConfig,
} from "../../components/bootstrap/kubeletConfig";
import { kubeletReservationConfig } from "../../components/bootstrap/kubeletReservations";
import { kubeletSettingsArbitrary } from "../support/kubeletSettingsArbitrary";

const DEFAULTS = kubeletSchema.parse({});
const PROVIDER_ID = "nodefleet:///example/kura-0";

const input = fc.record({
  kubelet: kubeletSettingsArbitrary,
  providerID: fc.constantFrom(PROVIDER_ID, "nodefleet:///example/kura-1", "cnap:///c1/n"),
});

describe("kubelet config", () => {
  it("sets clientCAFile, leaves serverTLSBootstrap unset, and takes reservations from kubeletReservationConfig", () => {
    const config = parse(renderKubeletConfig({ kubelet: DEFAULTS, providerID: PROVIDER_ID }));
    assert.equal(config.kind, "KubeletConfiguration");
    assert.equal(config.apiVersion, "kubelet.config.k8s.io/v1beta1");
    assert.equal(config.authentication.x509.clientCAFile, KUBELET_PATHS.clientCA);
    assert.equal(config.authentication.anonymous.enabled, false);
    assert.equal(config.authorization.mode, "Webhook");
    assert.ok(!("serverTLSBootstrap" in config));
    assert.equal(config.providerID, PROVIDER_ID);
    assert.equal(config.cgroupDriver, "systemd");
    const reservations = kubeletReservationConfig(DEFAULTS);
    assert.equal(config.maxPods, reservations.maxPods);
    assert.deepEqual(config.kubeReserved, reservations.kubeReserved);
    assert.deepEqual(config.evictionHard, reservations.evictionHard);
    assert.deepEqual(config.clusterDNS, ["10.96.0.10"]);
    assert.equal(config.clusterDomain, "cluster.local");
  });

  it("sets resolvConf to systemd-resolved's upstream list, never leaving the kubelet on the 127.0.0.53 stub", () => {
    const config = parse(renderKubeletConfig({ kubelet: DEFAULTS, providerID: PROVIDER_ID }));
    assert.equal(config.resolvConf, RESOLVED_UPSTREAM_RESOLV_CONF);
    assert.equal(RESOLVED_UPSTREAM_RESOLV_CONF, "/run/systemd/resolve/resolv.conf");
  });

  it("takes clusterDNS and clusterDomain from the cluster's kubelet settings", () => {
    const kubelet = kubeletSchema.parse({ clusterDNS: ["10.43.0.10"], clusterDomain: "corp.local" });
    const config = parse(renderKubeletConfig({ kubelet, providerID: PROVIDER_ID }));
    assert.deepEqual(config.clusterDNS, ["10.43.0.10"]);
    assert.equal(config.clusterDomain, "corp.local");
  });

  it("hash changes when, and only when, the rendered config changes (property)", () => {
    fc.assert(
      fc.property(input, input, (a, b) => {
        const ra = renderKubeletConfig(a);
        const rb = renderKubeletConfig(b);
        assert.equal(kubeletConfigHash(ra) === kubeletConfigHash(rb), ra === rb);
      }),
      { numRuns: 300 },
    );
  });

  it("every setting reaches the rendered config, so every change moves the hash (property)", () => {
    const keys = ["maxPods", "reservedCpuMillis", "reservedMemoryMiB", "evictionHardMemoryMiB", "reservedEphemeralStorageGiB"] as const;
    fc.assert(
      fc.property(input, fc.constantFrom(...keys), fc.integer({ min: 1, max: 5 }), (a, key, delta) => {
        const changed = { ...a, kubelet: { ...a.kubelet, [key]: a.kubelet[key] + delta } };
        assert.notEqual(kubeletConfigHash(renderKubeletConfig(changed)), kubeletConfigHash(renderKubeletConfig(a)));
      }),
      { numRuns: 200 },
    );
  });

  it("is deterministic: the same input renders byte-identical text", () => {
    fc.assert(fc.property(input, (a) => renderKubeletConfig(a) === renderKubeletConfig(structuredClone(a))));
  });
});
