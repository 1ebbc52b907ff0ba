// The OfferingsAvailable condition: the offerings of the NodeClass's pool that a failed launch backed
// off (sold out, quota, unusable image, full pool), as the API's instance types report them, each
// with its reason and until when. Karpenter launches elsewhere meanwhile, so nothing else shows
// why a NodePool's nodes come from another type or zone, or why none come at all.
package nodeclass

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
)

// backedOff is one offering a failed launch made unavailable.
type backedOff struct {
	instanceType, zone, reason string
	until                      time.Time
}

// backedOffOfferings lists the pool's offerings that carry a backoff, soonest to end first.
func (c *Controller) backedOffOfferings(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) ([]backedOff, error) {
	connection, err := c.connections.For(nodeClass)
	if err != nil {
		return nil, err
	}
	instanceTypes, err := connection.InstanceTypes(ctx)
	if err != nil {
		return nil, err
	}
	var backed []backedOff
	for _, instanceType := range instanceTypes {
		for _, offering := range instanceType.Offerings {
			if offering.BackoffUntil == nil {
				continue
			}
			reason := ""
			if offering.UnavailableReason != nil {
				reason = *offering.UnavailableReason
			}
			backed = append(backed, backedOff{instanceType: instanceType.Name, zone: offering.Zone, reason: reason, until: *offering.BackoffUntil})
		}
	}
	slices.SortFunc(backed, func(a, b backedOff) int { return a.until.Compare(b.until) })
	return backed, nil
}

// setOfferingsCondition sets OfferingsAvailable from the backed-off offerings. It is not part of
// Ready: a NodePool with one offering left still launches.
func setOfferingsCondition(nodeClass *v1alpha1.NodefleetNodeClass, backed []backedOff) {
	conditions := nodeClass.StatusConditions()
	if len(backed) == 0 {
		conditions.SetTrue(v1alpha1.ConditionOfferingsAvailable)
		return
	}
	parts := make([]string, 0, len(backed))
	for _, b := range backed {
		parts = append(parts, fmt.Sprintf("%s in %s until %s (%s)", b.instanceType, b.zone, b.until.UTC().Format(time.RFC3339), b.reason))
	}
	conditions.SetFalse(v1alpha1.ConditionOfferingsAvailable, v1alpha1.ReasonLaunchBackoff, truncate(fmt.Sprintf(
		"%d offering(s) of pool %s backed off after failed launches; Karpenter launches other types or zones meanwhile: %s",
		len(backed), nodeClass.Spec.Pool, strings.Join(parts, "; "))))
}

// nextRecheck is when the NodeClass is read again: at the first backoff's end, if sooner than usual.
func nextRecheck(usual time.Duration, backed []backedOff, now time.Time) time.Duration {
	if len(backed) == 0 {
		return usual
	}
	// A second late, so the API has lifted it by then.
	return min(usual, max(time.Second, backed[0].until.Sub(now)+time.Second))
}
