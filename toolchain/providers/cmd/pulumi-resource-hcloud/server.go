package main

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// server is hcloud.Server. image, location, datacenter (refused at Check), user data and SSH keys
// replace it (terraform-provider-hcloud server/resource.go: ForceNew), the old server deleted first
// (NameKey); name, labels, type, firewalls, placement group, networks and protection are updated
// in place, as upstream does (FIDELITY.md, "hcloud: Server").
type server struct{ *cloud }

func (server) ReplaceKeys() []string {
	return []string{"image", "location", "datacenter", "userData", "sshKeys"}
}

// NameKey: a server's name is unique in the project, so its replacement deletes it first.
func (server) NameKey() string { return "name" }

var serverComputed = []string{"ipv4Address", "ipv6Address", "ipv6Network", "status", "primaryDiskSize", "backupWindow"}

func (server) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	var failures []*pulumirpc.CheckFailure
	for _, key := range []string{"name", "serverType", "image"} {
		if !nativeprovider.Has(news, key) {
			failures = append(failures, nativeprovider.Failure(key, "is required"))
		}
	}
	if nativeprovider.Has(news, "datacenter") {
		// Hetzner phased datacenters out (2026-07-01); upstream refuses the attribute since
		// terraform-provider-hcloud v1.67.0 and before that only turned it into its location.
		failures = append(failures, nativeprovider.Failure("datacenter", "is not supported: Hetzner no longer places servers by datacenter; set location (e.g. fsn1) instead"))
	}
	failures = append(failures, labelFailures(news)...)
	for i, n := range nativeprovider.Maps(news, "networks") {
		if ip := nativeprovider.String(n, "ip"); ip != "" && net.ParseIP(ip) == nil {
			failures = append(failures, nativeprovider.Failure(fmt.Sprintf("networks[%d].ip", i), "must be an IP address"))
		}
	}
	return news, failures
}

func (s server) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := serverState(inputs)
	if preview {
		nativeprovider.Computed(outs, serverComputed...)
		return "", outs, nil
	}
	api, err := s.api()
	if err != nil {
		return "", nil, err
	}
	image, err := s.serverImage(ctx, nativeprovider.String(inputs, "serverType"), nativeprovider.String(inputs, "image"))
	if err != nil {
		return "", nil, err
	}
	keys, err := s.sshKeys(ctx, nativeprovider.Strings(inputs, "sshKeys"))
	if err != nil {
		return "", nil, err
	}
	opts := hcloud.ServerCreateOpts{
		Name:             nativeprovider.String(inputs, "name"),
		ServerType:       &hcloud.ServerType{Name: nativeprovider.String(inputs, "serverType")},
		Image:            image,
		SSHKeys:          keys,
		UserData:         nativeprovider.String(inputs, "userData"),
		Labels:           nativeprovider.StringMap(inputs, "labels"),
		StartAfterCreate: hcloud.Ptr(true),
		PublicNet:        publicNet(inputs),
	}
	if location := nativeprovider.String(inputs, "location"); location != "" {
		opts.Location = &hcloud.Location{Name: location}
	}
	for _, id := range nativeprovider.Numbers(inputs, "firewallIds") {
		opts.Firewalls = append(opts.Firewalls, &hcloud.ServerCreateFirewall{Firewall: hcloud.Firewall{ID: int64(id)}})
	}
	// A server with neither public IPv4 nor IPv6 but networks is created stopped and started once its
	// networks are attached, as upstream does (terraform-provider-hcloud server/resource.go,
	// onServerCreateWithoutPublicNet): it would boot with no network at all otherwise.
	noPublicNet := opts.PublicNet != nil && !opts.PublicNet.EnableIPv4 && !opts.PublicNet.EnableIPv6 &&
		len(nativeprovider.Maps(inputs, "networks")) > 0
	if noPublicNet {
		opts.StartAfterCreate = hcloud.Ptr(false)
	}
	if nativeprovider.Has(inputs, "placementGroupId") {
		// Looked up first, as upstream's create does: a deleted group is named, not an API 422.
		if opts.PlacementGroup, err = s.placementGroup(ctx, int64(nativeprovider.Number(inputs, "placementGroupId"))); err != nil {
			return "", nil, err
		}
	}
	created, _, err := api.Server.Create(ctx, opts)
	if err != nil {
		return "", nil, err
	}
	id := formatID(created.Server.ID)
	// From here the server exists: errors return its id so the engine records it for a retry or delete.
	if err := s.wait(ctx, append([]*hcloud.Action{created.Action}, created.NextActions...)...); err != nil {
		return id, outs, err
	}
	// Networks join after the server is created, one attach action each (the private NIC is
	// hot-plugged), as upstream's create does (terraform-provider-hcloud server/resource.go).
	for _, n := range nativeprovider.Maps(inputs, "networks") {
		if err := s.attach(ctx, created.Server, n); err != nil {
			return id, outs, fmt.Errorf("networks: attach to %d: %w", int64(nativeprovider.Number(n, "networkId")), err)
		}
	}
	if noPublicNet {
		// Upstream powers on, off and on again here (its "workaround for network interface issue").
		if err := s.powerCycleAfterAttach(ctx, created.Server); err != nil {
			return id, outs, err
		}
	}
	if err := s.protect(ctx, created.Server, resource.PropertyMap{}, inputs); err != nil {
		return id, outs, err
	}
	current, _, err := api.Server.GetByID(ctx, created.Server.ID)
	if err != nil {
		return id, outs, err
	}
	return id, serverOutputs(outs, current), nil
}

