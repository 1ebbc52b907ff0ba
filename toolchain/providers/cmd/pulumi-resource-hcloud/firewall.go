package main

import (
	"context"
	"fmt"
	"net"
	"reflect"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// firewall is hcloud.Firewall: name, labels, rules (set_rules) and the applyTos set
// (apply_to_resources / remove_from_resources) all update in place, as upstream's Update does.
type firewall struct{ *cloud }

func (firewall) ReplaceKeys() []string { return nil }

// NameKey: a replacement deletes the old firewall first when the name is explicit (see nativeprovider.Named).
func (firewall) NameKey() string { return "name" }

var ruleProtocols = map[string]bool{"tcp": true, "udp": true, "icmp": true, "esp": true, "gre": true}

func (firewall) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	if news.ContainsUnknowns() {
		return news, nil
	}
	failures := labelFailures(news)
	for i, rule := range nativeprovider.Maps(news, "rules") {
		at := fmt.Sprintf("rules[%d]", i)
		if d := nativeprovider.String(rule, "direction"); d != "in" && d != "out" {
			failures = append(failures, nativeprovider.Failure(at+".direction", "must be in or out"))
		}
		protocol := nativeprovider.String(rule, "protocol")
		if !ruleProtocols[protocol] {
			failures = append(failures, nativeprovider.Failure(at+".protocol", "must be one of tcp, udp, icmp, esp, gre"))
		}
		if (protocol == "tcp" || protocol == "udp") && nativeprovider.String(rule, "port") == "" {
			failures = append(failures, nativeprovider.Failure(at+".port", "is required for tcp and udp (a port, a range 80-85, or any)"))
		}
		for _, key := range []string{"sourceIps", "destinationIps"} {
			for j, source := range nativeprovider.Strings(rule, key) {
				if _, err := parseSource(source); err != nil {
					failures = append(failures, nativeprovider.Failure(fmt.Sprintf("%s.%s[%d]", at, key, j), err.Error()))
				}
			}
		}
	}
	return news, failures
}

func firewallRules(inputs resource.PropertyMap) []hcloud.FirewallRule {
	rules := []hcloud.FirewallRule{}
	for _, rule := range nativeprovider.Maps(inputs, "rules") {
		r := hcloud.FirewallRule{
			Direction:      hcloud.FirewallRuleDirection(nativeprovider.String(rule, "direction")),
			Protocol:       hcloud.FirewallRuleProtocol(nativeprovider.String(rule, "protocol")),
			SourceIPs:      cidrs(nativeprovider.Strings(rule, "sourceIps")),
			DestinationIPs: cidrs(nativeprovider.Strings(rule, "destinationIps")),
		}
		if port := nativeprovider.String(rule, "port"); port != "" {
			r.Port = hcloud.Ptr(port)
		}
		if description := nativeprovider.String(rule, "description"); description != "" {
			r.Description = hcloud.Ptr(description)
		}
		rules = append(rules, r)
	}
	return rules
}

func cidrs(texts []string) []net.IPNet {
	out := []net.IPNet{}
	for _, text := range texts {
		if n, err := parseSource(text); err == nil {
			out = append(out, *n)
		}
	}
	return out
}

func applyTos(inputs resource.PropertyMap) []hcloud.FirewallResource {
	var out []hcloud.FirewallResource
	for _, to := range nativeprovider.Maps(inputs, "applyTos") {
		if nativeprovider.Has(to, "server") {
			out = append(out, hcloud.FirewallResource{Type: hcloud.FirewallResourceTypeServer, Server: &hcloud.FirewallResourceServer{ID: int64(nativeprovider.Number(to, "server"))}})
		}
		if selector := nativeprovider.String(to, "labelSelector"); selector != "" {
			out = append(out, hcloud.FirewallResource{Type: hcloud.FirewallResourceTypeLabelSelector, LabelSelector: &hcloud.FirewallResourceLabelSelector{Selector: selector}})
		}
	}
	return out
}

func (f firewall) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return "", outs, nil
	}
	api, err := f.api()
	if err != nil {
		return "", nil, err
	}
	created, _, err := api.Firewall.Create(ctx, hcloud.FirewallCreateOpts{
		Name:    nativeprovider.String(inputs, "name"),
		Labels:  nativeprovider.StringMap(inputs, "labels"),
		Rules:   firewallRules(inputs),
		ApplyTo: applyTos(inputs),
	})
	if err != nil {
		return "", nil, err
	}
	if err := f.wait(ctx, created.Actions...); err != nil {
		return formatID(created.Firewall.ID), outs, err
	}
	return formatID(created.Firewall.ID), outs, nil
}

