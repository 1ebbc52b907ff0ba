package nodeclass

import (
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
	"nodefleet.dev/driver/pkg/nodefleetapi"
)

func instanceTypeOf(name string, offerings ...nodefleetapi.Offering) nodefleetapi.InstanceType {
	return nodefleetapi.InstanceType{Name: name, Pool: "workers", Offerings: offerings}
}

// An offering the API backs off after a failed launch turns OfferingsAvailable False, naming it
// with its reason and end; an offering merely not sold does not; Ready is untouched either way;
// the condition turns True again once the API lifts the backoff.
func TestOfferingsAvailableNamesBackoffs(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	until := time.Now().Add(4 * time.Minute).UTC().Truncate(time.Second)
	api.SetInstanceTypes(
		instanceTypeOf("cpx21",
			nodefleetapi.Offering{Zone: "hel1", UnavailableReason: ptr("quota: resource_limit_exceeded"), BackoffUntil: &until},
			nodefleetapi.Offering{Zone: "fsn1", Available: true}),
		instanceTypeOf("cpx31", nodefleetapi.Offering{Zone: "hel1", UnavailableReason: ptr("cpx31 is not sold in hel1")}),
	)
	r := newReconciling(t, api, nil)
	backedOff := r.reconcile()
	condition := backedOff.StatusConditions().Get(v1alpha1.ConditionOfferingsAvailable)
	if condition == nil || !condition.IsFalse() || condition.Reason != v1alpha1.ReasonLaunchBackoff {
		t.Fatalf("OfferingsAvailable = %+v, want False %s", condition, v1alpha1.ReasonLaunchBackoff)
	}
	for _, want := range []string{"cpx21 in hel1", until.Format(time.RFC3339), "quota: resource_limit_exceeded", "1 offering(s)"} {
		if !strings.Contains(condition.Message, want) {
			t.Errorf("message %q lacks %q", condition.Message, want)
		}
	}
	if strings.Contains(condition.Message, "cpx31") {
		t.Errorf("message %q names an offering that is only not sold", condition.Message)
	}
	if ready := backedOff.StatusConditions().Get(status.ConditionReady); !ready.IsTrue() {
		t.Fatalf("Ready = %+v, want True: a backoff is not a reason to stop launching", ready)
	}

	api.SetInstanceTypes(instanceTypeOf("cpx21", nodefleetapi.Offering{Zone: "hel1", Available: true}))
	if condition := r.reconcile().StatusConditions().Get(v1alpha1.ConditionOfferingsAvailable); !condition.IsTrue() {
		t.Fatalf("after the backoff ended: OfferingsAvailable = %+v, want True", condition)
	}
}

// Setting OfferingsAvailable must not turn a NodeClass Ready that another check keeps NotReady.
func TestOfferingsConditionLeavesReadyToItsChecks(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	api.UpdatePool("workers", func(pool *nodefleetapi.Pool) {
		pool.Taints = []nodefleetapi.Taint{{Key: "workload", Effect: nodefleetapi.TaintEffectNoSchedule}}
	})
	until := time.Now().Add(time.Minute)
	api.SetInstanceTypes(instanceTypeOf("cpx21", nodefleetapi.Offering{Zone: "hel1", UnavailableReason: ptr("sold out"), BackoffUntil: &until}))
	r := newReconciling(t, api, nil, nodePoolOf("burst", "default", nil, nil))
	stored := r.reconcile()
	if ready := stored.StatusConditions().Get(status.ConditionReady); !ready.IsFalse() || ready.Reason != v1alpha1.ReasonNodePoolTaintsNotCovered {
		t.Fatalf("Ready = %+v, want False %s", ready, v1alpha1.ReasonNodePoolTaintsNotCovered)
	}
	if condition := stored.StatusConditions().Get(v1alpha1.ConditionOfferingsAvailable); !condition.IsFalse() {
		t.Fatalf("OfferingsAvailable = %+v, want False", condition)
	}
}

// The NodeClass is read again when its first backoff ends, not a whole re-check later.
func TestNextRecheckAtTheFirstBackoffsEnd(t *testing.T) {
	now := time.Now()
	if got := nextRecheck(time.Minute, nil, now); got != time.Minute {
		t.Errorf("no backoff: %s, want the usual minute", got)
	}
	soon := []backedOff{{until: now.Add(10 * time.Second)}, {until: now.Add(50 * time.Second)}}
	if got := nextRecheck(time.Minute, soon, now); got != 11*time.Second {
		t.Errorf("backoff ending in 10 s: %s, want 11s", got)
	}
	if got := nextRecheck(time.Minute, []backedOff{{until: now.Add(time.Hour)}}, now); got != time.Minute {
		t.Errorf("backoff ending in an hour: %s, want the usual minute", got)
	}
	if got := nextRecheck(time.Minute, []backedOff{{until: now.Add(-time.Minute)}}, now); got != time.Second {
		t.Errorf("backoff already over: %s, want 1s", got)
	}
}
