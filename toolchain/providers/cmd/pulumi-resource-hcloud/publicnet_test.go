package main

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// publicNetCreate runs a server create with the given publicNets and one network, answering every
// call upstream makes, and returns the requests and the create request's body.
func publicNetCreate(t *testing.T, ipv4, ipv6 bool) ([]string, map[string]any) {
	t.Helper()
	serverJSON := map[string]any{"id": 7, "name": "w1", "status": "running", "private_net": []any{
		map[string]any{"network": 4, "ip": "10.0.1.5", "alias_ips": []any{}, "mac_address": "86:00:00:00:00:01"},
	}}
	answer := func(command string) func([]byte) (int, any) {
		return func([]byte) (int, any) { return http.StatusCreated, map[string]any{"action": doneAction(2, command)} }
	}
	api, c := newRecordingAPI(t, map[string]func([]byte) (int, any){
		"POST /servers": func([]byte) (int, any) {
			return http.StatusCreated, map[string]any{"server": serverJSON, "action": doneAction(1, "create_server"), "next_actions": []any{}}
		},
		"POST /servers/7/actions/attach_to_network": answer("attach_to_network"),
		"POST /servers/7/actions/poweron":           answer("start_server"),
		"POST /servers/7/actions/poweroff":          answer("stop_server"),
		"GET /servers/7":                            func([]byte) (int, any) { return http.StatusOK, map[string]any{"server": serverJSON} },
		"GET /server_types": func([]byte) (int, any) {
			return http.StatusOK, map[string]any{"server_types": []any{map[string]any{"id": 1, "name": "cx22", "architecture": "x86"}}}
		},
		"GET /images": func([]byte) (int, any) {
			return http.StatusOK, map[string]any{"images": []any{map[string]any{"id": 2, "name": "ubuntu-24.04", "architecture": "x86", "status": "available"}}}
		},
	})
	inputs := resource.PropertyMap{
		"name":       resource.NewStringProperty("w1"),
		"serverType": resource.NewStringProperty("cx22"),
		"image":      resource.NewStringProperty("ubuntu-24.04"),
		"networks": resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{
			"networkId": resource.NewNumberProperty(4),
		})}),
		"publicNets": resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{
			"ipv4Enabled": resource.NewBoolProperty(ipv4),
			"ipv6Enabled": resource.NewBoolProperty(ipv6),
		})}),
	}
	if id, _, err := (server{c}).Create(context.Background(), inputs, false); err != nil || id != "7" {
		t.Fatalf("Create = %q, %v", id, err)
	}
	var created map[string]any
	if err := json.Unmarshal(api.bodies["POST /servers"], &created); err != nil {
		t.Fatal(err)
	}
	return api.seen(), created
}

// publicNets reaches the create request as public_net.enable_ipv4/enable_ipv6 (upstream's
// resourceServerCreate, hcloud-go ServerCreatePublicNet); a server keeping IPv6 starts at create.
func TestPublicNetsReachTheCreateRequest(t *testing.T) {
	requests, created := publicNetCreate(t, false, true)
	if got, want := created["public_net"], map[string]any{"enable_ipv4": false, "enable_ipv6": true}; !reflect.DeepEqual(got, want) {
		t.Fatalf("public_net = %v, want %v", got, want)
	}
	if created["start_after_create"] != true {
		t.Fatalf("start_after_create = %v, want true", created["start_after_create"])
	}
	want := []string{"GET /server_types", "GET /images", "POST /servers", "POST /servers/7/actions/attach_to_network", "GET /servers/7"}
	if !reflect.DeepEqual(requests, want) {
		t.Fatalf("requests = %v, want %v", requests, want)
	}
}

// With neither public IPv4 nor IPv6 upstream creates the server stopped, attaches its networks,
// then powers it on, off and on again (onServerCreateWithoutPublicNet).
func TestServerWithoutPublicNetStartsAfterItsNetworks(t *testing.T) {
	requests, created := publicNetCreate(t, false, false)
	if created["start_after_create"] != false {
		t.Fatalf("start_after_create = %v, want false", created["start_after_create"])
	}
	want := []string{
		"GET /server_types", "GET /images", "POST /servers", "POST /servers/7/actions/attach_to_network",
		"POST /servers/7/actions/poweron", "POST /servers/7/actions/poweroff", "POST /servers/7/actions/poweron", "GET /servers/7",
	}
	if !reflect.DeepEqual(requests, want) {
		t.Fatalf("requests = %v, want %v", requests, want)
	}
}

// A route is `<networkId>-<destination>`, added with add_route and read back from the network;
// deleting one already gone is a success, as upstream (internal/network/resource_route.go).
func TestNetworkRouteCreateReadAndDelete(t *testing.T) {
	network := map[string]any{"network": map[string]any{"id": 4, "name": "n", "ip_range": "10.0.0.0/16",
		"routes": []any{map[string]any{"destination": "0.0.0.0/0", "gateway": "10.0.1.2"}}}}
	c, api := newCloud(t, map[string]func(int) (int, any){
		"POST /networks/4/actions/add_route": func(n int) (int, any) {
			if n == 0 {
				return http.StatusConflict, apiError("conflict", "network is busy")
			}
			return http.StatusCreated, map[string]any{"action": action(2, "add_route", "success")}
		},
		"GET /networks/4": func(int) (int, any) { return http.StatusOK, network },
		"POST /networks/4/actions/delete_route": func(n int) (int, any) {
			return http.StatusNotFound, apiError("not_found", "no such route")
		},
	})
	inputs := resource.PropertyMap{
		"networkId":   resource.NewNumberProperty(4),
		"destination": resource.NewStringProperty("0.0.0.0/0"),
		"gateway":     resource.NewStringProperty("10.0.1.2"),
	}
	id, outs, err := (networkRoute{c}).Create(context.Background(), inputs, false)
	if err != nil || id != "4-0.0.0.0/0" {
		t.Fatalf("Create = %q, %v", id, err)
	}
	if got := outs["gateway"].StringValue(); got != "10.0.1.2" {
		t.Fatalf("gateway = %q", got)
	}
	if got := count(api.Log(), "POST /networks/4/actions/add_route"); got != 2 {
		t.Fatalf("%d add_route calls, want 2 (one conflict retried)", got)
	}
	if err := (networkRoute{c}).Delete(context.Background(), id, outs); err != nil {
		t.Fatalf("Delete of a gone route: %v", err)
	}
	if _, failures := (networkRoute{c}).Check(resource.PropertyMap{"networkId": resource.NewNumberProperty(4), "destination": resource.NewStringProperty("0.0.0.0"), "gateway": resource.NewStringProperty("x")}); !reflect.DeepEqual(properties(failures), []string{"destination", "gateway"}) {
		t.Fatalf("Check failures = %v", properties(failures))
	}
}
