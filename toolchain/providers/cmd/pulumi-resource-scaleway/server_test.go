package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	baremetalV3 "github.com/scaleway/scaleway-sdk-go/api/baremetal/v3"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

const (
	serverUUID = "44444444-4444-4444-4444-444444444444"
	osUUID     = "55555555-5555-5555-5555-555555555555"
	pnUUID     = "66666666-6666-6666-6666-666666666666"
	ipUUID     = "77777777-7777-7777-7777-777777777777"
	serverPath = "/baremetal/v1/zones/fr-par-2/servers/" + serverUUID
	pnsPath    = "/baremetal/v3/zones/fr-par-2/servers/" + serverUUID + "/private-networks"
)

func testServer(status baremetal.ServerStatus, install baremetal.ServerInstallStatus) *baremetal.Server {
	return &baremetal.Server{
		ID: serverUUID, Name: "node-1", Zone: testZone, ProjectID: testProject, OfferID: offerUUID, Status: status, Tags: []string{"t"},
		Install: &baremetal.ServerInstall{OsID: osUUID, Status: install, SSHKeyIDs: []string{}},
		Options: []*baremetal.ServerOption{{ID: privateNetworkOptionID, Name: "Private Network"}},
	}
}

func attachment(status baremetalV3.ServerPrivateNetworkStatus) *baremetalV3.ListServerPrivateNetworksResponse {
	vlan := uint32(3001)
	return &baremetalV3.ListServerPrivateNetworksResponse{TotalCount: 1, ServerPrivateNetworks: []*baremetalV3.ServerPrivateNetwork{
		{ID: "88888888-8888-8888-8888-888888888888", ServerID: serverUUID, PrivateNetworkID: pnUUID, Status: status, Vlan: &vlan, IpamIPIDs: []string{ipUUID}},
	}}
}

func serverInputs() resource.PropertyMap {
	return resource.PropertyMap{
		"name":    resource.NewStringProperty("node-1"),
		"zone":    resource.NewStringProperty(testZone),
		"offer":   resource.NewStringProperty(testZone + "/" + offerUUID),
		"os":      resource.NewStringProperty(testZone + "/" + osUUID),
		"options": resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{"id": resource.NewStringProperty(testZone + "/" + privateNetworkOptionID)})}),
		"privateNetworks": resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{
			"id": resource.NewStringProperty("fr-par/" + pnUUID), "ipamIpIds": resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("fr-par/" + ipUUID)}),
		})}),
	}
}

// Create installs at create, waits for the install to complete, then adds the options, then sets
// the private networks and waits for them, then reads (ResourceServerCreate's order); the state
// keeps zoned and regional ids and the VLAN.
func TestServerCreateWaitsForInstallThenOptionsThenPrivateNetworks(t *testing.T) {
	c, f := newCloud(t, map[string]func(int) (int, any){
		"POST /baremetal/v1/zones/fr-par-2/servers": ok(testServer(baremetal.ServerStatusDelivering, baremetal.ServerInstallStatusToInstall)),
		"GET " + serverPath: func(n int) (int, any) {
			if n < 2 {
				return 200, testServer(baremetal.ServerStatusReady, baremetal.ServerInstallStatusInstalling)
			}
			return 200, testServer(baremetal.ServerStatusReady, baremetal.ServerInstallStatusCompleted)
		},
		"POST " + serverPath + "/options/" + privateNetworkOptionID: ok(testServer(baremetal.ServerStatusReady, baremetal.ServerInstallStatusCompleted)),
		"PUT " + pnsPath: ok(&baremetalV3.SetServerPrivateNetworksResponse{ServerPrivateNetworks: attachment(baremetalV3.ServerPrivateNetworkStatusAttaching).ServerPrivateNetworks}),
		"GET /baremetal/v3/zones/fr-par-2/server-private-networks": func(n int) (int, any) {
			if n == 0 {
				return 200, attachment(baremetalV3.ServerPrivateNetworkStatusAttaching)
			}
			return 200, attachment(baremetalV3.ServerPrivateNetworkStatusAttached)
		},
		"GET /baremetal/v1/zones/fr-par-2/offers/" + offerUUID: ok(&baremetal.Offer{ID: offerUUID, Name: "EM-A116X-SSD"}),
		"GET /baremetal/v1/zones/fr-par-2/os/" + osUUID:        ok(&baremetal.OS{ID: osUUID, Name: "Ubuntu"}),
	})
	id, outs, err := server{c}.Create(context.Background(), serverInputs(), false)
	if err != nil {
		t.Fatal(err)
	}
	if id != testZone+"/"+serverUUID {
		t.Errorf("id %q", id)
	}
	calls := f.Log()
	order := []string{"POST /baremetal/v1/zones/fr-par-2/servers", "POST " + serverPath + "/options/" + privateNetworkOptionID, "PUT " + pnsPath, "GET /baremetal/v1/zones/fr-par-2/offers/" + offerUUID}
	for i := 1; i < len(order); i++ {
		if index(calls, order[i-1]) < 0 || index(calls, order[i-1]) > index(calls, order[i]) {
			t.Fatalf("calls %v: want %q before %q", calls, order[i-1], order[i])
		}
	}
	if n := slices.Index(calls, "POST "+serverPath+"/options/"+privateNetworkOptionID); slices.Index(calls[:n], "GET "+serverPath) < 0 || countOf(calls[:n], "GET "+serverPath) < 3 {
		t.Errorf("calls %v: the option was added before the install completed", calls)
	}
	pn := outs["privateNetworks"].ArrayValue()[0].ObjectValue()
	if pn["id"].StringValue() != "fr-par/"+pnUUID || pn["vlan"].NumberValue() != 3001 || pn["ipamIpIds"].ArrayValue()[0].StringValue() != "fr-par/"+ipUUID {
		t.Errorf("privateNetworks[0] %v", pn)
	}
	if outs["offerName"].StringValue() != "EM-A116X-SSD" || outs["os"].StringValue() != testZone+"/"+osUUID {
		t.Errorf("offerName %v os %v", outs["offerName"], outs["os"])
	}
}

