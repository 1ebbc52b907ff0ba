package main

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Upstream creates the server without networks and then attaches each one as its own action,
// retrying while the API answers locked or conflict (terraform-provider-hcloud server/resource.go
// create, server/common.go attachServerToNetwork).
func TestCreateAttachesNetworksAfterTheServerRetryingWhileLocked(t *testing.T) {
	saved := attachRetryWait
	attachRetryWait = func(int) time.Duration { return time.Millisecond }
	t.Cleanup(func() { attachRetryWait = saved })

	serverJSON := map[string]any{"id": 7, "name": "w1", "status": "running", "private_net": []any{
		map[string]any{"network": 4, "ip": "10.0.1.5", "alias_ips": []any{}, "mac_address": "86:00:00:00:00:01"},
	}}
	busy := []hcloud.ErrorCode{hcloud.ErrorCodeLocked, hcloud.ErrorCodeConflict}
	attaches := 0
	api, c := newRecordingAPI(t, map[string]func([]byte) (int, any){
		"POST /servers": func([]byte) (int, any) {
			return http.StatusCreated, map[string]any{"server": serverJSON, "action": doneAction(1, "create_server"), "next_actions": []any{}}
		},
		"POST /servers/7/actions/attach_to_network": func([]byte) (int, any) {
			attaches++
			if attaches <= len(busy) {
				return http.StatusLocked, recordedError(busy[attaches-1])
			}
			return http.StatusCreated, map[string]any{"action": doneAction(2, "attach_to_network")}
		},
		"GET /servers/7": func([]byte) (int, any) { return http.StatusOK, map[string]any{"server": serverJSON} },
		// The look-ups upstream makes before the create (FIDELITY.md S3).
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
	}
	id, outs, err := (server{c}).Create(context.Background(), inputs, false)
	if err != nil || id != "7" {
		t.Fatalf("Create = %q, %v", id, err)
	}
	want := []string{"GET /server_types", "GET /images", "POST /servers", "POST /servers/7/actions/attach_to_network", "POST /servers/7/actions/attach_to_network", "POST /servers/7/actions/attach_to_network", "GET /servers/7"}
	if got := api.seen(); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	var created map[string]any
	if err := json.Unmarshal(api.bodies["POST /servers"], &created); err != nil {
		t.Fatal(err)
	}
	if _, ok := created["networks"]; ok {
		t.Fatalf("the create request names networks (%v); upstream attaches them afterwards", created["networks"])
	}
	if got := outs["networks"].ArrayValue()[0].ObjectValue()["ip"].StringValue(); got != "10.0.1.5" {
		t.Fatalf("networks[0].ip = %q", got)
	}
}

// Any other attach error is not retried; server_already_attached counts as joined.
func TestAttachStopsOnOtherErrorsAndAcceptsAlreadyAttached(t *testing.T) {
	for _, c := range []struct {
		code    hcloud.ErrorCode
		wantErr bool
	}{{hcloud.ErrorCodeInvalidInput, true}, {hcloud.ErrorCodeServerAlreadyAttached, false}} {
		calls := 0
		_, cl := newRecordingAPI(t, map[string]func([]byte) (int, any){
			"POST /servers/7/actions/attach_to_network": func([]byte) (int, any) {
				calls++
				return http.StatusUnprocessableEntity, recordedError(c.code)
			},
		})
		net := resource.PropertyMap{"networkId": resource.NewNumberProperty(4)}
		err := (server{cl}).attach(context.Background(), &hcloud.Server{ID: 7}, net)
		if (err != nil) != c.wantErr || calls != 1 {
			t.Errorf("%s: attach = %v after %d calls; want error %v after 1", c.code, err, calls, c.wantErr)
		}
	}
}
