package main

import (
	"crypto/sha1"
	"encoding/base64"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

func TestServerStateKeepsUserDataAsItsHash(t *testing.T) {
	text := "#cloud-config\nhostname: w1\n"
	sum := sha1.Sum([]byte(text))
	want := base64.StdEncoding.EncodeToString(sum[:])

	inputs := resource.PropertyMap{"name": resource.NewStringProperty("w1"), "userData": resource.MakeSecret(resource.NewStringProperty(text))}
	outs := serverState(inputs)
	got := outs["userData"]
	if !got.IsSecret() || got.SecretValue().Element.StringValue() != want {
		t.Fatalf("userData output = %v, want the secret %q", got, want)
	}
	if inputs["userData"].SecretValue().Element.StringValue() != text {
		t.Fatal("the inputs were changed; the diff compares them")
	}
	if outs["name"].StringValue() != "w1" {
		t.Fatalf("other outputs changed: %v", outs["name"])
	}

	plain := serverState(resource.PropertyMap{"userData": resource.NewStringProperty(text)})["userData"]
	if plain.IsSecret() || plain.StringValue() != want {
		t.Fatalf("plain userData output = %v, want %q", plain, want)
	}
	if _, ok := serverState(resource.PropertyMap{})["userData"]; ok {
		t.Fatal("a server without user data gained one")
	}
	if again := serverState(outs)["userData"]; again.SecretValue().Element.StringValue() != want {
		t.Fatalf("a recorded hash was hashed again: %v", again)
	}
	unknown := serverState(resource.PropertyMap{"userData": resource.MakeComputed(resource.NewStringProperty(""))})["userData"]
	if !unknown.ContainsUnknowns() {
		t.Fatalf("an unknown user data (preview) became %v", unknown)
	}
}

// An update preview keeps what the server reported known (a Terraform plan keeps unchanged computed
// attributes); only an output never recorded is unknown.
func TestUpdatePreviewKeepsComputedOutputsKnown(t *testing.T) {
	olds := resource.NewPropertyMapFromMap(map[string]any{
		"serverType": "cpx21", "ipv4Address": "203.0.113.5", "ipv6Address": "2001:db8::1", "ipv6Network": "2001:db8::/64",
		"status": "running", "primaryDiskSize": 80, "backupWindow": "",
		"networks": []any{map[string]any{"networkId": 7, "ip": "10.0.1.2", "aliasIps": []any{}, "macAddress": "86:00:00:00:00:01"}},
	})
	inputs := resource.NewPropertyMapFromMap(map[string]any{"serverType": "cpx31", "networks": []any{map[string]any{"networkId": 7}}})
	outs, err := server{}.Update(t.Context(), "1", olds, inputs, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range serverComputed {
		if v := outs[resource.PropertyKey(key)]; v.ContainsUnknowns() || !v.DeepEquals(olds[resource.PropertyKey(key)]) {
			t.Errorf("%s = %v in the preview, want the recorded %v", key, v, olds[resource.PropertyKey(key)])
		}
	}
	if ip := outs["networks"].ArrayValue()[0].ObjectValue()["ip"]; ip.StringValue() != "10.0.1.2" {
		t.Errorf("networks[0].ip = %v, want the attached address kept", ip)
	}
	if outs["serverType"].StringValue() != "cpx31" {
		t.Errorf("serverType = %v, want the new input", outs["serverType"])
	}
	moved := resource.NewPropertyMapFromMap(map[string]any{"networks": []any{map[string]any{"networkId": 8}}})
	if outs, _ := (server{}).Update(t.Context(), "1", olds, moved, true); outs["networks"].DeepEquals(olds["networks"]) {
		t.Error("a preview moving the server to another network kept the old attachment")
	}
	fresh, _ := server{}.Update(t.Context(), "1", resource.PropertyMap{}, inputs, true)
	if !fresh["ipv4Address"].ContainsUnknowns() {
		t.Errorf("ipv4Address never recorded = %v, want unknown", fresh["ipv4Address"])
	}
}

// A refresh brings firewallIds and the placement group (and the other inputs it reads) up to the
// server, so the next up sees a firewall removed by hand; an input the program leaves out stays out.
func TestRefreshInputsFollowTheServer(t *testing.T) {
	old := resource.NewPropertyMapFromMap(map[string]any{"name": "w1", "firewallIds": []any{3, 4}, "placementGroupId": 9, "image": "ubuntu-24.04"})
	read := resource.NewPropertyMapFromMap(map[string]any{"name": "w1", "firewallIds": []any{4}, "labels": map[string]any{}, "deleteProtection": false, "image": "other"})
	got := server{}.RefreshInputs(old, read)
	if ids := got["firewallIds"].ArrayValue(); len(ids) != 1 || ids[0].NumberValue() != 4 {
		t.Errorf("firewallIds = %v, want [4] as read", got["firewallIds"])
	}
	if _, ok := got["placementGroupId"]; ok {
		t.Errorf("placementGroupId = %v, want it gone (the server left its group)", got["placementGroupId"])
	}
	if _, ok := got["labels"]; ok {
		t.Error("empty labels read for a program without labels became an input")
	}
	if _, ok := got["deleteProtection"]; ok {
		t.Error("false deleteProtection read for a program without it became an input")
	}
	if got["image"].StringValue() != "ubuntu-24.04" {
		t.Errorf("image = %v, want the input kept (not read back)", got["image"])
	}
	reordered := server{}.RefreshInputs(old, resource.NewPropertyMapFromMap(map[string]any{"firewallIds": []any{4, 3}}))
	if !reordered["firewallIds"].DeepEquals(old["firewallIds"]) {
		t.Errorf("firewallIds = %v, want the program's order kept for the same set", reordered["firewallIds"])
	}
}
