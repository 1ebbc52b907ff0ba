package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func properties(failures []*pulumirpc.CheckFailure) []string {
	out := []string{}
	for _, f := range failures {
		out = append(out, f.Property)
	}
	return out
}

const subnetPath = "POST /networks/5/actions/delete_subnet"

// The delete is retried while servers are still attached (they detach in the background when
// deleted in the same run) or the network is busy, as upstream does.
func TestSubnetDeleteRetriesWhileServersAreAttached(t *testing.T) {
	c, api := newCloud(t, map[string]func(int) (int, any){
		subnetPath: func(n int) (int, any) {
			switch n {
			case 0:
				return http.StatusInternalServerError, apiError("service_error", "cannot remove subnet because servers are attached to it")
			case 1:
				return http.StatusLocked, apiError("locked", "network is locked")
			}
			return http.StatusCreated, map[string]any{"action": action(3, "delete_subnet", "success")}
		},
	})
	if err := (networkSubnet{c}).Delete(context.Background(), "5-10.0.1.0/24", resource.PropertyMap{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := count(api.Log(), subnetPath); got != 3 {
		t.Fatalf("%d delete_subnet calls, want 3", got)
	}
}

// Other refusals are not retried, and a subnet already gone is deleted.
func TestSubnetDeleteStopsOnOtherErrors(t *testing.T) {
	c, api := newCloud(t, map[string]func(int) (int, any){
		subnetPath: func(int) (int, any) { return http.StatusForbidden, apiError("forbidden", "read-only token") },
	})
	if err := (networkSubnet{c}).Delete(context.Background(), "5-10.0.1.0/24", resource.PropertyMap{}); err == nil {
		t.Fatal("Delete succeeded on forbidden")
	}
	if got := count(api.Log(), subnetPath); got != 1 {
		t.Fatalf("%d delete_subnet calls after forbidden, want 1", got)
	}
	c, _ = newCloud(t, map[string]func(int) (int, any){
		subnetPath: func(int) (int, any) { return http.StatusNotFound, apiError("not_found", "no such network") },
	})
	if err := (networkSubnet{c}).Delete(context.Background(), "5-10.0.1.0/24", resource.PropertyMap{}); err != nil {
		t.Fatalf("Delete of a gone subnet: %v", err)
	}
}

// When the add succeeded but its action failed, the subnet exists: Create still returns its id, so
// the engine records it (a partial create) rather than orphaning it.
func TestSubnetCreateKeepsTheIDWhenItsActionFails(t *testing.T) {
	c, api := newCloud(t, map[string]func(int) (int, any){
		"POST /networks/5/actions/add_subnet": func(n int) (int, any) {
			if n == 0 {
				return http.StatusConflict, apiError("conflict", "network is busy")
			}
			return http.StatusCreated, map[string]any{"action": action(4, "add_subnet", "error")}
		},
	})
	inputs := resource.PropertyMap{
		"networkId":   resource.NewNumberProperty(5),
		"type":        resource.NewStringProperty("cloud"),
		"networkZone": resource.NewStringProperty("eu-central"),
		"ipRange":     resource.NewStringProperty("10.0.1.0/24"),
	}
	id, outs, err := (networkSubnet{c}).Create(context.Background(), inputs, false)
	if err == nil || id != "5-10.0.1.0/24" || outs == nil {
		t.Fatalf("Create = %q, %v, %v; want the id and outputs with the action's error", id, outs, err)
	}
	if got := count(api.Log(), "POST /networks/5/actions/add_subnet"); got != 2 {
		t.Fatalf("%d add_subnet calls, want 2 (conflict retried)", got)
	}
}

// networkId is a required input of the SDK's NetworkSubnetArgs (upstream: network_id Required).
func TestSubnetCheckRequiresTheNetwork(t *testing.T) {
	_, failures := (networkSubnet{}).Check(resource.PropertyMap{
		"type":        resource.NewStringProperty("cloud"),
		"networkZone": resource.NewStringProperty("eu-central"),
		"ipRange":     resource.NewStringProperty("10.0.1.0/24"),
	})
	if got := properties(failures); len(got) != 1 || got[0] != "networkId" {
		t.Fatalf("failures on %v, want networkId", got)
	}
}