func countOf(calls []string, key string) int {
	n := 0
	for _, c := range calls {
		if c == key {
			n++
		}
	}
	return n
}

// Delete detaches every private network before deleting the server, and a server already gone
// (404) is deleted.
func TestServerDeleteDetachesPrivateNetworksFirstAndTakesA404AsDone(t *testing.T) {
	c, f := newCloud(t, map[string]func(int) (int, any){
		"GET /baremetal/v3/zones/fr-par-2/server-private-networks": func(n int) (int, any) {
			if n == 0 {
				return 200, attachment(baremetalV3.ServerPrivateNetworkStatusAttached)
			}
			return 200, &baremetalV3.ListServerPrivateNetworksResponse{}
		},
		"DELETE " + pnsPath + "/" + pnUUID: func(int) (int, any) { return 204, nil },
		"DELETE " + serverPath:             func(int) (int, any) { return 404, notFoundBody("baremetal_server", serverUUID) },
	})
	if err := (server{c}).Delete(context.Background(), testZone+"/"+serverUUID, nil); err != nil {
		t.Fatal(err)
	}
	calls := f.Log()
	if a, d := index(calls, "DELETE "+pnsPath+"/"+pnUUID), index(calls, "DELETE "+serverPath); a < 0 || d < a {
		t.Errorf("calls %v: want the detach before the delete", calls)
	}
}

// Read answers "gone" for a 404, so a refresh drops the server.
func TestServerReadAnswersGoneOnA404(t *testing.T) {
	c, _ := newCloud(t, map[string]func(int) (int, any){
		"GET " + serverPath: func(int) (int, any) { return 404, notFoundBody("baremetal_server", serverUUID) },
	})
	_, exists, err := server{c}.Read(context.Background(), testZone+"/"+serverUUID, resource.PropertyMap{})
	if err != nil || exists {
		t.Errorf("exists %v err %v, want gone without error", exists, err)
	}
}

// Private networks need the Private Network option (customDiffPrivateNetworkOption).
func TestServerCheckRequiresThePrivateNetworkOption(t *testing.T) {
	inputs := serverInputs()
	delete(inputs, "options")
	_, failures := server{}.Check(inputs)
	if len(failures) != 1 || failures[0].GetProperty() != "options" {
		t.Errorf("failures %v, want one on options", failures)
	}
	if _, failures := (server{}).Check(serverInputs()); len(failures) != 0 {
		t.Errorf("failures %v for valid inputs", failures)
	}
}

