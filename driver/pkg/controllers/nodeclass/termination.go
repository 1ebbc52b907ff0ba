package nodeclass

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/events"
	nodeclaimutils "sigs.k8s.io/karpenter/pkg/utils/nodeclaim"
)

// terminatingRecheck is how often a deleted NodeClass waiting for its NodeClaims is looked at
// again besides each NodeClaim's deletion (it re-publishes the Event, which Karpenter's recorder
// dedupes for 2 minutes, and retries NodeClaims it could not delete).
const terminatingRecheck = time.Minute

// namesShown is how many NodeClaims the Event and the condition name before "and N more".
const namesShown = 5

// addFinalizer puts the termination finalizer on a NodeClass that lacks it; requeue is true when
// another writer changed the NodeClass in between.
func (c *Controller) addFinalizer(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (requeue bool, err error) {
	if controllerutil.ContainsFinalizer(nodeClass, v1alpha1.TerminationFinalizer) {
		return false, nil
	}
	stored := nodeClass.DeepCopy()
	controllerutil.AddFinalizer(nodeClass, v1alpha1.TerminationFinalizer)
	// The optimistic lock: a merge patch replaces the whole finalizer list.
	if err := c.kubeClient.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return false, client.IgnoreNotFound(err)
	}
	return false, nil
}

// finalize handles a deleted NodeClass. Karpenter's core stops launching for its NodePools
// (NodeClassReady=False, NodeClassTerminating) but leaves the running NodeClaims alone, and their
// nodes can only be deleted through this NodeClass's endpoint and token. So the driver deletes each
// NodeClaim of the NodeClass (Karpenter then drains its node and calls the CloudProvider's Delete,
// as for any NodeClaim), keeps the finalizer while any is left, saying so with an Event and the
// Ready condition, and lifts it once none is left.
func (c *Controller) finalize(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nodeClass, v1alpha1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list, nodeclaimutils.ForNodeClass(nodeClass)); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the NodeClaims of NodefleetNodeClass %s: %w", nodeClass.Name, err)
	}
	if len(list.Items) == 0 {
		stored := nodeClass.DeepCopy()
		controllerutil.RemoveFinalizer(nodeClass, v1alpha1.TerminationFinalizer)
		if err := c.kubeClient.Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing the termination finalizer: %w", err))
		}
		return reconcile.Result{}, nil
	}

	names := make([]string, 0, len(list.Items))
	var failed []string
	for i := range list.Items {
		nodeClaim := &list.Items[i]
		names = append(names, nodeClaim.Name)
		if !nodeClaim.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.kubeClient.Delete(ctx, nodeClaim); client.IgnoreNotFound(err) != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", nodeClaim.Name, err))
		}
	}
	slices.Sort(names)
	c.recorder.Publish(waitingOnNodeClaimTermination(nodeClass, names))

	message := fmt.Sprintf("deleted: waiting for %s to terminate (the driver deleted them; Karpenter drains their nodes and deletes them through this NodeClass's endpoint and token)", nodeClaimNames(names))
	// A deletion that does not progress is most often an API the driver cannot reach: say so.
	if _, reason, problem, _ := c.check(ctx, nodeClass); reason != "" {
		message += fmt.Sprintf("; the API check fails with %s: %s", reason, problem)
	}
	if len(failed) > 0 {
		message += "; deleting failed for " + strings.Join(failed, ", ")
	}
	stored := nodeClass.DeepCopy()
	nodeClass.StatusConditions().SetFalse(status.ConditionReady, v1alpha1.ReasonWaitingOnNodeClaimTermination, message)
	if !equality.Semantic.DeepEqual(stored.Status, nodeClass.Status) {
		if err := c.kubeClient.Status().Patch(ctx, nodeClass, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	return reconcile.Result{RequeueAfter: terminatingRecheck}, nil
}

// waitingOnNodeClaimTermination is the Event of a deleted NodeClass whose NodeClaims are still
// there (the AWS provider publishes one of the same reason for its EC2NodeClass).
func waitingOnNodeClaimTermination(nodeClass *v1alpha1.NodefleetNodeClass, names []string) events.Event {
	return events.Event{
		InvolvedObject: nodeClass,
		Type:           corev1.EventTypeNormal,
		Reason:         v1alpha1.ReasonWaitingOnNodeClaimTermination,
		Message:        fmt.Sprintf("Deletion waits for %s to terminate", nodeClaimNames(names)),
		DedupeValues:   []string{string(nodeClass.UID)},
	}
}

// nodeClaimNames is "NodeClaim a", "NodeClaims a, b" or "NodeClaims a, …, e and 3 more".
func nodeClaimNames(names []string) string {
	if len(names) == 1 {
		return "NodeClaim " + names[0]
	}
	if len(names) <= namesShown {
		return "NodeClaims " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("NodeClaims %s and %d more", strings.Join(names[:namesShown], ", "), len(names)-namesShown)
}

// nodeClassOfNodeClaim enqueues the NodefleetNodeClass a NodeClaim uses.
func nodeClassOfNodeClaim(_ context.Context, nodeClaim *karpv1.NodeClaim) []reconcile.Request {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil || ref.Group != apis.Group || ref.Kind != nodeClassKind {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
}

// nodeClaimGone passes only a NodeClaim's deletion from the cluster: the event a deleted NodeClass
// waits for.
var nodeClaimGone = predicate.TypedFuncs[*karpv1.NodeClaim]{
	CreateFunc:  func(event.TypedCreateEvent[*karpv1.NodeClaim]) bool { return false },
	UpdateFunc:  func(event.TypedUpdateEvent[*karpv1.NodeClaim]) bool { return false },
	DeleteFunc:  func(event.TypedDeleteEvent[*karpv1.NodeClaim]) bool { return true },
	GenericFunc: func(event.TypedGenericEvent[*karpv1.NodeClaim]) bool { return false },
}
