package main

import (
	"context"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	"github.com/scaleway/scaleway-sdk-go/api/vpc/v2"
)

const offerUUID = "a5065ba4-dde2-45f3-adec-1ebbb27b766b"

func offers(enabled bool) *baremetal.ListOffersResponse {
	return &baremetal.ListOffersResponse{TotalCount: 2, Offers: []*baremetal.Offer{
		{ID: offerUUID, Name: "EM-A116X-SSD", Enable: enabled, SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly, Stock: baremetal.OfferStockAvailable,
			CPUs: []*baremetal.CPU{{Name: "Intel Xeon E3 1220", CoreCount: 4, ThreadCount: 4, Frequency: 3100}}, Memories: []*baremetal.Memory{{Capacity: 32e9, Type: "DDR4", IsEcc: true}}},
		{ID: "b5065ba4-dde2-45f3-adec-1ebbb27b766b", Name: "EM-B112X-SSD", Enable: true},
	}}
}

// getOffer matches the upper-cased name and answers the offer id with its zone, as offer_data_source.go.
func TestGetOfferFindsByNameAndAnswersTheZonedID(t *testing.T) {
	c, _ := newCloud(t, map[string]func(int) (int, any){"GET /baremetal/v1/zones/fr-par-2/offers": ok(offers(true))})
	out, err := c.getOffer(context.Background(), resource.PropertyMap{"name": resource.NewStringProperty("em-a116x-ssd")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out["offerId"].StringValue(), testZone+"/"+offerUUID; got != want || out["id"].StringValue() != want {
		t.Errorf("offerId %q id %q, want %q", got, out["id"].StringValue(), want)
	}
	if got := out["cpu"].ObjectValue()["coreCount"].NumberValue(); got != 4 {
		t.Errorf("cpu.coreCount %v, want 4", got)
	}
	if got := out["memories"].ArrayValue()[0].ObjectValue()["isEcc"].BoolValue(); !got {
		t.Errorf("memories[0].isEcc false, want true")
	}
}

// A disabled offer is refused unless includeDisabled; an unknown name fails naming it.
func TestGetOfferRefusesDisabledAndUnknownOffers(t *testing.T) {
	c, _ := newCloud(t, map[string]func(int) (int, any){"GET /baremetal/v1/zones/fr-par-2/offers": ok(offers(false))})
	if _, err := c.getOffer(context.Background(), resource.PropertyMap{"name": resource.NewStringProperty("EM-A116X-SSD")}); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("disabled offer: %v, want an error saying it is disabled", err)
	}
	if _, err := c.getOffer(context.Background(), resource.PropertyMap{"name": resource.NewStringProperty("EM-A116X-SSD"), "includeDisabled": resource.NewBoolProperty(true)}); err != nil {
		t.Errorf("includeDisabled: %v", err)
	}
	if _, err := c.getOffer(context.Background(), resource.PropertyMap{"name": resource.NewStringProperty("EM-NOPE")}); err == nil || !strings.Contains(err.Error(), "EM-NOPE") {
		t.Errorf("unknown offer: %v, want an error naming it", err)
	}
}

// getOs needs both name and version to match; the id comes back zoned.
func TestGetOsMatchesNameAndVersion(t *testing.T) {
	list := &baremetal.ListOSResponse{TotalCount: 2, Os: []*baremetal.OS{
		{ID: "0d7ee6b6-0000-0000-0000-000000000001", Name: "Ubuntu", Version: "22.04 LTS (Jammy Jellyfish)"},
		{ID: "0d7ee6b6-0000-0000-0000-000000000002", Name: "Ubuntu", Version: "24.04 LTS (Noble Numbat)"},
	}}
	c, _ := newCloud(t, map[string]func(int) (int, any){"GET /baremetal/v1/zones/fr-par-2/os": ok(list)})
	out, err := c.getOs(context.Background(), resource.PropertyMap{"name": resource.NewStringProperty("Ubuntu"), "version": resource.NewStringProperty("24.04 LTS (Noble Numbat)")})
	if err != nil {
		t.Fatal(err)
	}
	if got := out["osId"].StringValue(); got != testZone+"/0d7ee6b6-0000-0000-0000-000000000002" {
		t.Errorf("osId %q", got)
	}
	if _, err := c.getOs(context.Background(), resource.PropertyMap{"name": resource.NewStringProperty("Ubuntu"), "version": resource.NewStringProperty("20.04")}); err == nil {
		t.Error("an unknown version was found")
	}
}

// getOption finds by exact name and answers manageable.
func TestGetOptionFindsByName(t *testing.T) {
	list := &baremetal.ListOptionsResponse{TotalCount: 1, Options: []*baremetal.Option{{ID: privateNetworkOptionID, Name: "Private Network", Manageable: true}}}
	c, _ := newCloud(t, map[string]func(int) (int, any){"GET /baremetal/v1/zones/fr-par-2/options": ok(list)})
	out, err := c.getOption(context.Background(), resource.PropertyMap{"name": resource.NewStringProperty("Private Network")})
	if err != nil {
		t.Fatal(err)
	}
	if out["optionId"].StringValue() != testZone+"/"+privateNetworkOptionID || !out["manageable"].BoolValue() {
		t.Errorf("got %v", out)
	}
}

// getPrivateNetwork by a name no network has fails with datasource.FindExact's message, which the
// pool reads as "free to create"; a found one answers its regional id and its subnets as a list.
func TestGetPrivateNetworkNotFoundMessageAndFound(t *testing.T) {
	c, _ := newCloud(t, map[string]func(int) (int, any){"GET /vpc/v2/regions/fr-par/private-networks": func(n int) (int, any) {
		if n == 0 {
			return 200, &vpc.ListPrivateNetworksResponse{}
		}
		return 200, &vpc.ListPrivateNetworksResponse{TotalCount: 1, PrivateNetworks: []*vpc.PrivateNetwork{{ID: "33333333-3333-3333-3333-333333333333", Name: "pn", Region: "fr-par", Tags: []string{"a"}}}}
	}})
	args := resource.PropertyMap{"name": resource.NewStringProperty("pn")}
	if _, err := c.getPrivateNetwork(context.Background(), args); err == nil || !strings.Contains(err.Error(), "no element found with the name pn") {
		t.Errorf("missing network: %v", err)
	}
	out, err := c.getPrivateNetwork(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	if out["privateNetworkId"].StringValue() != "fr-par/33333333-3333-3333-3333-333333333333" || !out["ipv4Subnets"].IsArray() {
		t.Errorf("got %v", out)
	}
}