// A wait runs for what is left of customTimeouts, else for upstream's 82 minutes.
func TestWaitTimeoutIsCustomTimeoutsElseUpstreamDefault(t *testing.T) {
	if got := *timeout(context.Background(), defaultServerTimeout); got.Minutes() != 82 {
		t.Errorf("default %v, want 82m", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90_000_000_000) // 90 s
	defer cancel()
	if got := *timeout(ctx, defaultServerTimeout); got.Seconds() > 90 || got.Seconds() < 80 {
		t.Errorf("custom %v, want about 90s", got)
	}
}

// --dump-schema reports upstream's ForceNew keys and the SDK's required inputs.
func TestDumpSchemaReportsReplaceKeysAndRequired(t *testing.T) {
	var out bytes.Buffer
	if err := nativeprovider.DumpSchema(&out, map[string]nativeprovider.Resource{"server": server{}, "ip": ip{}, "pn": privateNetwork{}}); err != nil {
		t.Fatal(err)
	}
	var got map[string]nativeprovider.ResourceSchema
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2][]string{
		"server": {{"offer", "projectId", "zone"}, {"offer"}},
		"ip":     {{"address", "isIpv6", "projectId", "region"}, {"sources"}},
		"pn":     {{"ipv4Subnet", "ipv6Subnets", "projectId", "region", "vpcId"}, {}},
	} {
		if !slices.Equal(got[name].ReplaceKeys, want[0]) || !slices.Equal(got[name].Required, want[1]) {
			t.Errorf("%s: %+v, want replace %v required %v", name, got[name], want[0], want[1])
		}
	}
}

// Provider keys are overridden by the SCW_* environment (MergeProfiles puts the environment last);
// a zone alone gives its region.
func TestConfigureLetsTheEnvironmentWinAndInfersTheRegion(t *testing.T) {
	t.Setenv("SCW_CONFIG_PATH", t.TempDir()+"/none.yaml")
	t.Setenv("SCW_ACCESS_KEY", "SCWXXXXXXXXXXXXXXXXX")
	t.Setenv("SCW_SECRET_KEY", testSecret)
	t.Setenv("SCW_DEFAULT_ZONE", "nl-ams-1")
	t.Setenv("SCW_DEFAULT_REGION", "")
	c := &cloud{}
	if err := c.configure(resource.PropertyMap{"zone": resource.NewStringProperty("fr-par-2"), "projectId": resource.NewStringProperty(testProject)}); err != nil {
		t.Fatal(err)
	}
	if got := c.zone(resource.PropertyMap{}); got != scw.ZoneNlAms1 {
		t.Errorf("zone %s, want the environment's nl-ams-1", got)
	}
	if got := c.projectID(resource.PropertyMap{}); got != testProject {
		t.Errorf("project %q, want the provider's", got)
	}
	if c.retryInterval != upstreamRetryInterval {
		t.Errorf("retry interval %v", c.retryInterval)
	}
}

// An update compares against the recorded outputs: what they hold beyond the inputs (an empty
// cloudInit, option names, attachment VLANs, localities) is no change; a new OS or tag is.
func TestServerUpdateComparesWhatTheAPIIsSent(t *testing.T) {
	outputs := serverInputs()
	outputs["cloudInit"] = resource.NewStringProperty("")
	outputs["os"] = resource.NewStringProperty(osUUID)
	outputs["options"] = resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{
		"id": resource.NewStringProperty(testZone + "/" + privateNetworkOptionID), "name": resource.NewStringProperty("Private Network"), "expiresAt": resource.NewStringProperty(""),
	})})
	outputs["privateNetworks"] = resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{
		"id": resource.NewStringProperty("fr-par/" + pnUUID), "vlan": resource.NewNumberProperty(3001), "status": resource.NewStringProperty("attached"),
		"ipamIpIds": resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("fr-par/" + ipUUID)}),
	})})
	inputs := serverInputs()
	for _, key := range []string{"cloudInit", "os", "options", "privateNetworks", "tags", "protected", "sshKeyIds"} {
		if serverValue(outputs, key) != serverValue(inputs, key) {
			t.Errorf("%s: %q != %q, want no change", key, serverValue(outputs, key), serverValue(inputs, key))
		}
	}
	inputs["os"] = resource.NewStringProperty(testZone + "/other")
	inputs["tags"] = resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("x")})
	for _, key := range []string{"os", "tags"} {
		if serverValue(outputs, key) == serverValue(inputs, key) {
			t.Errorf("%s: no change seen", key)
		}
	}
}
