package main

import (
	"fmt"
	"os"
	"time"
)

// instanceGCGraceVariable sets how long a node of the API that no NodeClaim claims is kept before
// the driver's garbage collector deletes it (a Go duration, e.g. 10m; unset or empty: the
// collector's default, garbagecollection.DefaultGrace).
const instanceGCGraceVariable = "INSTANCE_GC_GRACE"

// minInstanceGCGrace keeps the grace above a create's round trip (the driver's 10 s request timeout, with a margin):
// a shorter one could delete the node of a create whose answer is still on its way.
const minInstanceGCGrace = 30 * time.Second

func instanceGCGraceFromEnv() (time.Duration, error) {
	text := os.Getenv(instanceGCGraceVariable)
	if text == "" {
		return 0, nil
	}
	grace, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a duration such as 10m: %w", instanceGCGraceVariable, text, err)
	}
	if grace < minInstanceGCGrace {
		return 0, fmt.Errorf("%s=%q is shorter than %v, a create's round trip", instanceGCGraceVariable, text, minInstanceGCGrace)
	}
	return grace, nil
}
