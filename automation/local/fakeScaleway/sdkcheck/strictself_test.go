// The strict check itself can fail: an invented field, an omitted one and a wrong type are each
// reported (runs without the fake).
package sdkcheck

import (
	"strings"
	"testing"

	ipam "github.com/scaleway/scaleway-sdk-go/api/ipam/v1"
)

func TestStrictCheckReportsInventedOmittedAndMistypedFields(t *testing.T) {
	const valid = `{"id":"49ddccb5-4e46-46d3-b02a-f4145634a725","address":"172.16.64.7/22","project_id":"p","is_ipv6":false,` +
		`"created_at":"2025-12-09T14:58:33Z","updated_at":"2025-12-09T14:58:33Z","source":{"subnet_id":"s"},"resource":null,` +
		`"tags":[],"reverses":[],"region":"fr-par","zone":null}`
	cases := map[string]struct{ body, want string }{
		"valid":    {valid, ""},
		"invented": {strings.Replace(valid, `"tags":[]`, `"tags":[],"vlan":3`, 1), "vlan"},
		"omitted":  {strings.Replace(valid, `"reverses":[],`, "", 1), "reverses is missing"},
		"mistyped": {strings.Replace(valid, `"is_ipv6":false`, `"is_ipv6":"no"`, 1), "is_ipv6"},
	}
	for name, c := range cases {
		s := newStrictTransport()
		s.checkBody("GET /ipam/v1/regions/fr-par/ips/x", []byte(c.body), &ipam.IP{})
		got := strings.Join(s.problems, "\n")
		if c.want == "" && got != "" {
			t.Errorf("%s: reported %s", name, got)
		}
		if c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: wanted a problem mentioning %q, got %q", name, c.want, got)
		}
	}
}