// serverState is what the state records of a server's inputs: the user data as its base64 SHA-1, as
// upstream's StateFunc does (terraform-provider-hcloud server/resource.go, userDataHashSum). The API
// never returns user data, the diff compares the inputs (which keep the full text), and a full copy
// in every member's outputs made each of the engine's whole-state checkpoints larger.
func serverState(inputs resource.PropertyMap) resource.PropertyMap {
	outs := inputs.Copy()
	userData, ok := outs["userData"]
	if !ok || userData.ContainsUnknowns() || !nativeprovider.Has(outs, "userData") {
		return outs
	}
	text := nativeprovider.String(outs, "userData")
	if isUserDataHash(text) {
		return outs
	}
	sum := sha1.Sum([]byte(text)) //nolint:gosec // a fingerprint, as upstream's
	hashed := resource.NewStringProperty(base64.StdEncoding.EncodeToString(sum[:]))
	if userData.ContainsSecrets() {
		hashed = resource.MakeSecret(hashed)
	}
	outs["userData"] = hashed
	return outs
}

// isUserDataHash tells a recorded hash from user data (which cloud-init wants starting with "#" or
// a MIME header, never 28 characters of base64 for 20 bytes).
func isUserDataHash(text string) bool {
	decoded, err := base64.StdEncoding.DecodeString(text)
	return len(text) == 28 && err == nil && len(decoded) == sha1.Size
}

func publicNet(inputs resource.PropertyMap) *hcloud.ServerCreatePublicNet {
	nets := nativeprovider.Maps(inputs, "publicNets")
	if len(nets) == 0 {
		return nil // the API's default: IPv4 and IPv6
	}
	enabled := func(key string) bool { return !nativeprovider.Has(nets[0], key) || nativeprovider.Bool(nets[0], key) }
	return &hcloud.ServerCreatePublicNet{EnableIPv4: enabled("ipv4Enabled"), EnableIPv6: enabled("ipv6Enabled")}
}

// powerCycleAfterAttach starts a server created stopped, then powers it off and on once more, as
// upstream does for a server without public net; each power-on is tried five times, as upstream's
// powerOnServer (control.Retry with its default tries).
func (s server) powerCycleAfterAttach(ctx context.Context, srv *hcloud.Server) error {
	api, err := s.api()
	if err != nil {
		return err
	}
	powerOn := func() error {
		return retry(ctx, 5, func() error {
			action, _, err := api.Server.Poweron(ctx, srv)
			if err != nil {
				return err
			}
			return s.wait(ctx, action)
		})
	}
	if err := powerOn(); err != nil {
		return fmt.Errorf("power on after attaching networks: %w", err)
	}
	if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) { return api.Server.Poweroff(ctx, srv) }); err != nil {
		return fmt.Errorf("power off after attaching networks: %w", err)
	}
	if err := powerOn(); err != nil {
		return fmt.Errorf("power on after attaching networks: %w", err)
	}
	return nil
}

