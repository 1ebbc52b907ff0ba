package main

import (
	"os"

	"github.com/samber/lo"
)

// defaultMetricsPort is where the driver serves its metrics unless METRICS_PORT (or Karpenter's
// --metrics-port flag) says otherwise. Karpenter's own default, 8080, is the port `nodefleet serve`
// listens on by default, so a driver started next to the service (a laptop, the local cloud, a
// host-network Pod) could not bind it. 8000 is the port Karpenter's AWS provider long used for
// the same endpoint; the chart's values.yaml and driver/manifests say the same.
const defaultMetricsPort = "8000"

// defaultMetricsPortUnlessSet sets METRICS_PORT to defaultMetricsPort when it is unset or empty. It
// must run before operator.NewOperator, where Karpenter's options read METRICS_PORT as their default.
func defaultMetricsPortUnlessSet() {
	if os.Getenv("METRICS_PORT") == "" {
		lo.Must0(os.Setenv("METRICS_PORT", defaultMetricsPort))
	}
}