func (f firewall) Update(ctx context.Context, id string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview {
		return outs, nil
	}
	api, err := f.api()
	if err != nil {
		return nil, err
	}
	firewallID, err := parseID("firewall", id)
	if err != nil {
		return nil, err
	}
	current := &hcloud.Firewall{ID: firewallID}
	if _, _, err := api.Firewall.Update(ctx, current, hcloud.FirewallUpdateOpts{
		Name:   nativeprovider.String(inputs, "name"),
		Labels: nativeprovider.StringMap(inputs, "labels"),
	}); err != nil {
		return nil, err
	}
	if err := f.updateApplyTos(ctx, current, olds, inputs); err != nil {
		return nil, err
	}
	if !sameRules(olds, inputs) {
		actions, _, err := api.Firewall.SetRules(ctx, current, hcloud.FirewallSetRulesOpts{Rules: firewallRules(inputs)})
		if err != nil {
			return nil, err
		}
		if err := f.wait(ctx, actions...); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// updateApplyTos applies the firewall to the targets added and removes it from the targets dropped.
func (f firewall) updateApplyTos(ctx context.Context, current *hcloud.Firewall, olds, inputs resource.PropertyMap) error {
	key := func(r hcloud.FirewallResource) string {
		if r.Server != nil {
			return fmt.Sprintf("server:%d", r.Server.ID)
		}
		return "selector:" + r.LabelSelector.Selector
	}
	diff := func(a, b []hcloud.FirewallResource) []hcloud.FirewallResource {
		in := map[string]bool{}
		for _, r := range b {
			in[key(r)] = true
		}
		var out []hcloud.FirewallResource
		for _, r := range a {
			if !in[key(r)] {
				out = append(out, r)
			}
		}
		return out
	}
	before, after := applyTos(olds), applyTos(inputs)
	if added := diff(after, before); len(added) > 0 {
		if err := f.applyFirewall(ctx, current.ID, added); err != nil {
			return fmt.Errorf("applyTos: %w", err)
		}
	}
	if removed := diff(before, after); len(removed) > 0 {
		if err := f.removeFirewall(ctx, current.ID, removed); err != nil {
			return fmt.Errorf("applyTos: %w", err)
		}
	}
	return nil
}

// applyFirewall applies a firewall to resources and waits. Already applied is the wanted state
// (docs/design.md §7.2), e.g. after an interrupted run.
func (c *cloud) applyFirewall(ctx context.Context, firewallID int64, resources []hcloud.FirewallResource) error {
	actions, _, err := c.client.Firewall.ApplyResources(ctx, &hcloud.Firewall{ID: firewallID}, resources)
	if err == nil {
		err = c.wait(ctx, actions...)
	}
	if hcloud.IsError(err, hcloud.ErrorCodeFirewallAlreadyApplied) {
		return nil
	}
	return err
}

// removeFirewall removes a firewall from resources and waits; already removed, or the firewall
// gone, is the wanted state.
func (c *cloud) removeFirewall(ctx context.Context, firewallID int64, resources []hcloud.FirewallResource) error {
	actions, _, err := c.client.Firewall.RemoveResources(ctx, &hcloud.Firewall{ID: firewallID}, resources)
	if err == nil {
		err = c.wait(ctx, actions...)
	}
	if hcloud.IsError(err, hcloud.ErrorCodeFirewallAlreadyRemoved, hcloud.ErrorCodeNotFound) {
		return nil
	}
	return err
}

func (f firewall) Read(ctx context.Context, id string, olds resource.PropertyMap) (resource.PropertyMap, bool, error) {
	api, err := f.api()
	if err != nil {
		return nil, false, err
	}
	firewallID, err := parseID("firewall", id)
	if err != nil {
		return nil, false, err
	}
	found, _, err := api.Firewall.GetByID(ctx, firewallID)
	if err != nil || found == nil {
		return nil, false, err
	}
	outs := olds.Copy()
	for _, k := range firewallManagedKeys(olds) {
		outs[k] = firewallProperties(found)[k]
	}
	return outs, true, nil
}

// firewallManagedKeys are the properties a refresh reads back, so that rules or targets changed
// in the console show up as a diff and the next up sets them back. The targets only when the
// firewall declares them: servers may attach themselves (Server.firewallIds, as nodefleet's do),
// and reading those in would make the next update detach every one of them.
func firewallManagedKeys(declared resource.PropertyMap) []resource.PropertyKey {
	keys := []resource.PropertyKey{"name", "labels", "rules"}
	if _, ok := declared["applyTos"]; ok {
		keys = append(keys, "applyTos")
	}
	return keys
}

// RefreshInputs takes what the refresh read where it differs in meaning from the inputs: rules
// the API spells otherwise (an empty destinationIps, say) but that filter the same stay as given.
func (firewall) RefreshInputs(oldInputs, outputs resource.PropertyMap) resource.PropertyMap {
	inputs := oldInputs.Copy()
	for _, k := range firewallManagedKeys(oldInputs) {
		v, ok := outputs[k]
		if !ok || (k == "rules" && sameRules(oldInputs, outputs)) {
			continue
		}
		inputs[k] = v
	}
	return inputs
}

// sameRules is whether two property maps' rules filter the same traffic (CIDRs parsed, order kept).
func sameRules(a, b resource.PropertyMap) bool {
	return reflect.DeepEqual(firewallRules(a), firewallRules(b))
}

// firewallProperties is a firewall as the API has it, in the SDK's shape (a refresh and getFirewall).
func firewallProperties(f *hcloud.Firewall) resource.PropertyMap {
	applied := []resource.PropertyValue{}
	for _, r := range f.AppliedTo {
		to := resource.PropertyMap{}
		if r.Server != nil {
			to["server"] = resource.NewNumberProperty(float64(r.Server.ID))
		}
		if r.LabelSelector != nil {
			to["labelSelector"] = resource.NewStringProperty(r.LabelSelector.Selector)
		}
		applied = append(applied, resource.NewObjectProperty(to))
	}
	return resource.PropertyMap{
		"id":       resource.NewNumberProperty(float64(f.ID)),
		"name":     resource.NewStringProperty(f.Name),
		"labels":   labelsProperty(f.Labels),
		"rules":    rulesProperty(f.Rules),
		"applyTos": resource.NewArrayProperty(applied),
	}
}

// Delete removes the firewall from everything it is applied to, then deletes it, as upstream does
// (terraform-provider-hcloud internal/firewall/resource.go): the API refuses to delete an applied
// firewall, and the removal's actions may still be running, so the delete is retried while the API
// answers conflict or resource_in_use (ten tries, 1s doubling). A firewall already gone is deleted.
func (f firewall) Delete(ctx context.Context, id string, _ resource.PropertyMap) error {
	api, err := f.api()
	if err != nil {
		return err
	}
	firewallID, err := parseID("firewall", id)
	if err != nil {
		return err
	}
	found, _, err := api.Firewall.GetByID(ctx, firewallID)
	if err != nil || found == nil {
		return err
	}
	if len(found.AppliedTo) > 0 {
		actions, _, err := api.Firewall.RemoveResources(ctx, found, found.AppliedTo)
		if err == nil {
			err = f.wait(ctx, actions...)
		}
		if err != nil && !hcloud.IsError(err, hcloud.ErrorCodeFirewallResourceNotFound, hcloud.ErrorCodeNotFound) {
			return fmt.Errorf("removing firewall %d from its %d targets before deleting it: %w", firewallID, len(found.AppliedTo), err)
		}
	}
	return retry(ctx, 10, func() error {
		_, err := api.Firewall.Delete(ctx, found)
		switch {
		case err == nil, hcloud.IsError(err, hcloud.ErrorCodeNotFound):
			return nil
		case hcloud.IsError(err, hcloud.ErrorCodeConflict, hcloud.ErrorCodeResourceInUse):
			return err
		}
		return stop(err)
	})
}

// rulesProperty is the API's rules in the SDK's shape.
func rulesProperty(rules []hcloud.FirewallRule) resource.PropertyValue {
	out := []resource.PropertyValue{}
	for _, r := range rules {
		rule := resource.PropertyMap{
			"direction":      resource.NewStringProperty(string(r.Direction)),
			"protocol":       resource.NewStringProperty(string(r.Protocol)),
			"sourceIps":      cidrsProperty(r.SourceIPs),
			"destinationIps": cidrsProperty(r.DestinationIPs),
		}
		if r.Port != nil {
			rule["port"] = resource.NewStringProperty(*r.Port)
		}
		if r.Description != nil {
			rule["description"] = resource.NewStringProperty(*r.Description)
		}
		out = append(out, resource.NewObjectProperty(rule))
	}
	return resource.NewArrayProperty(out)
}

func cidrsProperty(nets []net.IPNet) resource.PropertyValue {
	out := []resource.PropertyValue{}
	for _, n := range nets {
		out = append(out, resource.NewStringProperty(n.String()))
	}
	return resource.NewArrayProperty(out)
}