// sshKeys resolves names or ids, as the upstream provider accepts both.
func (s server) sshKeys(ctx context.Context, idsOrNames []string) ([]*hcloud.SSHKey, error) {
	var keys []*hcloud.SSHKey
	for _, key := range idsOrNames {
		found, _, err := s.client.SSHKey.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("sshKeys: %q: %w", key, err)
		}
		if found == nil {
			return nil, fmt.Errorf("sshKeys: no SSH key named or numbered %q", key)
		}
		keys = append(keys, found)
	}
	return keys, nil
}

// attach joins a network, retrying while the server or network is busy, as upstream does
// (terraform-provider-hcloud server/common.go, attachServerToNetwork): up to attachTries calls,
// waiting 1s, 2s, 4s... between them; a server already attached counts as joined.
func (s server) attach(ctx context.Context, srv *hcloud.Server, n resource.PropertyMap) error {
	opts := hcloud.ServerAttachToNetworkOpts{Network: &hcloud.Network{ID: int64(nativeprovider.Number(n, "networkId"))}}
	if ip := nativeprovider.String(n, "ip"); ip != "" {
		opts.IP = net.ParseIP(ip)
	}
	for _, alias := range nativeprovider.Strings(n, "aliasIps") {
		opts.AliasIPs = append(opts.AliasIPs, net.ParseIP(alias))
	}
	var action *hcloud.Action
	var err error
	for try := 0; try < attachTries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(attachRetryWait(try - 1)):
			}
		}
		action, _, err = s.client.Server.AttachToNetwork(ctx, srv, opts)
		if !hcloud.IsError(err, hcloud.ErrorCodeConflict, hcloud.ErrorCodeLocked, hcloud.ErrorCodeServiceError, hcloud.ErrorCodeNoSubnetAvailable) {
			break
		}
	}
	if hcloud.IsError(err, hcloud.ErrorCodeServerAlreadyAttached) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.wait(ctx, action)
}

const attachTries = 5

// attachRetryWait is the pause after the n-th failed attach (from 0), upstream's 1s doubling.
var attachRetryWait = func(n int) time.Duration { return time.Second << n }

func (s server) protect(ctx context.Context, srv *hcloud.Server, olds, inputs resource.PropertyMap) error {
	del, rebuild := nativeprovider.Bool(inputs, "deleteProtection"), nativeprovider.Bool(inputs, "rebuildProtection")
	if del == nativeprovider.Bool(olds, "deleteProtection") && rebuild == nativeprovider.Bool(olds, "rebuildProtection") {
		return nil
	}
	return s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
		return s.client.Server.ChangeProtection(ctx, srv, hcloud.ServerChangeProtectionOpts{Delete: hcloud.Ptr(del), Rebuild: hcloud.Ptr(rebuild)})
	})
}

func (s server) Update(ctx context.Context, id string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := serverState(inputs)
	if preview {
		return keepComputed(outs, olds), nil
	}
	api, err := s.api()
	if err != nil {
		return nil, err
	}
	serverID, err := parseID("server", id)
	if err != nil {
		return nil, err
	}
	srv, _, err := api.Server.GetByID(ctx, serverID)
	if err != nil {
		return nil, err
	}
	if srv == nil {
		return nil, fmt.Errorf("server %s no longer exists: run a refresh", id)
	}
	if _, _, err := api.Server.Update(ctx, srv, hcloud.ServerUpdateOpts{Name: nativeprovider.String(inputs, "name"), Labels: nativeprovider.StringMap(inputs, "labels")}); err != nil {
		return nil, err
	}
	if err := s.protect(ctx, srv, olds, inputs); err != nil {
		return nil, err
	}
	if err := s.updateFirewalls(ctx, srv, inputs); err != nil {
		return nil, err
	}
	if err := s.updateNetworks(ctx, srv, olds, inputs); err != nil {
		return nil, err
	}
	if err := s.changeType(ctx, srv, olds, inputs); err != nil {
		return nil, err
	}
	if err := s.changePlacementGroup(ctx, srv, olds, inputs); err != nil {
		return nil, err
	}
	current, _, err := api.Server.GetByID(ctx, serverID)
	if err != nil {
		return nil, err
	}
	return serverOutputs(outs, current), nil
}

