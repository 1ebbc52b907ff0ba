// Package nodeclass keeps a NodefleetNodeClass's Ready condition: True when the scaling API it
// names answers GET /clusters/{clusterID} with its token and serves its pool, and every NodePool
// using the NodeClass carries the pool's taints. Karpenter's NodePool readiness reads that
// condition, and its provisioner launches nothing for a NodePool that is not ready. It also records
// the pool's template hash, so a template changed in the stack updates the NodeClass and Karpenter
// re-checks its NodeClaims' drift, the pool's taints and labels, so people see what the pool's
// nodes carry, and which offerings failed launches backed off (offerings.go). It also holds a deleted NodeClass with a finalizer until its NodeClaims are gone
// (termination.go).
package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/awslabs/operatorpkg/reasonable"
	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/events"
)

// nodeClassKind is the kind a NodePool's nodeClassRef names for a NodefleetNodeClass.
const nodeClassKind = "NodefleetNodeClass"

// Re-checked this often, so an API that went away, a pool removed from the stack or a changed pool
// template shows.
const (
	readyRecheck    = time.Minute
	notReadyRecheck = 15 * time.Second
)

// FailedChecksBeforeNotReady is how many consecutive checks must fail for a passing reason (the API
// unreachable, timing out or answering 5xx/429) before a Ready NodeClass turns NotReady: one lost
// answer would otherwise stop Karpenter launching for every NodePool of the NodeClass.
const FailedChecksBeforeNotReady = 3

type Controller struct {
	// FailedChecksBeforeNotReady overrides the package's constant when positive (tests).
	FailedChecksBeforeNotReady int

	mu sync.Mutex
	// failedChecks counts, per NodeClass name, the passing failures since its last good check.
	failedChecks map[string]int

	kubeClient  client.Client
	connections *apiclient.Connections
	// secrets is the cache the driver reads token Secrets from; a change there re-checks the
	// NodeClasses naming the Secret (a rotated or repaired token). Nil when the driver reads no
	// Secrets (projected ServiceAccount tokens only).
	secrets  cache.Cache
	recorder events.Recorder
	// Backoffs, when set, names NodeClasses to re-check at once because a launch just backed one
	// of their offerings off (cloudprovider.BackedOffNodeClasses).
	Backoffs <-chan event.TypedGenericEvent[*v1alpha1.NodefleetNodeClass]
}

func NewController(kubeClient client.Client, connections *apiclient.Connections, secrets cache.Cache, recorder events.Recorder) *Controller {
	return &Controller{kubeClient: kubeClient, connections: connections, secrets: secrets, recorder: recorder, failedChecks: map[string]int{}}
}

func (c *Controller) Name() string { return "nodeclass.status" }

