package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// cloud is the configured Hetzner client shared by the resources.
type cloud struct {
	client *hcloud.Client
}

// configure reads `hcloud:token`, `hcloud:endpoint`, `hcloud:pollInterval` and `hcloud:pollFunction`
// like the upstream provider, falling back to HCLOUD_TOKEN and HCLOUD_ENDPOINT.
func (c *cloud) configure(config resource.PropertyMap) error {
	token := nativeprovider.String(config, "token")
	if token == "" {
		token = os.Getenv("HCLOUD_TOKEN")
	}
	endpoint := nativeprovider.String(config, "endpoint")
	if endpoint == "" {
		endpoint = os.Getenv("HCLOUD_ENDPOINT")
	}
	backoff, err := pollBackoff(nativeprovider.String(config, "pollInterval"), nativeprovider.String(config, "pollFunction"))
	if err != nil {
		return err
	}
	// Upstream refuses to configure without a token (its plugin-framework half reports it on the
	// token attribute) and checks its length, so a preview without credentials fails at once.
	if token == "" {
		return errors.New("token: missing Hetzner Cloud API token: set hcloud:token (secret) or HCLOUD_TOKEN")
	}
	if len(token) != 64 {
		return fmt.Errorf("token: must be exactly 64 characters long, not %d", len(token))
	}
	opts := []hcloud.ClientOption{
		hcloud.WithToken(token),
		hcloud.WithApplication("nodefleet-pulumi-resource-hcloud", version),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: backoff}),
	}
	if endpoint != "" {
		opts = append(opts, hcloud.WithEndpoint(endpoint))
	}
	c.client = hcloud.NewClient(opts...)
	return nil
}

const defaultPollInterval = 500 * time.Millisecond

// pollBackoff is how long to wait before each poll of a running action, as terraform-provider-hcloud
// chooses it (hcloud/provider.go, providerConfigure): pollInterval (default 500ms) doubling, capped
// at hcloud-go's one minute, or pollInterval every time with pollFunction "constant". One schedule
// whether or not the interval is given, since upstream's interval has a default.
func pollBackoff(interval, function string) (hcloud.BackoffFunc, error) {
	if function != "" && function != "constant" && function != "exponential" {
		return nil, fmt.Errorf("pollFunction: must be \"constant\" or \"exponential\", not %q", function)
	}
	base := defaultPollInterval
	if interval != "" {
		parsed, err := time.ParseDuration(interval)
		if err != nil || parsed <= 0 {
			return nil, fmt.Errorf("pollInterval: must be a positive duration such as 500ms, not %q", interval)
		}
		base = parsed
	}
	if function == "constant" {
		return hcloud.ConstantBackoff(base), nil
	}
	return hcloud.ExponentialBackoff(2, base), nil
}

func (c *cloud) api() (*hcloud.Client, error) {
	if c.client == nil {
		return nil, errors.New("the provider is not configured")
	}
	return c.client, nil
}

// wait waits for the actions a call started; a failed action is the call's error.
func (c *cloud) wait(ctx context.Context, actions ...*hcloud.Action) error {
	var started []*hcloud.Action
	for _, a := range actions {
		if a != nil {
			started = append(started, a)
		}
	}
	if len(started) == 0 {
		return nil
	}
	return c.client.Action.WaitFor(ctx, started...)
}

// readCreated finishes a Create whose add was accepted: it waits for the add's action, then answers
// what read finds under id. The id is answered even when either step fails, because the resource
// exists from the moment the add was accepted; upstream records it before waiting, so the state
// keeps it (replaced or deleted by the next run) rather than orphaning it.
func (c *cloud) readCreated(
	ctx context.Context,
	action *hcloud.Action,
	id string,
	outs resource.PropertyMap,
	read func(context.Context, string, resource.PropertyMap) (resource.PropertyMap, bool, error),
) (string, resource.PropertyMap, error) {
	if err := c.wait(ctx, action); err != nil {
		return id, outs, err
	}
	found, _, err := read(ctx, id, outs)
	if err != nil {
		return id, outs, err
	}
	return id, found, nil
}

// call runs one API call that returns an action and waits for it.
func (c *cloud) call(ctx context.Context, run func() (*hcloud.Action, *hcloud.Response, error)) error {
	action, _, err := run()
	if err != nil {
		return err
	}
	return c.wait(ctx, action)
}

func parseID(kind, id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s id %q: must be a positive integer", kind, id)
	}
	return n, nil
}

func formatID(id int64) string { return strconv.FormatInt(id, 10) }

func labelsProperty(labels map[string]string) resource.PropertyValue {
	m := resource.PropertyMap{}
	for k, v := range labels {
		m[resource.PropertyKey(k)] = resource.NewStringProperty(v)
	}
	return resource.NewObjectProperty(m)
}
