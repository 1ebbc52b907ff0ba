package cloudprovider

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/metrics"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/events"
)

// OfferingUnavailableReason is the reason of the Warning Event published on a NodeClass when one of
// its offerings is marked unavailable after an InsufficientCapacity launch failure.
const OfferingUnavailableReason = "OfferingUnavailable"

// maxEventMessage keeps an Event message within what the API server stores comfortably.
const maxEventMessage = 1024

// markUnavailable marks an offering unavailable for soldOutTTL, counts it in
// metrics.OfferingsMarkedUnavailable and publishes an OfferingUnavailable Event on the NodeClaim's
// NodeClass (once per offering while it stays marked): Karpenter's own InsufficientCapacityError
// Event lands on the NodeClaim it then deletes, while the NodeClass outlives it and is where people
// look for why a pool launches elsewhere (docs/karpenter.md, "Events").
func (c *CloudProvider) markUnavailable(ctx context.Context, nodeClaim *karpv1.NodeClaim, clusterID, instanceType, zone, why string) {
	c.soldOut.MarkSoldOut(clusterID, instanceType, zone)
	metrics.OfferingsMarkedUnavailable.WithLabelValues(clusterID, instanceType, zone).Inc()
	if c.recorder == nil {
		return
	}
	nodeClass, err := c.nodeClassOf(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		log.FromContext(ctx).V(1).Info("no NodefleetNodeClass to publish an OfferingUnavailable Event on", "NodeClaim", nodeClaim.Name, "error", err.Error())
		return
	}
	c.notifyBackoff(nodeClass)
	message := fmt.Sprintf("Offering %s in %s of cluster %s marked unavailable for %s after NodeClaim %s failed to launch: %s",
		instanceType, zone, clusterID, soldOutTTL, nodeClaim.Name, why)
	if len(message) > maxEventMessage {
		message = message[:maxEventMessage-3] + "..."
	}
	c.recorder.Publish(events.Event{
		InvolvedObject: nodeClass,
		Type:           corev1.EventTypeWarning,
		Reason:         OfferingUnavailableReason,
		Message:        message,
		DedupeValues:   []string{string(nodeClass.UID), clusterID, instanceType, zone},
		DedupeTimeout:  soldOutTTL,
	})
}

// backoffQueue bounds the NodeClasses waiting to be re-read; a full queue drops the notice, and the
// NodeClass's periodic re-check shows the backoff instead.
const backoffQueue = 64

// BackedOffNodeClasses receives each NodeClass one of whose offerings a failed launch just marked
// unavailable, for the nodeclass controller's OfferingsAvailable condition.
func (c *CloudProvider) BackedOffNodeClasses() <-chan event.TypedGenericEvent[*v1alpha1.NodefleetNodeClass] {
	return c.backoffs
}

func (c *CloudProvider) notifyBackoff(nodeClass *v1alpha1.NodefleetNodeClass) {
	select {
	case c.backoffs <- event.TypedGenericEvent[*v1alpha1.NodefleetNodeClass]{Object: nodeClass}:
	default:
	}
}
