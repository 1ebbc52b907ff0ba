package cloudprovider

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// instanceTypeSource keeps the API's instance types per endpoint, cluster and pool: fresh ones
// for instanceTypesTTL, and the last good list for as long as the API fails, so an outage leaves
// Karpenter scheduling against what the pool last offered instead of against nothing. One fetch
// per key is in flight at a time; concurrent callers share it.
type instanceTypeSource struct {
	fetches  singleflight.Group
	mu       sync.Mutex
	lastGood map[string]apiAnswer
}

// apiAnswer is the API's instance types and when they were asked for (SoldOutOfferings.MarkedAfter).
type apiAnswer struct {
	types []nodefleetapi.InstanceType
	asked time.Time
}

func (c *CloudProvider) apiInstanceTypes(ctx context.Context, key string, nodeClass *v1alpha1.NodefleetNodeClass, connection *apiclient.Connection) (apiAnswer, error) {
	if cached, found := c.instanceTypes.Get(key); found {
		return cached.(apiAnswer), nil
	}
	shared, err, _ := c.source.fetches.Do(key, func() (any, error) {
		asked := time.Now()
		// Shared by every caller waiting on it, so one caller giving up must not fail the others;
		// the HTTP client's timeout still bounds it.
		fetched, err := connection.InstanceTypes(context.WithoutCancel(ctx))
		c.source.mu.Lock()
		defer c.source.mu.Unlock()
		if err != nil {
			stale, found := c.source.lastGood[key]
			if !found {
				return nil, err
			}
			log.FromContext(ctx).Error(err, "serving the last instance types read", "nodeClass", nodeClass.Name, "cluster", connection.ClusterID, "pool", connection.Pool)
			// Served stale until the next try, one TTL later, so callers do not each wait on a
			// failing API.
			c.instanceTypes.SetDefault(key, stale)
			return stale, nil
		}
		answer := apiAnswer{types: fetched, asked: asked}
		c.source.lastGood[key] = answer
		c.instanceTypes.SetDefault(key, answer)
		return answer, nil
	})
	if err != nil {
		return apiAnswer{}, fmt.Errorf("reading the instance types of NodefleetNodeClass %s: %w", nodeClass.Name, err)
	}
	return shared.(apiAnswer), nil
}

// keptNodeClaims are the cluster's NodeClaims whose providerID names one of the clusters, as they
// are: what List answers for a cluster whose nodes it could not read.
func (c *CloudProvider) keptNodeClaims(ctx context.Context, clusters map[string]bool) ([]*karpv1.NodeClaim, error) {
	list := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	var kept []*karpv1.NodeClaim
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == "" {
			continue
		}
		// refOf: an hcloud:// providerID names its cluster through the NodeClaim's NodeClass.
		ref, err := c.refOf(ctx, &list.Items[i])
		if err == nil && clusters[ref.ClusterID] {
			kept = append(kept, list.Items[i].DeepCopy())
		}
	}
	return kept, nil
}
