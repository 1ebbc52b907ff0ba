package main

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// getServer is scaleway.elasticmetal.getServer, after terraform-provider-scaleway's
// internal/services/baremetal/server_data_source.go (DataSourceServerRead): by `serverId` (with or
// without its zone), else one ListServers call in the zone filtered by `name` (and `projectId`) and
// an exact name match (datasource.FindExact's messages); then the server is read as the resource's
// Read reads it (ResourceServerRead), so `privateNetworks[].vlan` is what the API reports now, 0
// while it reports none. Answers the zoned id as `id` and `serverId`; a server that is gone fails,
// naming it.
func (c *cloud) getServer(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error) {
	client, err := c.api()
	if err != nil {
		return nil, err
	}
	zone := c.zone(args)
	serverID := nativeprovider.String(args, "serverId")
	if serverID != "" {
		if locality, _ := splitID(serverID); locality != "" {
			zone = scw.Zone(locality)
		}
		serverID = bareID(serverID)
	} else {
		name := nativeprovider.String(args, "name")
		req := &baremetal.ListServersRequest{Zone: zone, Name: &name}
		if project := nativeprovider.String(args, "projectId"); project != "" {
			req.ProjectID = &project
		}
		list, err := baremetal.NewAPI(client).ListServers(req, scw.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		var matches []*baremetal.Server
		for _, s := range list.Servers {
			if s.Name == name {
				matches = append(matches, s)
			}
		}
		switch {
		case len(matches) == 0:
			return nil, fmt.Errorf("no element found with the name %s", name)
		case len(matches) > 1:
			return nil, fmt.Errorf("multiple elements found with the name %s", name)
		}
		serverID = matches[0].ID
	}
	id := zonedID(zone, serverID)
	out, found, err := server{c}.Read(ctx, id, resource.PropertyMap{})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("baremetal server (%s) not found", id)
	}
	out["id"] = resource.NewStringProperty(id)
	out["serverId"] = resource.NewStringProperty(id)
	return out, nil
}