// updateFirewalls brings the server's applied firewalls to firewallIds, compared with what the
// server has now rather than with the state, as upstream does: a firewall removed outside Pulumi
// (which a refresh shows) is applied again.
func (s server) updateFirewalls(ctx context.Context, srv *hcloud.Server, inputs resource.PropertyMap) error {
	before, after := appliedFirewalls(srv), numberSet(nativeprovider.Numbers(inputs, "firewallIds"))
	target := []hcloud.FirewallResource{{Type: hcloud.FirewallResourceTypeServer, Server: &hcloud.FirewallResourceServer{ID: srv.ID}}}
	for id := range after {
		if !before[id] {
			if err := s.applyFirewall(ctx, id, target); err != nil {
				return fmt.Errorf("firewallIds: apply firewall %d: %w", id, err)
			}
		}
	}
	for id := range before {
		if !after[id] {
			if err := s.removeFirewall(ctx, id, target); err != nil {
				return fmt.Errorf("firewallIds: remove firewall %d: %w", id, err)
			}
		}
	}
	return nil
}

func (s server) updateNetworks(ctx context.Context, srv *hcloud.Server, olds, inputs resource.PropertyMap) error {
	byID := func(m resource.PropertyMap) map[int64]resource.PropertyMap {
		out := map[int64]resource.PropertyMap{}
		for _, n := range nativeprovider.Maps(m, "networks") {
			out[int64(nativeprovider.Number(n, "networkId"))] = n
		}
		return out
	}
	before, after := byID(olds), byID(inputs)
	for id := range before {
		if _, kept := after[id]; !kept {
			if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
				return s.client.Server.DetachFromNetwork(ctx, srv, hcloud.ServerDetachFromNetworkOpts{Network: &hcloud.Network{ID: id}})
			}); err != nil {
				return fmt.Errorf("networks: detach from %d: %w", id, err)
			}
		}
	}
	for id, n := range after {
		if _, had := before[id]; !had {
			if err := s.attach(ctx, srv, n); err != nil {
				return fmt.Errorf("networks: attach to %d: %w", id, err)
			}
		}
	}
	return nil
}

// changeType changes the server type as upstream does (terraform-provider-hcloud
// server/resource.go resourceServerUpdate): a running server is powered off first, and the server
// is left off afterwards; upstream powers nothing on.
func (s server) changeType(ctx context.Context, srv *hcloud.Server, olds, inputs resource.PropertyMap) error {
	if nativeprovider.String(olds, "serverType") == nativeprovider.String(inputs, "serverType") {
		return nil
	}
	if srv.Status == hcloud.ServerStatusRunning {
		if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) { return s.client.Server.Poweroff(ctx, srv) }); err != nil {
			return fmt.Errorf("serverType: power off before the change: %w", err)
		}
	}
	opts := hcloud.ServerChangeTypeOpts{ServerType: &hcloud.ServerType{Name: nativeprovider.String(inputs, "serverType")}, UpgradeDisk: !nativeprovider.Bool(inputs, "keepDisk")}
	if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) { return s.client.Server.ChangeType(ctx, srv, opts) }); err != nil {
		return fmt.Errorf("serverType: %w", err)
	}
	return nil
}

// changePlacementGroup moves the server between placement groups as upstream does (server/
// resource.go setPlacementGroup): it never powers the server off itself, so leaving a group is
// refused while the server is not off, and the API refuses joining one while it runs.
func (s server) changePlacementGroup(ctx context.Context, srv *hcloud.Server, olds, inputs resource.PropertyMap) error {
	if nativeprovider.Number(olds, "placementGroupId") == nativeprovider.Number(inputs, "placementGroupId") {
		return nil
	}
	if srv.PlacementGroup != nil {
		if srv.Status != hcloud.ServerStatusOff {
			return fmt.Errorf("placementGroupId: server %d must be powered off to leave placement group %d (as upstream, nothing powers it off for you)", srv.ID, srv.PlacementGroup.ID)
		}
		if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
			return s.client.Server.RemoveFromPlacementGroup(ctx, srv)
		}); err != nil {
			return fmt.Errorf("placementGroupId: leave the old group: %w", err)
		}
	}
	if !nativeprovider.Has(inputs, "placementGroupId") {
		return nil
	}
	group, err := s.placementGroup(ctx, int64(nativeprovider.Number(inputs, "placementGroupId")))
	if err != nil {
		return err
	}
	if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) {
		return s.client.Server.AddToPlacementGroup(ctx, srv, group)
	}); err != nil {
		return fmt.Errorf("placementGroupId: %w", err)
	}
	return nil
}

