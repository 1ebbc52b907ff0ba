package cloudprovider

import (
	"errors"
	"regexp"

	"nodefleet.dev/driver/pkg/apiclient"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

// Error codes of the scaling API the driver acts on (automation/api/apiError.ts).
const (
	codeInsufficientCapacity     = "InsufficientCapacity"
	codeNoCompatibleInstanceType = "NoCompatibleInstanceType"
	codePoolNotFound             = "PoolNotFound"
	codeClusterNotFound          = "ClusterNotFound"
	codeNodeNotFound             = "NodeNotFound"
)

// conditionReason is Karpenter's pattern for a condition Reason (and so for a drift reason).
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// createErrorOf maps a failed create by the API's error code (docs/design.md §9): no room or nothing fitting
// makes Karpenter try elsewhere (InsufficientCapacityError), a NodeClass naming a pool or cluster
// the API does not serve is not ready, any other answer of the API is a CreateError whose reason is
// the code. Errors that never reached an answer (network, timeouts) stay plain, and are retried.
func createErrorOf(err error) error {
	var tokenError *apiclient.TokenError
	if errors.As(err, &tokenError) {
		return cloudprovider.NewNodeClassNotReadyError(err)
	}
	var apiError *apiclient.Error
	if !errors.As(err, &apiError) {
		return err
	}
	switch apiError.Code {
	case codeInsufficientCapacity, codeNoCompatibleInstanceType:
		return cloudprovider.NewInsufficientCapacityError(err)
	case codePoolNotFound, codeClusterNotFound:
		return cloudprovider.NewNodeClassNotReadyError(err)
	}
	reason := apiError.Code
	if !conditionReason.MatchString(reason) {
		reason = "CreateFailed"
	}
	return cloudprovider.NewCreateError(err, reason, apiError.Message)
}

// isGone says whether the API answered that the node no longer exists.
func isGone(err error) bool {
	return apiclient.CodeOf(err) == codeNodeNotFound
}
