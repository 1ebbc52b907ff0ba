package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// An applied firewall is removed from every target before it is deleted, as upstream does; the
// API refuses to delete an applied firewall.
func TestFirewallDeleteRemovesItFromItsTargetsFirst(t *testing.T) {
	applied := true
	c, api := newCloud(t, map[string]func(int) (int, any){
		"GET /firewalls/7": func(int) (int, any) {
			return http.StatusOK, map[string]any{"firewall": map[string]any{"id": 7, "name": "fleet", "rules": []any{}, "applied_to": []any{
				map[string]any{"type": "server", "server": map[string]any{"id": 41}},
				map[string]any{"type": "label_selector", "label_selector": map[string]any{"selector": "pool=a"}},
			}}}
		},
		"POST /firewalls/7/actions/remove_from_resources": func(int) (int, any) {
			applied = false
			return http.StatusCreated, map[string]any{"actions": []any{action(1, "remove_firewall", "success")}}
		},
		"DELETE /firewalls/7": func(int) (int, any) {
			if applied {
				return http.StatusConflict, apiError("resource_in_use", "firewall is still applied")
			}
			return http.StatusNoContent, nil
		},
	})
	if err := (firewall{c}).Delete(context.Background(), "7", resource.PropertyMap{}); err != nil {
		t.Fatalf("Delete: %v (calls %v)", err, api.Log())
	}
	calls := api.Log()
	remove, del := index(calls, "POST /firewalls/7/actions/remove_from_resources"), index(calls, "DELETE /firewalls/7")
	if remove < 0 || del < remove {
		t.Fatalf("calls %v: want the removal from its targets before the delete", calls)
	}
}

// The delete is retried while the API still reports the firewall in use (the removal's actions
// settling), and other errors end it at once.
func TestFirewallDeleteRetriesWhileInUse(t *testing.T) {
	c, api := newCloud(t, map[string]func(int) (int, any){
		"GET /firewalls/7": func(int) (int, any) {
			return http.StatusOK, map[string]any{"firewall": map[string]any{"id": 7, "name": "fleet", "rules": []any{}, "applied_to": []any{}}}
		},
		"DELETE /firewalls/7": func(n int) (int, any) {
			if n < 2 {
				return http.StatusConflict, apiError("resource_in_use", "firewall is still applied")
			}
			return http.StatusNoContent, nil
		},
	})
	if err := (firewall{c}).Delete(context.Background(), "7", resource.PropertyMap{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := count(api.Log(), "DELETE /firewalls/7"); got != 3 {
		t.Fatalf("%d deletes, want 3 (two refusals, then success)", got)
	}

	c, api = newCloud(t, map[string]func(int) (int, any){
		"GET /firewalls/7": func(int) (int, any) {
			return http.StatusOK, map[string]any{"firewall": map[string]any{"id": 7, "name": "fleet", "rules": []any{}, "applied_to": []any{}}}
		},
		"DELETE /firewalls/7": func(int) (int, any) { return http.StatusForbidden, apiError("forbidden", "read-only token") },
	})
	if err := (firewall{c}).Delete(context.Background(), "7", resource.PropertyMap{}); err == nil || !strings.Contains(err.Error(), "read-only token") {
		t.Fatalf("Delete = %v, want the forbidden error", err)
	}
	if got := count(api.Log(), "DELETE /firewalls/7"); got != 1 {
		t.Fatalf("%d deletes after forbidden, want 1", got)
	}
}

func rule(sources ...string) resource.PropertyMap {
	values := []resource.PropertyValue{}
	for _, s := range sources {
		values = append(values, resource.NewStringProperty(s))
	}
	return resource.PropertyMap{
		"name": resource.NewStringProperty("fleet"),
		"rules": resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{
			"direction": resource.NewStringProperty("in"),
			"protocol":  resource.NewStringProperty("tcp"),
			"port":      resource.NewStringProperty("22"),
			"sourceIps": resource.NewArrayProperty(values),
		})}),
	}
}

// A source with host bits set is refused at Check (upstream validates it at plan time); a single
// address is taken as a /32 or /128, as upstream normalizes it.
func TestFirewallCheckRefusesSourcesWithHostBits(t *testing.T) {
	for _, bad := range []string{"2001:db8::1/64", "10.0.0.1/8", "somewhere"} {
		_, failures := firewall{}.Check(rule("0.0.0.0/0", bad))
		if len(failures) != 1 || failures[0].Property != "rules[0].sourceIps[1]" {
			t.Fatalf("Check(%q) = %v, want one failure on rules[0].sourceIps[1]", bad, failures)
		}
		if bad != "somewhere" && !strings.Contains(failures[0].Reason, "host bits") {
			t.Fatalf("Check(%q) reason %q does not name the rule", bad, failures[0].Reason)
		}
	}
	for _, good := range []string{"2001:db8::/64", "::/0", "203.0.113.7", "2001:db8::1"} {
		if _, failures := (firewall{}).Check(rule(good)); len(failures) != 0 {
			t.Fatalf("Check(%q) = %v, want none", good, failures)
		}
	}
	got := firewallRules(rule("203.0.113.7", "2001:db8::1"))[0].SourceIPs
	if len(got) != 2 || got[0].String() != "203.0.113.7/32" || got[1].String() != "2001:db8::1/128" {
		t.Fatalf("single addresses became %v, want /32 and /128", got)
	}
}

// Labels are checked at Check with the API's rules, on each resource upstream checks them on.
func TestLabelsAreValidatedAtCheck(t *testing.T) {
	labels := resource.NewObjectProperty(resource.PropertyMap{"nodefleet.dev/pool": resource.NewStringProperty("a"), "bad key!": resource.NewStringProperty("x"), "ok": resource.NewStringProperty("-x")})
	checks := map[string]func(resource.PropertyMap) []string{
		"Firewall": func(m resource.PropertyMap) []string { _, f := (firewall{}).Check(m); return properties(f) },
		"Network": func(m resource.PropertyMap) []string {
			m["ipRange"] = resource.NewStringProperty("10.0.0.0/16")
			_, f := (network{}).Check(m)
			return properties(f)
		},
		"PlacementGroup": func(m resource.PropertyMap) []string {
			m["type"] = resource.NewStringProperty("spread")
			_, f := (placementGroup{}).Check(m)
			return properties(f)
		},
	}
	for name, check := range checks {
		got := check(resource.PropertyMap{"name": resource.NewStringProperty("fleet"), "labels": labels})
		if strings.Join(got, ",") != "labels.bad key!,labels.ok" {
			t.Errorf("%s: failures on %v, want labels.bad key! and labels.ok", name, got)
		}
	}
}