func (s server) placementGroup(ctx context.Context, id int64) (*hcloud.PlacementGroup, error) {
	group, _, err := s.client.PlacementGroup.GetByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("placementGroupId: %d: %w", id, err)
	}
	if group == nil {
		return nil, fmt.Errorf("placementGroupId: no placement group %d", id)
	}
	return group, nil
}

func (s server) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	api, err := s.api()
	if err != nil {
		return nil, false, err
	}
	serverID, err := parseID("server", id)
	if err != nil {
		return nil, false, err
	}
	found, _, err := api.Server.GetByID(ctx, serverID)
	if err != nil || found == nil {
		return nil, false, err
	}
	// A state recorded before the hash (or adopted after a crash from the inputs) gets it here.
	outs := serverOutputs(serverState(olds), found)
	outs["name"] = resource.NewStringProperty(found.Name)
	outs["labels"] = labelsProperty(found.Labels)
	if found.ServerType != nil {
		outs["serverType"] = resource.NewStringProperty(found.ServerType.Name)
	}
	outs["deleteProtection"] = resource.NewBoolProperty(found.Protection.Delete)
	outs["rebuildProtection"] = resource.NewBoolProperty(found.Protection.Rebuild)
	// The applied firewalls and the placement group, as upstream reads them (getServerAttributes).
	var firewalls []resource.PropertyValue
	for id := range appliedFirewalls(found) {
		firewalls = append(firewalls, resource.NewNumberProperty(float64(id)))
	}
	sort.Slice(firewalls, func(i, j int) bool { return firewalls[i].NumberValue() < firewalls[j].NumberValue() })
	outs["firewallIds"] = resource.NewArrayProperty(firewalls)
	delete(outs, "placementGroupId")
	if found.PlacementGroup != nil {
		outs["placementGroupId"] = resource.NewNumberProperty(float64(found.PlacementGroup.ID))
	}
	return outs, true, nil
}

// refreshedInputs are the inputs a refresh brings up to what it read, so that the next diff sees a
// change made outside Pulumi and the update repairs it (the bridge takes a refreshed resource's
// inputs from its refreshed state).
var refreshedInputs = []resource.PropertyKey{"name", "labels", "serverType", "firewallIds", "placementGroupId", "deleteProtection", "rebuildProtection"}

func (server) RefreshInputs(oldInputs, outputs resource.PropertyMap) resource.PropertyMap {
	inputs := oldInputs.Copy()
	for _, key := range refreshedInputs {
		value, read := outputs[key]
		_, given := oldInputs[key]
		switch {
		case !read:
			delete(inputs, key)
		case !given && isEmpty(value):
			// An empty value for an input the program leaves out is no drift.
		case key == "firewallIds" && sameSet(nativeprovider.Numbers(oldInputs, "firewallIds"), nativeprovider.Numbers(outputs, "firewallIds")):
			// A set upstream: the program's order is no drift.
		default:
			inputs[key] = value
		}
	}
	return inputs
}

func isEmpty(v resource.PropertyValue) bool {
	switch {
	case v.IsNull():
		return true
	case v.IsBool():
		return !v.BoolValue()
	case v.IsArray():
		return len(v.ArrayValue()) == 0
	case v.IsObject():
		return len(v.ObjectValue()) == 0
	}
	return false
}

// sameSet compares two lists of ids as sets.
func sameSet(a, b []float64) bool {
	x, y := numberSet(a), numberSet(b)
	if len(x) != len(y) {
		return false
	}
	for n := range x {
		if !y[n] {
			return false
		}
	}
	return true
}

// appliedFirewalls are the firewalls the API reports applied to the server's public interface.
func appliedFirewalls(srv *hcloud.Server) map[int64]bool {
	out := map[int64]bool{}
	for _, f := range srv.PublicNet.Firewalls {
		if f != nil {
			out[f.Firewall.ID] = true
		}
	}
	return out
}

