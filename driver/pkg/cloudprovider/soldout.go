package cloudprovider

import (
	"time"

	"github.com/patrickmn/go-cache"
)

// soldOutTTL is how long an offering an InsufficientCapacity answer named (sold out, or backed
// off by the API after a quota, image or full-pool failure) is offered as unavailable before the
// API is trusted again; the API marks it unavailable too, this only bridges until Karpenter next
// reads the instance types.
const soldOutTTL = 3 * time.Minute

// SoldOutOfferings remembers offerings (instance type in a zone of a cluster) that just failed as
// sold out or that the API refused as backed off, so GetInstanceTypes and Create steer Karpenter
// elsewhere at once.
type SoldOutOfferings struct {
	entries *cache.Cache
}

func NewSoldOutOfferings() *SoldOutOfferings {
	return &SoldOutOfferings{entries: cache.New(soldOutTTL, time.Minute)}
}

func soldOutKey(clusterID, instanceType, zone string) string {
	return clusterID + "/" + instanceType + "/" + zone
}

// MarkSoldOut records the offering as sold out for soldOutTTL.
func (s *SoldOutOfferings) MarkSoldOut(clusterID, instanceType, zone string) {
	s.entries.SetDefault(soldOutKey(clusterID, instanceType, zone), struct{}{})
}

// IsSoldOut says whether the offering failed as sold out less than soldOutTTL ago.
func (s *SoldOutOfferings) IsSoldOut(clusterID, instanceType, zone string) bool {
	_, found := s.entries.Get(soldOutKey(clusterID, instanceType, zone))
	return found
}
