// Package controllers are the driver's own controllers, run beside Karpenter's core ones.
package controllers

import (
	"time"

	"github.com/awslabs/operatorpkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/cloudprovider"
	"nodefleet.dev/driver/pkg/controllers/nodeclaim/failed"
	"nodefleet.dev/driver/pkg/controllers/nodeclaim/garbagecollection"
	"nodefleet.dev/driver/pkg/controllers/nodeclass"
	"sigs.k8s.io/karpenter/pkg/events"
)

// NewControllers: recorder publishes their Events, now is the operator's clock, gcGrace how long a
// node no NodeClaim claims is kept (garbagecollection.DefaultGrace when zero).
func NewControllers(kubeClient client.Client, cloudProvider *cloudprovider.CloudProvider, connections *apiclient.Connections, secrets cache.Cache, recorder events.Recorder, now func() time.Time, gcGrace time.Duration) []controller.Controller {
	status := nodeclass.NewController(kubeClient, connections, secrets, recorder)
	status.Backoffs = cloudProvider.BackedOffNodeClasses()
	return []controller.Controller{
		status,
		failed.NewController(kubeClient, cloudProvider, recorder),
		garbagecollection.NewController(kubeClient, connections, recorder, now, gcGrace),
	}
}
