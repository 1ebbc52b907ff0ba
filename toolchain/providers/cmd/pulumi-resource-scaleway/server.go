package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	baremetalV3 "github.com/scaleway/scaleway-sdk-go/api/baremetal/v3"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// privateNetworkOptionID is the option upstream requires on a server with private networks
// (internal/services/baremetal/helpers.go, customDiffPrivateNetworkOption).
const privateNetworkOptionID = "cd4158d7-2d65-49be-8803-c4b8ab6f760c"

// server is scaleway.elasticmetal.Server, after terraform-provider-scaleway's
// internal/services/baremetal/server.go: zone and project replace it (zonal.Schema and
// account.ProjectIDSchema are ForceNew), and so does a new offer (customDiffOffer forces a new
// server when the offer's name changes; the double replaces on any offer change, see FIDELITY.md).
// A new OS reinstalls in place; name, description, tags, protected and cloud-init update in place;
// options and private networks are set in place, each followed by its wait.
type server struct{ *cloud }

func (server) ReplaceKeys() []string { return []string{"offer", "projectId", "zone"} }

// NameKey: a replacement deletes the old server first when the name is explicit (see nativeprovider.Named).
func (server) NameKey() string { return "name" }

func (server) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	var failures []*pulumirpc.CheckFailure
	if news.ContainsUnknowns() {
		return news, nil
	}
	if nativeprovider.String(news, "offer") == "" {
		failures = append(failures, nativeprovider.Failure("offer", "is required: an offer id or name (scaleway.elasticmetal.getOffer)"))
	}
	if len(nativeprovider.String(news, "description")) > 255 {
		failures = append(failures, nativeprovider.Failure("description", "must be at most 255 characters"))
	}
	if len(nativeprovider.String(news, "cloudInit")) > 127998 {
		failures = append(failures, nativeprovider.Failure("cloudInit", "must be at most 127998 characters"))
	}
	// customDiffPrivateNetworkOption: a private network needs the Private Network option.
	if len(nativeprovider.Maps(news, "privateNetworks")) > 0 && !slices.Contains(optionIDs(news), privateNetworkOptionID) {
		failures = append(failures, nativeprovider.Failure("options", "must include the Private Network option ("+privateNetworkOptionID+") to attach privateNetworks"))
	}
	return news, failures
}

func optionIDs(inputs resource.PropertyMap) []string {
	var ids []string
	for _, o := range nativeprovider.Maps(inputs, "options") {
		ids = append(ids, bareID(nativeprovider.String(o, "id")))
	}
	return ids
}

// serverComputed are the outputs a preview cannot know.
var serverComputed = []string{"offerId", "offerName", "osName", "ips", "ipv4s", "ipv6s", "domain", "organizationId", "privateIps", "user", "serviceUser"}