func (c *Controller) Reconcile(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (reconcile.Result, error) {
	if !nodeClass.DeletionTimestamp.IsZero() {
		c.tolerate(nodeClass, false) // forget its failed checks
		return c.finalize(ctx, nodeClass)
	}
	if requeue, err := c.addFinalizer(ctx, nodeClass); err != nil || requeue {
		return reconcile.Result{Requeue: requeue}, err
	}
	stored := nodeClass.DeepCopy()
	pool, reason, message, passing := c.check(ctx, nodeClass)
	var backed []backedOff
	if pool != nil {
		nodeClass.Status.PoolTemplateHash = pool.TemplateHash
		nodeClass.Status.PoolTaints = poolTaints(pool)
		nodeClass.Status.PoolLabels = poolLabels(pool)
		var err error
		if reason, message, err = c.checkNodePools(ctx, nodeClass); err != nil {
			return reconcile.Result{}, err
		}
		if backed, err = c.backedOffOfferings(ctx, nodeClass); err != nil {
			// The condition keeps its last reading; the next check reads again.
			log.FromContext(ctx).V(1).Info("reading the pool's instance types for OfferingsAvailable", "error", err.Error())
		} else {
			// Before Ready is decided below: setting any condition of a set without dependents
			// recomputes Ready as True.
			setOfferingsCondition(nodeClass, backed)
		}
	}
	tolerated := c.tolerate(nodeClass, passing)
	switch {
	case reason == "":
		nodeClass.StatusConditions().SetTrue(status.ConditionReady)
	case tolerated:
		// Ready stays as it was until the failure has lasted several checks.
	default:
		nodeClass.StatusConditions().SetFalse(status.ConditionReady, reason, message)
	}
	if !equality.Semantic.DeepEqual(stored.Status, nodeClass.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nodeClass, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		c.publishReadyChange(stored, nodeClass)
	}
	if reason != "" {
		return reconcile.Result{RequeueAfter: notReadyRecheck}, nil
	}
	return reconcile.Result{RequeueAfter: nextRecheck(readyRecheck, backed, time.Now())}, nil
}

// Reasons of the Events published when a NodeClass's Ready condition changes.
const (
	NotReadyReason  = "NodeClassNotReady"
	RecoveredReason = "NodeClassReady"
)

// publishReadyChange publishes a Warning Event when the NodeClass turns NotReady (an outage that
// outlasted FailedChecksBeforeNotReady checks, a refused token, an uncovered taint) and a Normal one
// when it turns Ready again after having been NotReady: the condition alone keeps no history, and
// Karpenter stops launching for every NodePool of the NodeClass meanwhile.
func (c *Controller) publishReadyChange(before, after *v1alpha1.NodefleetNodeClass) {
	was := before.StatusConditions().Get(status.ConditionReady)
	now := after.StatusConditions().Get(status.ConditionReady)
	switch {
	case now.IsFalse() && (!was.IsFalse() || was.Reason != now.Reason):
		c.recorder.Publish(events.Event{
			InvolvedObject: after,
			Type:           corev1.EventTypeWarning,
			Reason:         NotReadyReason,
			Message:        truncate(fmt.Sprintf("NodefleetNodeClass %s is not ready (%s): %s; Karpenter launches no node for its NodePools meanwhile", after.Name, now.Reason, now.Message)),
			DedupeValues:   []string{string(after.UID), now.Reason},
		})
	case now.IsTrue() && was.IsFalse():
		c.recorder.Publish(events.Event{
			InvolvedObject: after,
			Type:           corev1.EventTypeNormal,
			Reason:         RecoveredReason,
			Message:        fmt.Sprintf("NodefleetNodeClass %s is ready again (it was not: %s)", after.Name, was.Reason),
		})
	}
}

// truncate keeps an Event message within what the API server stores comfortably.
func truncate(message string) string {
	const limit = 1024
	if len(message) <= limit {
		return message
	}
	return message[:limit-3] + "..."
}

// tolerate counts a passing failure of the NodeClass's check and says whether Ready is left as it is:
// only a Ready NodeClass is spared, and only for fewer than FailedChecksBeforeNotReady checks in a
// row. Any other outcome resets the count.
func (c *Controller) tolerate(nodeClass *v1alpha1.NodefleetNodeClass, passing bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !passing {
		delete(c.failedChecks, nodeClass.Name)
		return false
	}
	c.failedChecks[nodeClass.Name]++
	limit := c.FailedChecksBeforeNotReady
	if limit <= 0 {
		limit = FailedChecksBeforeNotReady
	}
	return nodeClass.StatusConditions().Get(status.ConditionReady).IsTrue() && c.failedChecks[nodeClass.Name] < limit
}

// check is the NodeClass's pool as the API describes it, or the reason (a condition Reason) the
// NodeClass is not ready, a message for people, and whether that failure may pass by itself
// (passing: see FailedChecksBeforeNotReady).
func (c *Controller) check(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (pool *nodefleetapi.Pool, reason, message string, passing bool) {
	connection, err := c.connections.For(nodeClass)
	if err != nil {
		return nil, "InvalidSpec", err.Error(), false
	}
	cluster, err := connection.Cluster(ctx)
	if err != nil {
		var tokenError *apiclient.TokenError
		var apiError *apiclient.Error
		switch {
		case errors.As(err, &tokenError):
			return nil, "TokenUnavailable", tokenError.Error(), false
		case errors.As(err, &apiError):
			// Overloaded or failing inside may pass by itself; any other answer is definite.
			return nil, apiError.Code, apiError.Error(), apiError.StatusCode >= 500 || apiError.StatusCode == 429
		}
		// Unreachable or timed out.
		return nil, "APIUnreachable", err.Error(), true
	}
	i := slices.IndexFunc(cluster.Pools, func(pool nodefleetapi.Pool) bool { return pool.Name == nodeClass.Spec.Pool })
	if i < 0 {
		return nil, "PoolNotFound", fmt.Sprintf("cluster %s has no autoscaled pool %q", cluster.Id, nodeClass.Spec.Pool), false
	}
	return &cluster.Pools[i], "", "", false
}

// poolTaints is the pool's taints as Kubernetes taints (nil for none).
func poolTaints(pool *nodefleetapi.Pool) []corev1.Taint {
	var taints []corev1.Taint
	for _, t := range pool.Taints {
		taint := corev1.Taint{Key: t.Key, Effect: corev1.TaintEffect(t.Effect)}
		if t.Value != nil {
			taint.Value = *t.Value
		}
		taints = append(taints, taint)
	}
	return taints
}

// poolLabels is the pool's labels (nil for none).
func poolLabels(pool *nodefleetapi.Pool) map[string]string {
	if len(pool.Labels) == 0 {
		return nil
	}
	return pool.Labels
}

// checkNodePools is the reason (NodePoolTaintsNotCovered) and message while a NodePool using the
// NodeClass lacks a taint of the pool (v1alpha1.UncoveredPoolTaints), or "" when none does.
// Karpenter copies the reason and message to each such NodePool's NodeClassReady condition and
// launches nothing for them, instead of nodes that none of the pods they are for tolerate.
func (c *Controller) checkNodePools(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (reason, message string, err error) {
	if len(nodeClass.Status.PoolTaints) == 0 {
		return "", "", nil
	}
	list := &karpv1.NodePoolList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return "", "", fmt.Errorf("listing NodePools: %w", err)
	}
	var problems []string
	for _, nodePool := range list.Items {
		if !usesNodeClass(&nodePool, nodeClass.Name) || !nodePool.DeletionTimestamp.IsZero() {
			continue
		}
		spec := nodePool.Spec.Template.Spec
		if uncovered := v1alpha1.UncoveredPoolTaints(nodeClass.Status.PoolTaints, spec.Taints, spec.StartupTaints); len(uncovered) > 0 {
			problems = append(problems, fmt.Sprintf("NodePool %s lacks %s", nodePool.Name, v1alpha1.FormatTaints(uncovered)))
		}
	}
	if len(problems) == 0 {
		return "", "", nil
	}
	slices.Sort(problems)
	return v1alpha1.ReasonNodePoolTaintsNotCovered, fmt.Sprintf(
		"pool %s puts the taints %s on every node, and Karpenter schedules pods by the NodePool's taints: %s. Add them, with the same value, to spec.template.spec.taints (or startupTaints if something removes them)",
		nodeClass.Spec.Pool, v1alpha1.FormatTaints(nodeClass.Status.PoolTaints), strings.Join(problems, "; ")), nil
}

// usesNodeClass is true when the NodePool's nodes come from the NodefleetNodeClass of that name.
func usesNodeClass(nodePool *karpv1.NodePool, name string) bool {
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	return ref != nil && ref.Group == apis.Group && ref.Kind == nodeClassKind && ref.Name == name
}

// nodeClassOfNodePool enqueues the NodefleetNodeClass a NodePool uses (for an update, both the
// old and the new NodePool are mapped, so a NodePool moving to another NodeClass re-checks both).
func nodeClassOfNodePool(_ context.Context, nodePool *karpv1.NodePool) []reconcile.Request {
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != apis.Group || ref.Kind != nodeClassKind {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
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
		if ref != nil && ref.Namespace == secret.Namespace && ref.Name == secret.Name {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nodeClass)})
		}
	}
	return requests
}

