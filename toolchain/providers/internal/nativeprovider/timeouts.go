package nativeprovider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// withTimeout bounds one create, update or delete by the resource's customTimeouts, which the
// engine sends as seconds in the request (0: none given). Upstream passes the same value to the
// Terraform resource as its timeout for that operation (pulumi-terraform-bridge pkg/tfbridge/
// provider.go newTimeoutOverrides).
func withTimeout(ctx context.Context, seconds float64) (context.Context, context.CancelFunc) {
	if seconds <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(seconds*float64(time.Second)))
}

// timedOut names the customTimeouts a failed operation ran out of, so the error says which
// setting to raise instead of only "context deadline exceeded".
func timedOut(ctx context.Context, operation string, seconds float64, err error) error {
	if err == nil || seconds <= 0 || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s did not finish within customTimeouts.%s (%s): %w", operation, operation, time.Duration(seconds*float64(time.Second)), err)
}
