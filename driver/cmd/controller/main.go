// The nodefleet Karpenter controller: Karpenter's core controllers with the nodefleet
// CloudProvider, wired as Karpenter's kwok provider is.
package main

import (
	"fmt"
	"os"

	"github.com/samber/lo"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

	// Token Secrets are read only in the driver's own namespace, through a cache of that namespace
	// alone: a watch keeps it current (token rotation) and the driver needs no cluster-wide Secret access.
	namespace := os.Getenv("SYSTEM_NAMESPACE")
	if namespace == "" {
		log.FromContext(ctx).Error(nil, "SYSTEM_NAMESPACE is not set: it names the namespace holding the API token Secrets")
		os.Exit(1)
	}
	secrets := lo.Must(cache.New(op.GetConfig(), cache.Options{
		Scheme:            op.GetScheme(),
		Mapper:            op.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {}},
	}))
	lo.Must0(op.Add(secrets))
	gcGrace, err := instanceGCGraceFromEnv()
	if err != nil {
		log.FromContext(ctx).Error(err, "invalid instance garbage collection setting")
		os.Exit(1)
	}
	connections := apiclient.NewConnections(apiclient.SecretTokens{Reader: secrets, Namespace: namespace})

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
