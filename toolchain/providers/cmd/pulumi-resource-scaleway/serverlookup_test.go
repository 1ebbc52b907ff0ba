package main

import (
	"context"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	baremetalV3 "github.com/scaleway/scaleway-sdk-go/api/baremetal/v3"
	"nodefleet.dev/toolchain/providers/internal/scriptedapi"
)

// getServer reads the server as the resource's Read does, each call live: the VLAN reads 0 while
// the API reports none and the tag once it does; a name is matched exactly, one list call, and a
// missing one fails with datasource.FindExact's message.
func TestGetServerReadsTheVlanLiveAndFindsByName(t *testing.T) {
	late := attachment(baremetalV3.ServerPrivateNetworkStatusAttached)
	late.ServerPrivateNetworks[0].Vlan = nil
	c, f := newCloud(t, map[string]func(int) (int, any){
		"GET " + serverPath: ok(testServer(baremetal.ServerStatusReady, baremetal.ServerInstallStatusCompleted)),
		"GET /baremetal/v3/zones/fr-par-2/server-private-networks": func(n int) (int, any) {
			if n == 0 {
				return 200, late
			}
			return 200, attachment(baremetalV3.ServerPrivateNetworkStatusAttached)
		},
		"GET /baremetal/v1/zones/fr-par-2/offers/" + offerUUID: ok(&baremetal.Offer{ID: offerUUID, Name: "EM-A116X-SSD"}),
		"GET /baremetal/v1/zones/fr-par-2/os/" + osUUID:        ok(&baremetal.OS{ID: osUUID, Name: "Ubuntu"}),
		"GET /baremetal/v1/zones/fr-par-2/servers": func(n int) (int, any) {
			if n == 0 {
				return 200, &baremetal.ListServersResponse{}
			}
			return 200, &baremetal.ListServersResponse{TotalCount: 2, Servers: []*baremetal.Server{
				{ID: "99999999-9999-9999-9999-999999999999", Name: "node-10"},
				testServer(baremetal.ServerStatusReady, baremetal.ServerInstallStatusCompleted),
			}}
		},
	})
	vlanOf := func(out resource.PropertyMap) float64 {
		return out["privateNetworks"].ArrayValue()[0].ObjectValue()["vlan"].NumberValue()
	}
	byID := resource.PropertyMap{"serverId": resource.NewStringProperty(testZone + "/" + serverUUID)}
	out, err := c.getServer(context.Background(), byID)
	if err != nil {
		t.Fatal(err)
	}
	if got := vlanOf(out); got != 0 {
		t.Errorf("vlan %v while the API reports none, want 0", got)
	}
	if out["serverId"].StringValue() != testZone+"/"+serverUUID || out["id"].StringValue() != testZone+"/"+serverUUID {
		t.Errorf("ids %v %v", out["serverId"], out["id"])
	}
	if out, err = c.getServer(context.Background(), byID); err != nil || vlanOf(out) != 3001 {
		t.Errorf("second read: %v, vlan %v, want 3001", err, out)
	}
	byName := resource.PropertyMap{"name": resource.NewStringProperty("node-1"), "zone": resource.NewStringProperty(testZone)}
	if _, err := c.getServer(context.Background(), byName); err == nil || !strings.Contains(err.Error(), "no element found with the name node-1") {
		t.Errorf("missing server: %v", err)
	}
	out, err = c.getServer(context.Background(), byName)
	if err != nil || out["serverId"].StringValue() != testZone+"/"+serverUUID {
		t.Errorf("by name: %v %v", err, out["serverId"])
	}
	if got := scriptedapi.Count(f.Log(), "GET /baremetal/v1/zones/fr-par-2/servers"); got != 2 {
		t.Errorf("%d list calls, want one per look-up", got)
	}
}
