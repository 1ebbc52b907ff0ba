package cloudprovider

import (
	"time"

	"github.com/patrickmn/go-cache"
)

// soldOutTTL is the longest an offering an InsufficientCapacity answer named (sold out, or backed
// off by the API after a quota, image or full-pool failure) is offered as unavailable. The API
// marks it unavailable too, for its own period; this only bridges until the driver next reads the
// API's instance types (MarkedAfter), so the offering comes back when the API lifts its mark.
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

// MarkSoldOut records the offering as sold out for soldOutTTL, from now.
func (s *SoldOutOfferings) MarkSoldOut(clusterID, instanceType, zone string) {
	s.entries.SetDefault(soldOutKey(clusterID, instanceType, zone), time.Now())
}

// IsSoldOut says whether the offering failed as sold out less than soldOutTTL ago.
func (s *SoldOutOfferings) IsSoldOut(clusterID, instanceType, zone string) bool {
	_, found := s.entries.Get(soldOutKey(clusterID, instanceType, zone))
	return found
}

// MarkedAfter says whether the offering was marked (less than soldOutTTL ago) after `asked`, the
// moment an answer of the API was asked for: an answer asked for later already carries the API's
// own mark, so it is trusted instead.
func (s *SoldOutOfferings) MarkedAfter(clusterID, instanceType, zone string, asked time.Time) bool {
	marked, found := s.entries.Get(soldOutKey(clusterID, instanceType, zone))
	return found && marked.(time.Time).After(asked)
}
