// Package nodeclass keeps a NodefleetNodeClass's Ready condition: True when the scaling API it
// names answers GET /clusters/{clusterID} with its token and serves its pool. Karpenter's NodePool
// readiness reads that condition. It also records the pool's template hash, so a template changed
// in the stack updates the NodeClass and Karpenter re-checks its NodeClaims' drift.
package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/awslabs/operatorpkg/reasonable"
	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/nodefleetapi"
)

// Re-checked this often, so an API that went away, a pool removed from the stack or a changed pool
// template shows.
const (
	readyRecheck    = time.Minute
	notReadyRecheck = 15 * time.Second
)

type Controller struct {
	kubeClient  client.Client
	connections *apiclient.Connections
	// secrets is the cache the driver reads token Secrets from; a change there re-checks the
	// NodeClasses naming the Secret (a rotated or repaired token).
	secrets cache.Cache
}

func NewController(kubeClient client.Client, connections *apiclient.Connections, secrets cache.Cache) *Controller {
	return &Controller{kubeClient: kubeClient, connections: connections, secrets: secrets}
}

func (c *Controller) Name() string { return "nodeclass.status" }

func (c *Controller) Reconcile(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (reconcile.Result, error) {
	stored := nodeClass.DeepCopy()
	pool, reason, message := c.check(ctx, nodeClass)
	if reason == "" {
		nodeClass.StatusConditions().SetTrue(status.ConditionReady)
		nodeClass.Status.PoolTemplateHash = pool.TemplateHash
	} else {
		nodeClass.StatusConditions().SetFalse(status.ConditionReady, reason, message)
	}
	if !equality.Semantic.DeepEqual(stored.Status, nodeClass.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nodeClass, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if reason != "" {
		return reconcile.Result{RequeueAfter: notReadyRecheck}, nil
	}
	return reconcile.Result{RequeueAfter: readyRecheck}, nil
}

// check is the NodeClass's pool as the API describes it, or the reason (a condition Reason) the
// NodeClass is not ready and a message for people.
func (c *Controller) check(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (pool *nodefleetapi.Pool, reason, message string) {
	connection, err := c.connections.For(nodeClass)
	if err != nil {
		return nil, "InvalidSpec", err.Error()
	}
	cluster, err := connection.Cluster(ctx)
	if err != nil {
		var tokenError *apiclient.TokenError
		var apiError *apiclient.Error
		switch {
		case errors.As(err, &tokenError):
			return nil, "TokenUnavailable", tokenError.Error()
		case errors.As(err, &apiError):
			return nil, apiError.Code, apiError.Error()
		}
		return nil, "APIUnreachable", err.Error()
	}
	i := slices.IndexFunc(cluster.Pools, func(pool nodefleetapi.Pool) bool { return pool.Name == nodeClass.Spec.Pool })
	if i < 0 {
		return nil, "PoolNotFound", fmt.Sprintf("cluster %s has no autoscaled pool %q", cluster.Id, nodeClass.Spec.Pool)
	}
	return &cluster.Pools[i], "", ""
}

// nodeClassesNaming enqueues the NodeClasses whose token lives in the Secret.
func (c *Controller) nodeClassesNaming(ctx context.Context, secret *corev1.Secret) []reconcile.Request {
	list := &v1alpha1.NodefleetNodeClassList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for _, nodeClass := range list.Items {
		ref := nodeClass.Spec.TokenSecretRef
		if ref.Namespace == secret.Namespace && ref.Name == secret.Name {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nodeClass)})
		}
	}
	return requests
}

func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).
		Named(c.Name()).
		For(&v1alpha1.NodefleetNodeClass{}).
		WatchesRawSource(source.Kind(c.secrets, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(c.nodeClassesNaming))).
		WithOptions(controller.Options{RateLimiter: reasonable.RateLimiter(), MaxConcurrentReconciles: 2}).
		Complete(reconcile.AsReconciler(m.GetClient(), c))
}
