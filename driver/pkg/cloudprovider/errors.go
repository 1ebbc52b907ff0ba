package cloudprovider

import (
	"errors"
	"fmt"
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
	codeConflict                 = "Conflict"
)

// statusGone is what a Conflict's details say of a uniqueID whose node was deleted: the NodeClaim
// name is burned, no create under it can succeed again.
const statusGone = "GONE"

// conditionReason is Karpenter's pattern for a condition Reason (and so for a drift reason).
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// createErrorOf maps a failed create by the API's error code (docs/design.md §9): no room or nothing fitting
// makes Karpenter try elsewhere (InsufficientCapacityError), a NodeClass naming a pool or cluster
// the API does not serve is not ready, a uniqueID whose node was deleted (Conflict, status GONE)
// ends the NodeClaim at once too (InsufficientCapacityError: the only answer, with
// NodeClassNotReady, on which Karpenter's launch deletes the NodeClaim instead of retrying the
// same name until its registration timeout), any other answer of the API is a CreateError whose
// reason is the code. Errors that never reached an answer (network, timeouts) stay plain, and are retried.
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
	case codeConflict:
		if status, _ := apiError.Details["status"].(string); status == statusGone {
			return cloudprovider.NewInsufficientCapacityError(fmt.Errorf("the NodeClaim's uniqueID is burned, its node was deleted: %w", err))
		}
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

// unavailableOfferings is what an InsufficientCapacity answer says is unavailable, as (instance
// type, zone) pairs: admission lists `offerings` (each with its reason); the answer of a create
// that waited for its node (waitSeconds) names the node's `instanceType` and `zone`.
func unavailableOfferings(apiError *apiclient.Error) [][2]string {
	var pairs [][2]string
	if listed, ok := apiError.Details["offerings"].([]any); ok {
		for _, entry := range listed {
			offering, _ := entry.(map[string]any)
			instanceType, _ := offering["instanceType"].(string)
			zone, _ := offering["zone"].(string)
			if instanceType != "" && zone != "" {
				pairs = append(pairs, [2]string{instanceType, zone})
			}
		}
	}
	instanceType, _ := apiError.Details["instanceType"].(string)
	zone, _ := apiError.Details["zone"].(string)
	if instanceType != "" && zone != "" {
		pairs = append(pairs, [2]string{instanceType, zone})
	}
	return pairs
}
