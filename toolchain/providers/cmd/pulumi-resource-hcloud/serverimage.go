package main

import (
	"context"
	"fmt"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/exp/deprecationutil"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// serverImage resolves a server's image the way upstream's create does (terraform-provider-hcloud
// server/resource.go resourceServerCreate): the server type first, for its architecture, then the
// image by id, or by name for that architecture (deprecated images included), so one image name
// serves x86 and arm (cax) types alike. A deprecated image is a warning; one past its
// unavailability date is an error before anything is created.
func (s server) serverImage(ctx context.Context, serverType, image string) (*hcloud.Image, error) {
	typ, _, err := s.client.ServerType.Get(ctx, serverType)
	if err != nil {
		return nil, fmt.Errorf("serverType: %q: %w", serverType, err)
	}
	if typ == nil {
		return nil, fmt.Errorf("serverType: no server type named %q", serverType)
	}
	found, _, err := s.client.Image.GetForArchitecture(ctx, image, typ.Architecture)
	if err != nil {
		return nil, fmt.Errorf("image: %q: %w", image, err)
	}
	if found == nil {
		return nil, fmt.Errorf("image: no image %q for the %s architecture of server type %s", image, typ.Architecture, serverType)
	}
	if message, unavailable := deprecationutil.ImageMessage(found); message != "" {
		if unavailable {
			return nil, fmt.Errorf("image: %s", message)
		}
		nativeprovider.Warn(ctx, "image: "+message)
	}
	return found, nil
}