func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	b := builder.ControllerManagedBy(m).
		Named(c.Name()).
		For(&v1alpha1.NodefleetNodeClass{})
	// Without a Secret cache (projected ServiceAccount tokens only) the driver may read no Secret at all.
	if c.secrets != nil {
		b = b.WatchesRawSource(source.Kind(c.secrets, &corev1.Secret{}, handler.TypedEnqueueRequestsFromMapFunc(c.nodeClassesNaming)))
	}
	if c.Backoffs != nil {
		b = b.WatchesRawSource(source.Channel(c.Backoffs, &handler.TypedEnqueueRequestForObject[*v1alpha1.NodefleetNodeClass]{}))
	}
	return b.
		WatchesRawSource(source.Kind(m.GetCache(), &karpv1.NodePool{}, handler.TypedEnqueueRequestsFromMapFunc(nodeClassOfNodePool))).
		WatchesRawSource(source.Kind(m.GetCache(), &karpv1.NodeClaim{}, handler.TypedEnqueueRequestsFromMapFunc(nodeClassOfNodeClaim), nodeClaimGone)).
		WithOptions(controller.Options{RateLimiter: reasonable.RateLimiter(), MaxConcurrentReconciles: 2}).
		Complete(reconcile.AsReconciler(m.GetClient(), c))
}