// keepComputed is an update preview's outputs: what the server reports keeps its recorded value,
// as a Terraform plan keeps an unchanged computed attribute known (the server's schema has no
// CustomizeDiff marking any of them new). Only an output never recorded stays unknown.
func keepComputed(outs, olds resource.PropertyMap) resource.PropertyMap {
	for _, key := range serverComputed {
		if old, ok := olds[resource.PropertyKey(key)]; ok {
			outs[resource.PropertyKey(key)] = old
		} else {
			nativeprovider.Computed(outs, key)
		}
	}
	// The attachments' addresses too, while the networks asked for are the ones attached.
	if old, ok := olds["networks"]; ok && sameNetworkIDs(olds, outs) {
		outs["networks"] = old
	}
	return outs
}

func sameNetworkIDs(a, b resource.PropertyMap) bool {
	ids := func(m resource.PropertyMap) []float64 {
		var out []float64
		for _, n := range nativeprovider.Maps(m, "networks") {
			out = append(out, nativeprovider.Number(n, "networkId"))
		}
		return out
	}
	return sameSet(ids(a), ids(b))
}

func (s server) Delete(ctx context.Context, id string, olds resource.PropertyMap) error {
	api, err := s.api()
	if err != nil {
		return err
	}
	serverID, err := parseID("server", id)
	if err != nil {
		return err
	}
	srv := &hcloud.Server{ID: serverID}
	// A server already gone is an error here, as upstream (terraform-provider-hcloud
	// server/resource.go, resourceServerDelete): only a refresh drops it from the state.
	if nativeprovider.Bool(olds, "shutdownBeforeDeletion") {
		if err := s.call(ctx, func() (*hcloud.Action, *hcloud.Response, error) { return api.Server.Shutdown(ctx, srv) }); err != nil {
			return err
		}
	}
	result, _, err := api.Server.DeleteWithResult(ctx, srv)
	if err != nil {
		return err
	}
	return s.wait(ctx, result.Action)
}

func serverOutputs(outs resource.PropertyMap, srv *hcloud.Server) resource.PropertyMap {
	if srv == nil {
		return outs
	}
	ipv4, ipv6, ipv6Network := "", "", ""
	if srv.PublicNet.IPv4.IP != nil {
		ipv4 = srv.PublicNet.IPv4.IP.String()
	}
	if n := srv.PublicNet.IPv6.Network; n != nil {
		ipv6Network = n.String()
		// Like upstream: the server's address is the first of its /64 (the API reports the network).
		first := make(net.IP, len(n.IP))
		copy(first, n.IP)
		first[len(first)-1] |= 1
		ipv6 = first.String()
	}
	outs["ipv4Address"] = resource.NewStringProperty(ipv4)
	outs["ipv6Address"] = resource.NewStringProperty(ipv6)
	outs["ipv6Network"] = resource.NewStringProperty(ipv6Network)
	outs["status"] = resource.NewStringProperty(string(srv.Status))
	outs["primaryDiskSize"] = resource.NewNumberProperty(float64(srv.PrimaryDiskSize))
	outs["backupWindow"] = resource.NewStringProperty(srv.BackupWindow)
	var networks []resource.PropertyValue
	for _, pn := range srv.PrivateNet {
		if pn.Network == nil {
			continue
		}
		aliases := []resource.PropertyValue{}
		for _, a := range pn.Aliases {
			aliases = append(aliases, resource.NewStringProperty(a.String()))
		}
		networks = append(networks, resource.NewObjectProperty(resource.PropertyMap{
			"networkId":  resource.NewNumberProperty(float64(pn.Network.ID)),
			"ip":         resource.NewStringProperty(pn.IP.String()),
			"aliasIps":   resource.NewArrayProperty(aliases),
			"macAddress": resource.NewStringProperty(pn.MACAddress),
		}))
	}
	sort.Slice(networks, func(i, j int) bool {
		return networks[i].ObjectValue()["networkId"].NumberValue() < networks[j].ObjectValue()["networkId"].NumberValue()
	})
	if len(networks) > 0 {
		outs["networks"] = resource.NewArrayProperty(networks)
	}
	return outs
}

func numberSet(values []float64) map[int64]bool {
	out := map[int64]bool{}
	for _, v := range values {
		out[int64(v)] = true
	}
	return out
}