func (s server) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		nativeprovider.Computed(outs, serverComputed...)
		return "", outs, nil
	}
	client, err := s.api()
	if err != nil {
		return "", nil, err
	}
	api := baremetal.NewAPI(client)
	zone := s.zone(inputs)
	offerID := bareID(nativeprovider.String(inputs, "offer"))
	if !isUUID(offerID) {
		offer, err := api.GetOfferByName(&baremetal.GetOfferByNameRequest{OfferName: offerID, Zone: zone})
		if err != nil {
			return "", nil, err
		}
		offerID = offer.ID
	}
	name := nativeprovider.String(inputs, "name")
	if name == "" {
		name = generatedName("bm")
	}
	req := &baremetal.CreateServerRequest{
		Zone: zone, Name: name, Description: nativeprovider.String(inputs, "description"), OfferID: offerID,
		Tags: nativeprovider.Strings(inputs, "tags"), Protected: nativeprovider.Bool(inputs, "protected"),
	}
	if project := s.projectID(inputs); project != "" {
		req.ProjectID = &project
	}
	if cloudInit := nativeprovider.String(inputs, "cloudInit"); cloudInit != "" {
		data := []byte(cloudInit)
		req.UserData = &data
	}
	// Upstream installs at create unless installConfigAfterward (and no partitioning) says to wait.
	afterward := nativeprovider.Bool(inputs, "installConfigAfterward")
	if !afterward || nativeprovider.String(inputs, "partitioning") != "" {
		osID := bareID(nativeprovider.String(inputs, "os"))
		if osID == "" {
			return "", nil, fmt.Errorf("os: is required to install at create (set installConfigAfterward to create without installing)")
		}
		req.Install = &baremetal.CreateServerRequestInstall{
			OsID: osID, Hostname: nativeprovider.String(inputs, "hostname"), SSHKeyIDs: bareIDs(nativeprovider.Strings(inputs, "sshKeyIds")),
			User: optional(inputs, "user"), Password: optional(inputs, "password"),
			ServiceUser: optional(inputs, "serviceUser"), ServicePassword: optional(inputs, "servicePassword"),
		}
	}
	created, err := api.CreateServer(req, scw.WithContext(ctx))
	if err != nil {
		return "", nil, err
	}
	id := zonedID(created.Zone, created.ID)
	// From here the server exists: every failure answers its id, so the state keeps it.
	if afterward {
		_, err = api.WaitForServer(&baremetal.WaitForServerRequest{Zone: zone, ServerID: created.ID, Timeout: timeout(ctx, defaultServerTimeout), RetryInterval: &s.retryInterval}, scw.WithContext(ctx))
	} else {
		_, err = api.WaitForServerInstall(&baremetal.WaitForServerInstallRequest{Zone: zone, ServerID: created.ID, Timeout: timeout(ctx, defaultServerTimeout), RetryInterval: &s.retryInterval}, scw.WithContext(ctx))
	}
	if err != nil {
		return id, outs, err
	}
	for _, option := range optionIDs(inputs) {
		if _, err := api.AddOptionServer(&baremetal.AddOptionServerRequest{Zone: zone, ServerID: created.ID, OptionID: option}, scw.WithContext(ctx)); err != nil {
			return id, outs, err
		}
	}
	if err := s.setPrivateNetworks(ctx, zone, created.ID, inputs); err != nil {
		return id, outs, err
	}
	found, _, err := s.Read(ctx, id, outs)
	if err != nil || found == nil {
		return id, outs, err
	}
	return id, found, nil
}

// setPrivateNetworks sets the server's private networks to the inputs' (baremetal v3
// SetServerPrivateNetworks) and waits for every attachment to settle; a 404 while waiting is
// ignored, as upstream does. Upstream's wait ends at status `attached`, whether or not the VLAN
// is known yet.
func (s server) setPrivateNetworks(ctx context.Context, zone scw.Zone, serverID string, inputs resource.PropertyMap) error {
	wanted := nativeprovider.Maps(inputs, "privateNetworks")
	if len(wanted) == 0 {
		return nil
	}
	client, _ := s.api()
	api := baremetalV3.NewPrivateNetworkAPI(client)
	per := map[string]*[]string{}
	for _, pn := range wanted {
		ips := bareIDs(nativeprovider.Strings(pn, "ipamIpIds"))
		if ips == nil {
			ips = []string{}
		}
		per[bareID(nativeprovider.String(pn, "id"))] = &ips
	}
	if _, err := api.SetServerPrivateNetworks(&baremetalV3.PrivateNetworkAPISetServerPrivateNetworksRequest{Zone: zone, ServerID: serverID, PerPrivateNetworkIpamIPIDs: per}, scw.WithContext(ctx)); err != nil {
		return err
	}
	return s.waitPrivateNetworks(ctx, zone, serverID)
}

