// Every endpoint of the fake Scaleway API driven through scaleway-sdk-go, over the strict transport
// (strict_test.go). The fakes are started by test/automation/local/fakeScalewaySdk.test.ts, which
// passes their addresses and the key in FAKE_SCW_* variables; run alone, the test skips.
package sdkcheck

import (
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	bm1 "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	bm3 "github.com/scaleway/scaleway-sdk-go/api/baremetal/v3"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	ipam "github.com/scaleway/scaleway-sdk-go/api/ipam/v1"
	vpc "github.com/scaleway/scaleway-sdk-go/api/vpc/v2"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

const testZone = scw.ZoneFrPar2
const testRegion = scw.RegionFrPar

type fixture struct {
	transport *strictTransport
	bm        *bm1.API
	pn1       *bm1.PrivateNetworkAPI
	pn3       *bm3.PrivateNetworkAPI
	vpc       *vpc.API
	ipam      *ipam.API
	iam       *iam.API
}

func env(t *testing.T, name string) string {
	value := os.Getenv(name)
	if value == "" {
		t.Skipf("%s is not set: this check runs from test/automation/local/fakeScalewaySdk.test.ts, which starts the fake", name)
	}
	return value
}

func newFixture(t *testing.T, urlVariable, secretKey string) *fixture {
	transport := newStrictTransport()
	client, err := scw.NewClient(
		scw.WithAPIURL(env(t, urlVariable)),
		scw.WithAuth(env(t, "FAKE_SCW_ACCESS_KEY"), secretKey),
		scw.WithDefaultProjectID(env(t, "FAKE_SCW_PROJECT_ID")),
		scw.WithDefaultZone(testZone),
		scw.WithDefaultRegion(testRegion),
		scw.WithHTTPClient(&http.Client{Transport: transport, Timeout: 30 * time.Second}),
	)
	if err != nil {
		t.Fatalf("scw.NewClient: %v", err)
	}
	t.Cleanup(func() {
		for _, p := range transport.problems {
			t.Errorf("strict decoding: %s", p)
		}
	})
	return &fixture{transport, bm1.NewAPI(client), bm1.NewPrivateNetworkAPI(client), bm3.NewPrivateNetworkAPI(client), vpc.NewAPI(client), ipam.NewAPI(client), iam.NewAPI(client)}
}

func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func ptr[T any](v T) *T { return &v }

// eventually polls until ok or the deadline (the fake's delays are a few hundred milliseconds).
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 20 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestCatalogThroughTheSdk(t *testing.T) {
	f := newFixture(t, "FAKE_SCW_API_URL", env(t, "FAKE_SCW_SECRET_KEY"))
	offers := must[*bm1.ListOffersResponse](t, "ListOffers")(f.bm.ListOffers(&bm1.ListOffersRequest{}, scw.WithAllPages()))
	if offers.TotalCount < 10 || int(offers.TotalCount) != len(offers.Offers) {
		t.Fatalf("ListOffers: %d offers, total_count %d", len(offers.Offers), offers.TotalCount)
	}
	named := must[*bm1.ListOffersResponse](t, "ListOffers name")(f.bm.ListOffers(&bm1.ListOffersRequest{Name: ptr("EM-A610R-NVME")}))
	if len(named.Offers) != 1 {
		t.Fatalf("ListOffers name=EM-A610R-NVME: %d offers", len(named.Offers))
	}
	offer := must[*bm1.Offer](t, "GetOffer")(f.bm.GetOffer(&bm1.GetOfferRequest{OfferID: named.Offers[0].ID}))
	if offer.CPUs[0].CoreCount != 6 || offer.Memories[0].Capacity != 32*scw.GB || len(offer.Disks) != 2 || !contains(offer.Tags, "cloud-init") {
		t.Fatalf("GetOffer EM-A610R-NVME: %+v", offer)
	}
	byName := must[*bm1.Offer](t, "GetOfferByName")(f.bm.GetOfferByName(&bm1.GetOfferByNameRequest{OfferName: "EM-A116X-SSD", Zone: testZone}))
	if contains(byName.Tags, "cloud-init") {
		t.Fatalf("EM-A116X-SSD has the cloud-init tag: %v", byName.Tags)
	}
	oses := must[*bm1.ListOSResponse](t, "ListOS")(f.bm.ListOS(&bm1.ListOSRequest{}, scw.WithAllPages()))
	var noble *bm1.OS
	for _, o := range oses.Os {
		if o.Name == "Ubuntu" && o.Version == "24.04 LTS (Noble Numbat)" {
			noble = o
		}
	}
	if noble == nil || !noble.CloudInitSupported {
		t.Fatalf("ListOS: no Ubuntu 24.04 with cloud-init among %d", len(oses.Os))
	}
	must[*bm1.OS](t, "GetOS")(f.bm.GetOS(&bm1.GetOSRequest{OsID: noble.ID}))
	options := must[*bm1.ListOptionsResponse](t, "ListOptions")(f.bm.ListOptions(&bm1.ListOptionsRequest{Name: ptr("Private Network")}))
	if len(options.Options) != 1 || options.Options[0].PrivateNetwork == nil {
		t.Fatalf("ListOptions name=Private Network: %+v", options.Options)
	}
	must[*bm1.Option](t, "GetOption")(f.bm.GetOption(&bm1.GetOptionRequest{OptionID: options.Options[0].ID}))
}

// catalogIDs: the offer, OS and Private Network option the servers below use.
func catalogIDs(t *testing.T, f *fixture, offerName string) (offer, os, option string) {
	o := must[*bm1.Offer](t, "GetOfferByName")(f.bm.GetOfferByName(&bm1.GetOfferByNameRequest{OfferName: offerName, Zone: testZone}))
	oses := must[*bm1.ListOSResponse](t, "ListOS")(f.bm.ListOS(&bm1.ListOSRequest{}))
	for _, candidate := range oses.Os {
		if candidate.Name == "Ubuntu" && strings.HasPrefix(candidate.Version, "24.04") {
			os = candidate.ID
		}
	}
	options := must[*bm1.ListOptionsResponse](t, "ListOptions")(f.bm.ListOptions(&bm1.ListOptionsRequest{Name: ptr("Private Network")}))
	return o.ID, os, options.Options[0].ID
}

const sshKeyID = "11111111-2222-4333-8444-555555555555"

func TestServersThroughTheSdk(t *testing.T) {
	f := newFixture(t, "FAKE_SCW_API_URL", env(t, "FAKE_SCW_SECRET_KEY"))
	offerID, osID, optionID := catalogIDs(t, f, "EM-A610R-NVME")
	userData := []byte("#cloud-config\nruncmd: [true]\n")
	var ids []string
	for _, name := range []string{"sdk-a", "sdk-b", "sdk-c"} {
		server := must[*bm1.Server](t, "CreateServer")(f.bm.CreateServer(&bm1.CreateServerRequest{
			OfferID:   offerID,
			Name:      name,
			Tags:      []string{"sdkcheck", "member=" + name},
			OptionIDs: []string{optionID},
			UserData:  &userData,
			Install:   &bm1.CreateServerRequestInstall{OsID: osID, Hostname: name, SSHKeyIDs: []string{sshKeyID}},
		}))
		ids = append(ids, server.ID)
	}
	t.Cleanup(func() {
		for _, id := range ids {
			_, _ = f.bm.DeleteServer(&bm1.DeleteServerRequest{ServerID: id})
		}
	})

	// Pages: page_size 2 of 3 tagged servers.
	second := must[*bm1.ListServersResponse](t, "ListServers page 2")(f.bm.ListServers(&bm1.ListServersRequest{
		Tags: []string{"sdkcheck"}, Page: ptr(int32(2)), PageSize: ptr(uint32(2)),
	}))
	if second.TotalCount != 3 || len(second.Servers) != 1 || second.Servers[0].Name != "sdk-c" {
		t.Fatalf("ListServers tags=sdkcheck page 2 of 2: total %d, %d servers", second.TotalCount, len(second.Servers))
	}
	all := must[*bm1.ListServersResponse](t, "ListServers all pages")(f.bm.ListServers(&bm1.ListServersRequest{
		Tags: []string{"sdkcheck"}, PageSize: ptr(uint32(1)),
	}, scw.WithAllPages()))
	if len(all.Servers) != 3 {
		t.Fatalf("ListServers with all pages of 1: %d servers", len(all.Servers))
	}
	byName := must[*bm1.ListServersResponse](t, "ListServers name")(f.bm.ListServers(&bm1.ListServersRequest{Name: ptr("sdk-b")}))
	if byName.TotalCount != 1 || byName.Servers[0].ID != ids[1] {
		t.Fatalf("ListServers name=sdk-b: %+v", byName.Servers)
	}
	byTags := must[*bm1.ListServersResponse](t, "ListServers tags")(f.bm.ListServers(&bm1.ListServersRequest{Tags: []string{"sdkcheck", "member=sdk-a"}}))
	if byTags.TotalCount != 1 || byTags.Servers[0].ID != ids[0] {
		t.Fatalf("ListServers tags=sdkcheck,member=sdk-a: %+v", byTags.Servers)
	}

	// Rebooting a server still delivering is refused as a transient state.
	_, err := f.bm.RebootServer(&bm1.RebootServerRequest{ServerID: ids[0], BootType: bm1.ServerBootTypeNormal})
	var transient *scw.TransientStateError
	if !errors.As(err, &transient) || transient.ResourceID != ids[0] {
		t.Fatalf("RebootServer while delivering: %v", err)
	}

	timeout := 20 * time.Second
	installed := must[*bm1.Server](t, "WaitForServerInstall")(f.bm.WaitForServerInstall(&bm1.WaitForServerInstallRequest{ServerID: ids[0], Timeout: &timeout, RetryInterval: ptr(100 * time.Millisecond)}))
	if installed.Status != bm1.ServerStatusReady || installed.Install.Status != bm1.ServerInstallStatusCompleted || len(installed.IPs) != 2 {
		t.Fatalf("installed server: status %s, install %s, %d IPs", installed.Status, installed.Install.Status, len(installed.IPs))
	}
	if installed.UserData == nil || string(*installed.UserData) != string(userData) {
		t.Fatalf("user data: %v", installed.UserData)
	}
	must[*bm1.Server](t, "WaitForServerOptions")(f.bm.WaitForServerOptions(&bm1.WaitForServerOptionsRequest{ServerID: ids[0], Timeout: &timeout, RetryInterval: ptr(100 * time.Millisecond)}))
	rebooted := must[*bm1.Server](t, "RebootServer")(f.bm.RebootServer(&bm1.RebootServerRequest{ServerID: ids[0], BootType: bm1.ServerBootTypeNormal}))
	if rebooted.Status != bm1.ServerStatusStarting {
		t.Fatalf("RebootServer: status %s", rebooted.Status)
	}
	must[*bm1.Server](t, "WaitForServer")(f.bm.WaitForServer(&bm1.WaitForServerRequest{ServerID: ids[0], Timeout: &timeout, RetryInterval: ptr(100 * time.Millisecond)}))
	reinstall := must[*bm1.Server](t, "InstallServer")(f.bm.InstallServer(&bm1.InstallServerRequest{ServerID: ids[0], OsID: osID, Hostname: "sdk-a", SSHKeyIDs: []string{sshKeyID}}))
	if reinstall.Install.Status != bm1.ServerInstallStatusInstalling {
		t.Fatalf("InstallServer: install %s", reinstall.Install.Status)
	}
	updated := must[*bm1.Server](t, "UpdateServer")(f.bm.UpdateServer(&bm1.UpdateServerRequest{ServerID: ids[1], Tags: &[]string{"sdkcheck", "edited"}}))
	if !contains(updated.Tags, "edited") {
		t.Fatalf("UpdateServer tags: %v", updated.Tags)
	}
	withOption := must[*bm1.Server](t, "AddOptionServer remote access")(f.bm.AddOptionServer(&bm1.AddOptionServerRequest{ServerID: ids[1], OptionID: "931df052-d713-4674-8b58-96a63244c8e2"}))
	if len(withOption.Options) != 2 {
		t.Fatalf("AddOptionServer: %d options", len(withOption.Options))
	}
	must[*bm1.Server](t, "DeleteOptionServer")(f.bm.DeleteOptionServer(&bm1.DeleteOptionServerRequest{ServerID: ids[1], OptionID: "931df052-d713-4674-8b58-96a63244c8e2"}))
	deleted := must[*bm1.Server](t, "DeleteServer")(f.bm.DeleteServer(&bm1.DeleteServerRequest{ServerID: ids[2]}))
	if deleted.Status != bm1.ServerStatusDeleting {
		t.Fatalf("DeleteServer: status %s", deleted.Status)
	}
	_, err = f.bm.GetServer(&bm1.GetServerRequest{ServerID: ids[2]})
	var missing *scw.ResourceNotFoundError
	if !errors.As(err, &missing) || missing.ResourceID != ids[2] {
		t.Fatalf("GetServer after delete: %v", err)
	}
}

func TestErrorsThroughTheSdk(t *testing.T) {
	f := newFixture(t, "FAKE_SCW_API_URL", env(t, "FAKE_SCW_SECRET_KEY"))
	offerID, osID, _ := catalogIDs(t, f, "EM-A116X-SSD")
	_, err := f.bm.CreateServer(&bm1.CreateServerRequest{OfferID: offerID})
	var invalid *scw.InvalidArgumentsError
	if !errors.As(err, &invalid) || invalid.Details[0].ArgumentName != "name" || invalid.Details[0].Reason != "required" {
		t.Fatalf("CreateServer without a name: %v", err)
	}
	userData := []byte("#cloud-config\n")
	_, err = f.bm.CreateServer(&bm1.CreateServerRequest{
		OfferID: offerID, Name: "no-cloud-init", UserData: &userData,
		Install: &bm1.CreateServerRequestInstall{OsID: osID, Hostname: "x", SSHKeyIDs: []string{sshKeyID}},
	})
	var response *scw.ResponseError
	if !errors.As(err, &response) || response.StatusCode != 503 || !strings.Contains(response.Message, "cloud-init is not supported") {
		t.Fatalf("CreateServer with user data on an offer without cloud-init: %v", err)
	}

	wrongKey := newFixture(t, "FAKE_SCW_API_URL", "00000000-0000-4000-8000-000000000000")
	_, err = wrongKey.bm.ListServers(&bm1.ListServersRequest{})
	var denied *scw.DeniedAuthenticationError
	if !errors.As(err, &denied) || denied.Method != "api_key" || denied.Reason != "not_found" {
		t.Fatalf("ListServers with an unknown secret key: %v", err)
	}

	// The second fake's key lacks ElasticMetalFullAccess: it reads, it cannot write.
	restricted := newFixture(t, "FAKE_SCW_DENIED_API_URL", env(t, "FAKE_SCW_SECRET_KEY"))
	must[*bm1.ListServersResponse](t, "ListServers without ElasticMetalFullAccess")(restricted.bm.ListServers(&bm1.ListServersRequest{}))
	_, err = restricted.bm.CreateServer(&bm1.CreateServerRequest{OfferID: offerID, Name: "denied"})
	var permissions *scw.PermissionsDeniedError
	if !errors.As(err, &permissions) || permissions.Details[0].Action != "write" || permissions.Details[0].Resource != "baremetal_server" {
		t.Fatalf("CreateServer without ElasticMetalFullAccess: %v", err)
	}
	if !strings.Contains(string(permissions.RawBody), "ElasticMetalFullAccess") {
		t.Fatalf("the 403 does not name the missing permission set: %s", permissions.RawBody)
	}
}

func TestNetworksThroughTheSdk(t *testing.T) {
	f := newFixture(t, "FAKE_SCW_API_URL", env(t, "FAKE_SCW_SECRET_KEY"))
	vpcs := must[*vpc.ListVPCsResponse](t, "ListVPCs")(f.vpc.ListVPCs(&vpc.ListVPCsRequest{}))
	if len(vpcs.Vpcs) == 0 || !vpcs.Vpcs[0].IsDefault {
		t.Fatalf("ListVPCs: no default VPC in %+v", vpcs.Vpcs)
	}
	must[*vpc.VPC](t, "GetVPC")(f.vpc.GetVPC(&vpc.GetVPCRequest{VpcID: vpcs.Vpcs[0].ID}))
	subnet := scw.IPNet{IPNet: net.IPNet{IP: net.IPv4(172, 16, 64, 0).To4(), Mask: net.CIDRMask(22, 32)}}
	pn := must[*vpc.PrivateNetwork](t, "CreatePrivateNetwork")(f.vpc.CreatePrivateNetwork(&vpc.CreatePrivateNetworkRequest{
		Name: "sdkcheck-pn", Tags: []string{"sdkcheck"}, Subnets: []scw.IPNet{subnet},
	}))
	t.Cleanup(func() { _ = f.vpc.DeletePrivateNetwork(&vpc.DeletePrivateNetworkRequest{PrivateNetworkID: pn.ID}) })
	if pn.Subnets[0].Subnet.String() != "172.16.64.0/22" || pn.VpcID != vpcs.Vpcs[0].ID {
		t.Fatalf("CreatePrivateNetwork: subnets %v, vpc %s", pn.Subnets, pn.VpcID)
	}
	must[*vpc.PrivateNetwork](t, "GetPrivateNetwork")(f.vpc.GetPrivateNetwork(&vpc.GetPrivateNetworkRequest{PrivateNetworkID: pn.ID}))
	listed := must[*vpc.ListPrivateNetworksResponse](t, "ListPrivateNetworks")(f.vpc.ListPrivateNetworks(&vpc.ListPrivateNetworksRequest{Name: ptr("sdkcheck-pn")}))
	if listed.TotalCount != 1 {
		t.Fatalf("ListPrivateNetworks name=sdkcheck-pn: %d", listed.TotalCount)
	}
	must[*vpc.PrivateNetwork](t, "UpdatePrivateNetwork")(f.vpc.UpdatePrivateNetwork(&vpc.UpdatePrivateNetworkRequest{PrivateNetworkID: pn.ID, Tags: &[]string{"sdkcheck", "edited"}}))

	address := net.IPv4(172, 16, 64, 7).To4()
	ip := must[*ipam.IP](t, "BookIP")(f.ipam.BookIP(&ipam.BookIPRequest{Source: &ipam.Source{PrivateNetworkID: &pn.ID}, Address: &address, Tags: []string{"sdkcheck"}}))
	t.Cleanup(func() { _ = f.ipam.ReleaseIP(&ipam.ReleaseIPRequest{IPID: ip.ID}) })
	if ip.Address.String() != "172.16.64.7/22" || ip.Resource != nil {
		t.Fatalf("BookIP: %s, resource %+v", ip.Address.String(), ip.Resource)
	}
	must[*ipam.IP](t, "GetIP")(f.ipam.GetIP(&ipam.GetIPRequest{IPID: ip.ID}))
	must[*ipam.IP](t, "UpdateIP")(f.ipam.UpdateIP(&ipam.UpdateIPRequest{IPID: ip.ID, Tags: &[]string{"sdkcheck", "edited"}}))
	ips := must[*ipam.ListIPsResponse](t, "ListIPs")(f.ipam.ListIPs(&ipam.ListIPsRequest{PrivateNetworkID: &pn.ID}))
	if ips.TotalCount != 1 {
		t.Fatalf("ListIPs private_network_id: %d", ips.TotalCount)
	}

	// A server on the network through the v3 API, with the booked IP; its VLAN is reported late.
	offerID, osID, optionID := catalogIDs(t, f, "EM-A116X-SSD")
	server := must[*bm1.Server](t, "CreateServer")(f.bm.CreateServer(&bm1.CreateServerRequest{
		OfferID: offerID, Name: "sdkcheck-pn-member", OptionIDs: []string{optionID},
		Install: &bm1.CreateServerRequestInstall{OsID: osID, Hostname: "member", SSHKeyIDs: []string{sshKeyID}},
	}))
	t.Cleanup(func() { _, _ = f.bm.DeleteServer(&bm1.DeleteServerRequest{ServerID: server.ID}) })
	attached := must[*bm3.SetServerPrivateNetworksResponse](t, "SetServerPrivateNetworks v3")(f.pn3.SetServerPrivateNetworks(&bm3.PrivateNetworkAPISetServerPrivateNetworksRequest{
		ServerID: server.ID, PerPrivateNetworkIpamIPIDs: map[string]*[]string{pn.ID: {ip.ID}},
	}))
	if len(attached.ServerPrivateNetworks) != 1 || attached.ServerPrivateNetworks[0].Vlan != nil {
		t.Fatalf("SetServerPrivateNetworks v3: %+v (the fake reports the VLAN late here)", attached.ServerPrivateNetworks)
	}
	var vlan *uint32
	eventually(t, "the VLAN tag", func() bool {
		list := must[*bm3.ListServerPrivateNetworksResponse](t, "ListServerPrivateNetworks v3")(f.pn3.ListServerPrivateNetworks(&bm3.PrivateNetworkAPIListServerPrivateNetworksRequest{ServerID: &server.ID}))
		vlan = list.ServerPrivateNetworks[0].Vlan
		return vlan != nil
	})
	onServer := must[*ipam.ListIPsResponse](t, "ListIPs attached")(f.ipam.ListIPs(&ipam.ListIPsRequest{
		PrivateNetworkID: &pn.ID, ResourceType: ipam.ResourceTypeBaremetalPrivateNic,
	}))
	if onServer.TotalCount != 1 || onServer.IPs[0].Resource.ID != attached.ServerPrivateNetworks[0].ID {
		t.Fatalf("ListIPs resource_type=baremetal_private_nic: %+v", onServer.IPs)
	}
	if err := f.pn3.DeleteServerPrivateNetwork(&bm3.PrivateNetworkAPIDeleteServerPrivateNetworkRequest{ServerID: server.ID, PrivateNetworkID: pn.ID}); err != nil {
		t.Fatalf("DeleteServerPrivateNetwork v3: %v", err)
	}

	// The v1 private-network API: add, list, set, delete.
	added := must[*bm1.ServerPrivateNetwork](t, "AddServerPrivateNetwork v1")(f.pn1.AddServerPrivateNetwork(&bm1.PrivateNetworkAPIAddServerPrivateNetworkRequest{ServerID: server.ID, PrivateNetworkID: pn.ID}))
	if added.PrivateNetworkID != pn.ID {
		t.Fatalf("AddServerPrivateNetwork v1: %+v", added)
	}
	listedV1 := must[*bm1.ListServerPrivateNetworksResponse](t, "ListServerPrivateNetworks v1")(f.pn1.ListServerPrivateNetworks(&bm1.PrivateNetworkAPIListServerPrivateNetworksRequest{ServerID: &server.ID}))
	if listedV1.TotalCount != 1 {
		t.Fatalf("ListServerPrivateNetworks v1: %d", listedV1.TotalCount)
	}
	must[*bm1.SetServerPrivateNetworksResponse](t, "SetServerPrivateNetworks v1")(f.pn1.SetServerPrivateNetworks(&bm1.PrivateNetworkAPISetServerPrivateNetworksRequest{ServerID: server.ID, PrivateNetworkIDs: []string{pn.ID}}))
	if err := f.pn1.DeleteServerPrivateNetwork(&bm1.PrivateNetworkAPIDeleteServerPrivateNetworkRequest{ServerID: server.ID, PrivateNetworkID: pn.ID}); err != nil {
		t.Fatalf("DeleteServerPrivateNetwork v1: %v", err)
	}
}

func contains(list []string, value string) bool {
	for _, item := range list {
		if item == value {
			return true
		}
	}
	return false
}

// The IAM SSH keys an install's ssh_key_ids name (the machines let them in): create, get, list by
// name, disable, refuse a duplicate naming public_key, delete.
func TestIamSshKeysThroughTheSdk(t *testing.T) {
	f := newFixture(t, "FAKE_SCW_API_URL", env(t, "FAKE_SCW_SECRET_KEY"))
	const publicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFavL6mL/wUrPZhg9yTT/k6/UllJ+FgVj30FX9K5/tZd sdk@check"
	key := must[*iam.SSHKey](t, "CreateSSHKey")(f.iam.CreateSSHKey(&iam.CreateSSHKeyRequest{Name: "sdk-key", PublicKey: publicKey}))
	if key.PublicKey != publicKey || key.Disabled || !strings.HasPrefix(key.Fingerprint, "256 MD5:") {
		t.Fatalf("CreateSSHKey answered %+v", key)
	}
	got := must[*iam.SSHKey](t, "GetSSHKey")(f.iam.GetSSHKey(&iam.GetSSHKeyRequest{SSHKeyID: key.ID}))
	if got.Name != "sdk-key" {
		t.Fatalf("GetSSHKey: %+v", got)
	}
	list := must[*iam.ListSSHKeysResponse](t, "ListSSHKeys")(f.iam.ListSSHKeys(&iam.ListSSHKeysRequest{Name: ptr("sdk-key")}))
	if list.TotalCount != 1 || list.SSHKeys[0].ID != key.ID {
		t.Fatalf("ListSSHKeys by name: %+v", list)
	}
	disabled := must[*iam.SSHKey](t, "UpdateSSHKey")(f.iam.UpdateSSHKey(&iam.UpdateSSHKeyRequest{SSHKeyID: key.ID, Disabled: ptr(true)}))
	if !disabled.Disabled {
		t.Fatalf("UpdateSSHKey disabled: %+v", disabled)
	}
	_, err := f.iam.CreateSSHKey(&iam.CreateSSHKeyRequest{Name: "again", PublicKey: publicKey})
	var invalid *scw.InvalidArgumentsError
	if !errors.As(err, &invalid) || invalid.Details[0].ArgumentName != "public_key" {
		t.Fatalf("CreateSSHKey of a key already registered: %v", err)
	}
	if err := f.iam.DeleteSSHKey(&iam.DeleteSSHKeyRequest{SSHKeyID: key.ID}); err != nil {
		t.Fatalf("DeleteSSHKey: %v", err)
	}
	_, err = f.iam.GetSSHKey(&iam.GetSSHKeyRequest{SSHKeyID: key.ID})
	var notFound *scw.ResourceNotFoundError
	if !errors.As(err, &notFound) {
		t.Fatalf("GetSSHKey after the delete: %v", err)
	}
}
