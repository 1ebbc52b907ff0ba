// The nodefleet Karpenter controller: Karpenter's core controllers with the nodefleet
// CloudProvider, wired as Karpenter's kwok provider is.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"nodefleet.dev/driver/pkg/apiclient"
	nodefleet "nodefleet.dev/driver/pkg/cloudprovider"
	"nodefleet.dev/driver/pkg/controllers"
	corecontrollers "sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

func main() {
	// The chart's pre-delete hook (deletenodeclass.go), before Karpenter's options parse the flags.
	if len(os.Args) > 1 && os.Args[1] == deleteNodeClassCommand {
		if err := runDeleteNodeClass(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	// Before Karpenter's options read the environment (metricsport.go).
	defaultMetricsPortUnlessSet()
	ctx, op := operator.NewOperator()

	tokens, secrets, err := tokenSources(op)
	if err != nil {
		log.FromContext(ctx).Error(err, "invalid token setting")
		os.Exit(1)
	}
	gcGrace, err := instanceGCGraceFromEnv()
	if err != nil {
		log.FromContext(ctx).Error(err, "invalid instance garbage collection setting")
		os.Exit(1)
	}
	connections := apiclient.NewConnections(tokens)

	undecorated := nodefleet.New(op.GetClient(), connections, nodefleet.NewSoldOutOfferings(), op.EventRecorder)
	cloudProvider, measured := decorated(undecorated, op.GetClient(), op.InstanceTypeStore)
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider)
	op.
		WithControllers(ctx, corecontrollers.NewControllers(
			ctx,
			op.Manager,
			op.Clock,
			op.GetClient(),
			op.EventRecorder,
			cloudProvider,
			measured,
			clusterState,
			op.InstanceTypeStore,
		)...).
		WithControllers(ctx, controllers.NewControllers(op.GetClient(), undecorated, connections, secrets, op.EventRecorder, op.Clock.Now, gcGrace)...).
		Start(ctx)
}
