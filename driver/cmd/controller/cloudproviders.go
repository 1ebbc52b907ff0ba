package main

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	cloudprovidermetrics "sigs.k8s.io/karpenter/pkg/cloudprovider/metrics"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers/nodeoverlay"
)

// decorated is the nodefleet CloudProvider as Karpenter's controllers get it: measured is wrapped
// by Karpenter's metrics decorator (karpenter_cloudprovider_duration_seconds and
// karpenter_cloudprovider_errors_total, by controller and method; sigs.k8s.io/karpenter
// pkg/cloudprovider/metrics), and full adds the NodeOverlay decorator on top, as the AWS provider
// wires it (aws/karpenter-provider-aws cmd/controller/main.go). The metrics decorator wraps once,
// under the overlay, so the calls the overlay makes are measured once and the controllers that take
// the provider without overlays (Karpenter's NodeOverlay controller) are measured too.
func decorated(undecorated cloudprovider.CloudProvider, kubeClient client.Client, store *nodeoverlay.InstanceTypeStore) (full, measured cloudprovider.CloudProvider) {
	measured = cloudprovidermetrics.Decorate(undecorated)
	return overlay.Decorate(measured, kubeClient, store), measured
}
