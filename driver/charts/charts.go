// Package charts holds the driver's Helm chart and its CRD chart. The chart's crds/ folder, the CRD
// chart's templates and the plain manifests in
// driver/manifests are generated (`go generate ./...` in driver/): the CRDs from the pinned
// Karpenter module and the driver's own API, the manifests by `helm template` with the
// toolchain's helm. The tests fail when either is stale. pkg/apis's go:generate writes them, right
// after regenerating the driver's CRD.
package charts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	nodefleetapis "nodefleet.dev/driver/pkg/apis"
	karpenterapis "sigs.k8s.io/karpenter/pkg/apis"
)

// ChartDir is the chart, relative to this package.
const ChartDir = "nodefleet-karpenter"

// CRDChartDir is the CRD chart, relative to this package: the same CRDs as ChartDir's crds/, but
// as templates, which `helm upgrade` updates (Helm installs a crds/ folder once and never upgrades it).
const CRDChartDir = "nodefleet-karpenter-crd"

// ManifestsFile is the chart rendered with ManifestValues, relative to this package.
const ManifestsFile = "../manifests/nodefleet-karpenter.yaml"

// ManifestValues are the values the checked-in manifests are rendered with: a NodeClass for the
// local cloud's example cluster (README "Autoscaling with Karpenter"), the token in an existing Secret.
var ManifestValues = []string{
	"nodeClass.create=true",
	"api.endpoint=http://127.0.0.1:8080",
	"api.clusterID=example",
	"api.pool=autoscaled",
	"token.existingSecret=nodefleet-api-token",
}

// CRDs are the chart's crds/ files: Karpenter's own (at the version go.mod pins) and the driver's.
func CRDs() map[string][]byte {
	return map[string][]byte{
		"karpenter.sh_nodepools.yaml":                      karpenterapis.NodePoolCRD,
		"karpenter.sh_nodeclaims.yaml":                     karpenterapis.NodeClaimCRD,
		"karpenter.sh_nodeoverlays.yaml":                   karpenterapis.NodeOverlayCRD,
		"autoscaling.x-k8s.io_capacitybuffers.yaml":        karpenterapis.CapacityBufferCRD,
		"karpenter.nodefleet.io_nodefleetnodeclasses.yaml": nodefleetapis.NodefleetNodeClassCRD,
	}
}

// FindHelm is helm on PATH, else the one the repository's toolchain build left in its cache.
func FindHelm() (string, error) {
	if path, err := exec.LookPath("helm"); err == nil {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	cached := filepath.Join(home, ".cache", "nodefleet", "toolchain", "bin", "helm")
	if _, err := os.Stat(cached); err != nil {
		return "", errors.New("helm is neither on PATH nor in ~/.cache/nodefleet/toolchain/bin (npm run toolchain builds it)")
	}
	return cached, nil
}

// Helm runs helm with the arguments and answers its standard output.
func Helm(helm string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	command := exec.Command(helm, args...)
	command.Stdout, command.Stderr = &stdout, &stderr
	if err := command.Run(); err != nil {
		return nil, fmt.Errorf("helm %v: %w\n%s%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// RenderManifests is `helm template` of the chart with ManifestValues, CRDs included.
func RenderManifests(helm string) ([]byte, error) {
	args := []string{"template", "nodefleet-karpenter", ChartDir, "--namespace", "karpenter", "--include-crds", "--no-hooks"}
	for _, value := range ManifestValues {
		args = append(args, "--set", value)
	}
	return Helm(helm, args...)
}
