// Package failed deletes a launched NodeClaim whose node the API reports FAILED, at once, instead
// of leaving it to Karpenter's 15-minute registration timeout, with a Warning Event on the
// NodeClaim saying why; Karpenter then provisions again, elsewhere when the failure backed the
// offering off (sold out, quota, an unusable image: remembered by the CloudProvider and the API).
package failed

import (
	"context"
	"fmt"
	"time"

	"github.com/awslabs/operatorpkg/reasonable"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1 "k8s.io/api/core/v1"

	"nodefleet.dev/driver/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/events"
)

// LaunchFailedReason is the reason of the Event published on a NodeClaim deleted because its node failed.
const LaunchFailedReason = "LaunchFailed"

// pollInterval is how often an unregistered launched NodeClaim's node is checked: a server the
// API could not create fails within its first engine run, seconds after Create.
const pollInterval = 15 * time.Second

// LaunchFailures is what the controller needs of the CloudProvider.
type LaunchFailures interface {
	LaunchFailure(ctx context.Context, nodeClaim *karpv1.NodeClaim) (failure error, err error)
}

type Controller struct {
	kubeClient client.Client
	failures   LaunchFailures
	recorder   events.Recorder
}

func NewController(kubeClient client.Client, failures LaunchFailures, recorder events.Recorder) *Controller {
	return &Controller{kubeClient: kubeClient, failures: failures, recorder: recorder}
}

func (c *Controller) Name() string { return "nodeclaim.failed" }

func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	if !awaitingRegistration(nodeClaim) {
		return reconcile.Result{}, nil
	}
	failure, err := c.failures.LaunchFailure(ctx, nodeClaim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if failure == nil {
		return reconcile.Result{RequeueAfter: pollInterval}, nil
	}
	log.FromContext(ctx).Info("deleting NodeClaim whose node failed", "NodeClaim", nodeClaim.Name, "provider-id", nodeClaim.Status.ProviderID, "failure", failure.Error())
	c.recorder.Publish(events.Event{
		InvolvedObject: nodeClaim,
		Type:           corev1.EventTypeWarning,
		Reason:         LaunchFailedReason,
		Message:        truncate(fmt.Sprintf("NodeClaim %s deleted, its node failed: %s", nodeClaim.Name, failure.Error())),
		DedupeValues:   []string{string(nodeClaim.UID)},
	})
	return reconcile.Result{}, client.IgnoreNotFound(c.kubeClient.Delete(ctx, nodeClaim))
}

// awaitingRegistration: launched by this driver, not yet registered, not being deleted.
func awaitingRegistration(nodeClaim *karpv1.NodeClaim) bool {
	return nodeClaim.DeletionTimestamp.IsZero() &&
		nodeClaim.Spec.NodeClassRef != nil && nodeClaim.Spec.NodeClassRef.Group == apis.Group &&
		nodeClaim.Status.ProviderID != "" &&
		nodeClaim.StatusConditions().Get(karpv1.ConditionTypeLaunched).IsTrue() &&
		!nodeClaim.StatusConditions().Get(karpv1.ConditionTypeRegistered).IsTrue()
}

func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return !equality.Semantic.DeepEqual(e.ObjectOld.(*karpv1.NodeClaim).Status, e.ObjectNew.(*karpv1.NodeClaim).Status)
			},
		})).
		WithOptions(controller.Options{RateLimiter: reasonable.RateLimiter(), MaxConcurrentReconciles: 10}).
		Complete(reconcile.AsReconciler(m.GetClient(), c))
}

// truncate keeps an Event message within what the API server stores comfortably.
func truncate(message string) string {
	const limit = 1024
	if len(message) <= limit {
		return message
	}
	return message[:limit-3] + "..."
}
