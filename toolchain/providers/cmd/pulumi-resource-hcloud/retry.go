package main

import (
	"context"
	"errors"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// retryBase is the first wait of retry's schedule (1s, doubling, as terraform-provider-hcloud's
// control.Retry); the tests shorten it.
var retryBase = time.Second

// errStop wraps an error retry must not retry.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }
func (e errStop) Unwrap() error { return e.err }

// stop marks err as final for retry; nil stays nil.
func stop(err error) error {
	if err == nil {
		return nil
	}
	return errStop{err}
}

// retry runs attempt up to tries times, waiting 1s, 2s, 4s, ... between failures, as upstream does
// for calls the API refuses while another change is under way. An error wrapped by stop ends it at
// once; so does the context (the engine's timeout or cancellation), which upstream's sleep ignores.
func retry(ctx context.Context, tries int, attempt func() error) error {
	backoff := hcloud.ExponentialBackoff(2, retryBase)
	var err error
	for try := range tries {
		err = attempt()
		var final errStop
		if errors.As(err, &final) {
			return final.err
		}
		if err == nil || try == tries-1 {
			break
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff(try)):
		}
	}
	return err
}