func (s server) waitPrivateNetworks(ctx context.Context, zone scw.Zone, serverID string) error {
	client, _ := s.api()
	_, err := baremetalV3.NewPrivateNetworkAPI(client).WaitForServerPrivateNetworks(&baremetalV3.WaitForServerPrivateNetworksRequest{
		Zone: zone, ServerID: serverID, Timeout: timeout(ctx, defaultServerTimeout), RetryInterval: &s.retryInterval,
	}, scw.WithContext(ctx))
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

func (s server) Update(ctx context.Context, id string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		nativeprovider.Computed(outs, serverComputed...)
		return outs, nil
	}
	client, err := s.api()
	if err != nil {
		return nil, err
	}
	api := baremetal.NewAPI(client)
	zoneName, serverID := splitID(id)
	zone := scw.Zone(zoneName)
	current, err := api.GetServer(&baremetal.GetServerRequest{Zone: zone, ServerID: serverID}, scw.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	changed := func(key string) bool { return serverValue(olds, key) != serverValue(inputs, key) }
	if changed("options") {
		wanted := optionIDs(inputs)
		for _, o := range current.Options {
			if !slices.Contains(wanted, o.ID) {
				if _, err := api.DeleteOptionServer(&baremetal.DeleteOptionServerRequest{Zone: zone, ServerID: serverID, OptionID: o.ID}, scw.WithContext(ctx)); err != nil {
					return nil, err
				}
			}
		}
		if _, err := api.WaitForServerOptions(&baremetal.WaitForServerOptionsRequest{Zone: zone, ServerID: serverID, Timeout: timeout(ctx, defaultServerTimeout), RetryInterval: &s.retryInterval}, scw.WithContext(ctx)); err != nil && !isNotFound(err) {
			return nil, err
		}
		for _, o := range wanted {
			if !slices.ContainsFunc(current.Options, func(c *baremetal.ServerOption) bool { return c.ID == o }) {
				if _, err := api.AddOptionServer(&baremetal.AddOptionServerRequest{Zone: zone, ServerID: serverID, OptionID: o}, scw.WithContext(ctx)); err != nil {
					return nil, err
				}
			}
		}
	}
	if changed("privateNetworks") {
		if err := s.setPrivateNetworks(ctx, zone, serverID, inputs); err != nil {
			return nil, err
		}
	}
	req := &baremetal.UpdateServerRequest{Zone: zone, ServerID: serverID}
	update := false
	if changed("cloudInit") {
		data := []byte(nativeprovider.String(inputs, "cloudInit"))
		req.UserData, update = &data, true
	}
	if changed("name") {
		name := nativeprovider.String(inputs, "name")
		req.Name, update = &name, true
	}
	if changed("description") {
		description := nativeprovider.String(inputs, "description")
		req.Description, update = &description, true
	}
	if changed("tags") {
		tags := nativeprovider.Strings(inputs, "tags")
		if tags == nil {
			tags = []string{}
		}
		req.Tags, update = &tags, true
	}
	if changed("protected") {
		protected := nativeprovider.Bool(inputs, "protected")
		req.Protected, update = &protected, true
	}
	if update {
		if _, err := api.UpdateServer(req, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
	}
	// A new OS reinstalls; so does a new install setting when reinstallOnConfigChanges allows it
	// (without it upstream only warns and changes nothing on the server).
	configChanged := changed("sshKeyIds") || changed("user") || changed("password") || changed("serviceUser") || changed("servicePassword")
	if changed("os") || (configChanged && nativeprovider.Bool(inputs, "reinstallOnConfigChanges")) {
		hostname := nativeprovider.String(inputs, "hostname")
		if hostname == "" {
			hostname = nativeprovider.String(inputs, "name")
		}
		if _, err := api.InstallServer(&baremetal.InstallServerRequest{
			Zone: zone, ServerID: serverID, OsID: bareID(nativeprovider.String(inputs, "os")), Hostname: hostname,
			SSHKeyIDs: bareIDs(nativeprovider.Strings(inputs, "sshKeyIds")), User: optional(inputs, "user"), Password: optional(inputs, "password"),
			ServiceUser: optional(inputs, "serviceUser"), ServicePassword: optional(inputs, "servicePassword"),
		}, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
		if _, err := api.WaitForServerInstall(&baremetal.WaitForServerInstallRequest{Zone: zone, ServerID: serverID, Timeout: timeout(ctx, defaultServerTimeout), RetryInterval: &s.retryInterval}, scw.WithContext(ctx)); err != nil {
			return nil, err
		}
	}
	found, exists, err := s.Read(ctx, id, outs)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("server %s disappeared during the update", id)
	}
	return found, nil
}

// Read answers what upstream's ResourceServerRead sets: offer and os as zoned ids with their
// names, the install's ssh keys and users, the options, the public IPs and the private networks
// (id and IPAM ids with the region, VLAN, status). A 404 means the server is gone.
func (s server) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	client, err := s.api()
	if err != nil {
		return nil, false, err
	}
	api := baremetal.NewAPI(client)
	zoneName, serverID := splitID(id)
	zone := scw.Zone(zoneName)
	found, err := api.GetServer(&baremetal.GetServerRequest{Zone: zone, ServerID: serverID}, scw.WithContext(ctx))
	if isNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	offer, err := api.GetOffer(&baremetal.GetOfferRequest{Zone: found.Zone, OfferID: found.OfferID}, scw.WithContext(ctx))
	if err != nil {
		return nil, false, err
	}
	outs := olds.Copy()
	outs["name"] = resource.NewStringProperty(found.Name)
	outs["zone"] = resource.NewStringProperty(found.Zone.String())
	outs["organizationId"] = resource.NewStringProperty(found.OrganizationID)
	outs["projectId"] = resource.NewStringProperty(found.ProjectID)
	outs["offerId"] = resource.NewStringProperty(zonedID(found.Zone, offer.ID))
	outs["offerName"] = resource.NewStringProperty(offer.Name)
	outs["offer"] = resource.NewStringProperty(zonedID(found.Zone, offer.ID))
	outs["tags"] = stringsProperty(found.Tags)
	outs["domain"] = resource.NewStringProperty(found.Domain)
	outs["protected"] = resource.NewBoolProperty(found.Protected)
	outs["description"] = resource.NewStringProperty(found.Description)
	cloudInit := ""
	if found.UserData != nil {
		cloudInit = string(*found.UserData)
	}
	outs["cloudInit"] = resource.NewStringProperty(cloudInit)
	if found.Install != nil {
		os, err := api.GetOS(&baremetal.GetOSRequest{Zone: found.Zone, OsID: found.Install.OsID}, scw.WithContext(ctx))
		if err != nil {
			return nil, false, err
		}
		outs["os"] = resource.NewStringProperty(zonedID(found.Zone, os.ID))
		outs["osName"] = resource.NewStringProperty(os.Name)
		outs["sshKeyIds"] = stringsProperty(found.Install.SSHKeyIDs)
		outs["user"] = resource.NewStringProperty(found.Install.User)
		outs["serviceUser"] = resource.NewStringProperty(found.Install.ServiceUser)
	}
	options := []resource.PropertyValue{}
	for _, o := range found.Options {
		options = append(options, resource.NewObjectProperty(resource.PropertyMap{
			"id": resource.NewStringProperty(zonedID(found.Zone, o.ID)), "expiresAt": timeProperty(o.ExpiresAt), "name": resource.NewStringProperty(o.Name),
		}))
	}
	outs["options"] = resource.NewArrayProperty(options)
	var ips, ipv4s, ipv6s []resource.PropertyValue
	for _, ip := range found.IPs {
		v := resource.NewObjectProperty(resource.PropertyMap{
			"id": resource.NewStringProperty(ip.ID), "address": resource.NewStringProperty(ip.Address.String()),
			"reverse": resource.NewStringProperty(ip.Reverse), "version": resource.NewStringProperty(ip.Version.String()),
		})
		ips = append(ips, v)
		if ip.Version == baremetal.IPVersionIPv4 {
			ipv4s = append(ipv4s, v)
		} else {
			ipv6s = append(ipv6s, v)
		}
	}
	outs["ips"], outs["ipv4s"], outs["ipv6s"] = arrayOf(ips), arrayOf(ipv4s), arrayOf(ipv6s)
	region, err := found.Zone.Region()
	if err != nil {
		return nil, false, err
	}
	attached, err := baremetalV3.NewPrivateNetworkAPI(client).ListServerPrivateNetworks(&baremetalV3.PrivateNetworkAPIListServerPrivateNetworksRequest{Zone: found.Zone, ServerID: &found.ID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return nil, false, fmt.Errorf("failed to list server's private networks: %w", err)
	}
	pns := []resource.PropertyValue{}
	for _, pn := range attached.ServerPrivateNetworks {
		ipamIDs := make([]string, 0, len(pn.IpamIPIDs))
		for _, ip := range pn.IpamIPIDs {
			ipamIDs = append(ipamIDs, regionalID(region, ip))
		}
		vlan := 0.0
		if pn.Vlan != nil {
			vlan = float64(*pn.Vlan)
		}
		pns = append(pns, resource.NewObjectProperty(resource.PropertyMap{
			"id": resource.NewStringProperty(regionalID(region, pn.PrivateNetworkID)), "mappingId": resource.NewStringProperty(regionalID(region, pn.ID)),
			"ipamIpIds": stringsProperty(ipamIDs), "vlan": resource.NewNumberProperty(vlan), "status": resource.NewStringProperty(pn.Status.String()),
			"createdAt": timeProperty(pn.CreatedAt), "updatedAt": timeProperty(pn.UpdatedAt),
		}))
	}
	outs["privateNetworks"] = resource.NewArrayProperty(pns)
	return outs, true, nil
}

// Delete detaches every private network and waits, deletes the server (a 404 is success) and
// waits for it to be gone (upstream ResourceServerDelete, detachAllPrivateNetworkFromServer).
func (s server) Delete(ctx context.Context, id string, _ resource.PropertyMap) error {
	client, err := s.api()
	if err != nil {
		return err
	}
	api := baremetal.NewAPI(client)
	pnAPI := baremetalV3.NewPrivateNetworkAPI(client)
	zoneName, serverID := splitID(id)
	zone := scw.Zone(zoneName)
	attached, err := pnAPI.ListServerPrivateNetworks(&baremetalV3.PrivateNetworkAPIListServerPrivateNetworksRequest{Zone: zone, ServerID: &serverID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return err
	}
	for _, pn := range attached.ServerPrivateNetworks {
		if err := pnAPI.DeleteServerPrivateNetwork(&baremetalV3.PrivateNetworkAPIDeleteServerPrivateNetworkRequest{Zone: zone, ServerID: serverID, PrivateNetworkID: pn.PrivateNetworkID}, scw.WithContext(ctx)); err != nil {
			return err
		}
	}
	if err := s.waitPrivateNetworks(ctx, zone, serverID); err != nil {
		return err
	}
	if _, err := api.DeleteServer(&baremetal.DeleteServerRequest{Zone: zone, ServerID: serverID}, scw.WithContext(ctx)); err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	if _, err := api.WaitForServer(&baremetal.WaitForServerRequest{Zone: zone, ServerID: serverID, Timeout: timeout(ctx, defaultServerTimeout), RetryInterval: &s.retryInterval}, scw.WithContext(ctx)); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// serverValue is an input's value as an update compares it. The olds an update receives are the
// recorded outputs, which hold more than the program gave (an empty cloudInit, each option's name
// and expiry, each attachment's VLAN and status) and ids with their locality, so values are
// compared by what the API is sent: absent equals empty, ids without locality, options and
// private networks by their ids.
func serverValue(m resource.PropertyMap, key string) string {
	switch key {
	case "tags":
		return strings.Join(nativeprovider.Strings(m, key), "\x00")
	case "sshKeyIds":
		return strings.Join(bareIDs(nativeprovider.Strings(m, key)), "\x00")
	case "options":
		ids := optionIDs(m)
		slices.Sort(ids)
		return strings.Join(ids, ",")
	case "privateNetworks":
		var pns []string
		for _, pn := range nativeprovider.Maps(m, key) {
			ips := bareIDs(nativeprovider.Strings(pn, "ipamIpIds"))
			slices.Sort(ips)
			pns = append(pns, bareID(nativeprovider.String(pn, "id"))+"="+strings.Join(ips, ","))
		}
		slices.Sort(pns)
		return strings.Join(pns, ";")
	case "protected":
		return fmt.Sprint(nativeprovider.Bool(m, key))
	case "os":
		return bareID(nativeprovider.String(m, key))
	}
	return nativeprovider.String(m, key)
}
