// A strict HTTP transport for the SDK: every answer of the fake is decoded a second time, with
// DisallowUnknownFields, into the scaleway-sdk-go type its route answers with (so a field the fake
// invents fails), and its keys are compared with the type's JSON fields (so a field the fake omits
// fails: every field without `omitempty` must be present, null allowed where the type is nullable).
package sdkcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"

	bm1 "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	bm3 "github.com/scaleway/scaleway-sdk-go/api/baremetal/v3"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	ipam "github.com/scaleway/scaleway-sdk-go/api/ipam/v1"
	vpc "github.com/scaleway/scaleway-sdk-go/api/vpc/v2"
)

// route: the SDK type a method and path answer with; nil for an empty answer (204).
type route struct {
	method string
	path   *regexp.Regexp
	answer func() any
}

func r(method, path string, answer func() any) route {
	return route{method, regexp.MustCompile("^" + path + "$"), answer}
}

const (
	zone   = `/zones/[a-z]{2}-[a-z]{3}-[0-9]`
	region = `/regions/[a-z]{2}-[a-z]{3}`
	id     = `/[0-9a-f-]{36}`
)

var routes = []route{
	r("GET", "/baremetal/v1"+zone+"/offers", func() any { return &bm1.ListOffersResponse{} }),
	r("GET", "/baremetal/v1"+zone+"/offers"+id, func() any { return &bm1.Offer{} }),
	r("GET", "/baremetal/v1"+zone+"/os", func() any { return &bm1.ListOSResponse{} }),
	r("GET", "/baremetal/v1"+zone+"/os"+id, func() any { return &bm1.OS{} }),
	r("GET", "/baremetal/v1"+zone+"/options", func() any { return &bm1.ListOptionsResponse{} }),
	r("GET", "/baremetal/v1"+zone+"/options"+id, func() any { return &bm1.Option{} }),
	r("GET", "/baremetal/v1"+zone+"/servers", func() any { return &bm1.ListServersResponse{} }),
	r("POST", "/baremetal/v1"+zone+"/servers", func() any { return &bm1.Server{} }),
	r("GET|PATCH|DELETE", "/baremetal/v1"+zone+"/servers"+id, func() any { return &bm1.Server{} }),
	r("POST", "/baremetal/v1"+zone+"/servers"+id+"/(install|reboot)", func() any { return &bm1.Server{} }),
	r("POST|DELETE", "/baremetal/v1"+zone+"/servers"+id+"/options"+id, func() any { return &bm1.Server{} }),
	r("POST", "/baremetal/v1"+zone+"/servers"+id+"/private-networks", func() any { return &bm1.ServerPrivateNetwork{} }),
	r("PUT", "/baremetal/v1"+zone+"/servers"+id+"/private-networks", func() any { return &bm1.SetServerPrivateNetworksResponse{} }),
	r("GET", "/baremetal/v1"+zone+"/server-private-networks", func() any { return &bm1.ListServerPrivateNetworksResponse{} }),
	r("POST", "/baremetal/v3"+zone+"/servers"+id+"/private-networks", func() any { return &bm3.ServerPrivateNetwork{} }),
	r("PUT", "/baremetal/v3"+zone+"/servers"+id+"/private-networks", func() any { return &bm3.SetServerPrivateNetworksResponse{} }),
	r("GET", "/baremetal/v3"+zone+"/server-private-networks", func() any { return &bm3.ListServerPrivateNetworksResponse{} }),
	r("DELETE", "/baremetal/v[13]"+zone+"/servers"+id+"/private-networks"+id, nil),
	r("GET", "/vpc/v2"+region+"/vpcs", func() any { return &vpc.ListVPCsResponse{} }),
	r("GET", "/vpc/v2"+region+"/vpcs"+id, func() any { return &vpc.VPC{} }),
	r("GET", "/vpc/v2"+region+"/private-networks", func() any { return &vpc.ListPrivateNetworksResponse{} }),
	r("POST", "/vpc/v2"+region+"/private-networks", func() any { return &vpc.PrivateNetwork{} }),
	r("GET|PATCH", "/vpc/v2"+region+"/private-networks"+id, func() any { return &vpc.PrivateNetwork{} }),
	r("DELETE", "/vpc/v2"+region+"/private-networks"+id, nil),
	r("POST", "/ipam/v1"+region+"/ips", func() any { return &ipam.IP{} }),
	r("GET", "/ipam/v1"+region+"/ips", func() any { return &ipam.ListIPsResponse{} }),
	r("GET|PATCH", "/ipam/v1"+region+"/ips"+id, func() any { return &ipam.IP{} }),
	r("DELETE", "/ipam/v1"+region+"/ips"+id, nil),
	r("GET", "/iam/v1alpha1/ssh-keys", func() any { return &iam.ListSSHKeysResponse{} }),
	r("POST", "/iam/v1alpha1/ssh-keys", func() any { return &iam.SSHKey{} }),
	r("GET|PATCH", "/iam/v1alpha1/ssh-keys"+id, func() any { return &iam.SSHKey{} }),
	r("DELETE", "/iam/v1alpha1/ssh-keys"+id, nil),
}

// Scaleway's error answers by `type` (scw/errors.go), each with the `message` all of them carry.
type errorBase struct {
	Message string `json:"message"`
	Type    string `json:"type,omitempty"`
}

var errorShapes = map[string]func() any{
	"": func() any { return &errorBase{} },
	"invalid_arguments": func() any {
		return &struct {
			errorBase
			Details []struct {
				ArgumentName string `json:"argument_name"`
				Reason       string `json:"reason"`
				HelpMessage  string `json:"help_message"`
			} `json:"details"`
		}{}
	},
	"not_found": func() any {
		return &struct {
			errorBase
			Resource   string `json:"resource"`
			ResourceID string `json:"resource_id"`
		}{}
	},
	"permissions_denied": func() any {
		return &struct {
			errorBase
			Details []struct {
				Resource string `json:"resource"`
				Action   string `json:"action"`
			} `json:"details"`
		}{}
	},
	"transient_state": func() any {
		return &struct {
			errorBase
			Resource     string `json:"resource"`
			ResourceID   string `json:"resource_id"`
			CurrentState string `json:"current_state"`
		}{}
	},
	"out_of_stock": func() any {
		return &struct {
			errorBase
			Resource string `json:"resource"`
		}{}
	},
	"precondition_failed": func() any {
		return &struct {
			errorBase
			Precondition string `json:"precondition"`
			HelpMessage  string `json:"help_message"`
		}{}
	},
	"denied_authentication": func() any {
		return &struct {
			errorBase
			Method string `json:"method"`
			Reason string `json:"reason"`
		}{}
	},
	// Not one of the SDK's standard errors: what the fake says when a requested address is taken.
	"invalid_request_error": func() any {
		return &struct {
			errorBase
			Resource string `json:"resource"`
		}{}
	},
}

// strictTransport records every problem it finds; the test fails on any.
type strictTransport struct {
	next     http.RoundTripper
	mu       sync.Mutex
	problems []string
	checked  map[string]int
}

func newStrictTransport() *strictTransport {
	return &strictTransport{next: http.DefaultTransport, checked: map[string]int{}}
}

func (s *strictTransport) report(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

func (s *strictTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	what := req.Method + " " + req.URL.Path
	if resp.StatusCode >= 300 {
		s.checkError(what, resp, body)
		return resp, nil
	}
	for _, rt := range routes {
		if !rt.path.MatchString(req.URL.Path) || !regexp.MustCompile("^("+rt.method+")$").MatchString(req.Method) {
			continue
		}
		s.mu.Lock()
		s.checked[rt.method+" "+rt.path.String()]++
		s.mu.Unlock()
		if rt.answer == nil {
			if len(bytes.TrimSpace(body)) > 0 || resp.StatusCode != http.StatusNoContent {
				s.report("%s: wanted an empty 204 answer, got %d %q", what, resp.StatusCode, body)
			}
			return resp, nil
		}
		s.checkBody(what, body, rt.answer())
		return resp, nil
	}
	s.report("%s: no SDK type is known for this route (add it to routes)", what)
	return resp, nil
}

func (s *strictTransport) checkError(what string, resp *http.Response, body []byte) {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		s.report("%s: error answer is not JSON (%s)", what, resp.Header.Get("Content-Type"))
		return
	}
	var head errorBase
	if err := json.Unmarshal(body, &head); err != nil || head.Message == "" {
		s.report("%s: error answer without a message: %s", what, body)
		return
	}
	shape, known := errorShapes[head.Type]
	if !known {
		s.report("%s: error type %q is none the SDK decodes", what, head.Type)
		return
	}
	s.checkBody(what+" (error)", body, shape())
}

// checkBody decodes strictly into target, then checks that every field the type requires is present.
func (s *strictTransport) checkBody(what string, body []byte, target any) {
	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(target); err != nil {
		s.report("%s: does not decode strictly into %T: %v", what, target, err)
		return
	}
	var generic any
	genericDecoder := json.NewDecoder(bytes.NewReader(body))
	genericDecoder.UseNumber()
	if err := genericDecoder.Decode(&generic); err != nil {
		s.report("%s: %v", what, err)
		return
	}
	for _, p := range presence(reflect.TypeOf(target), generic, "") {
		s.report("%s: %s", what, p)
	}
}

var unmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// presence lists the fields of t missing from (or unknown to) the decoded JSON value v.
func presence(t reflect.Type, v any, path string) []string {
	nullable := false
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		nullable = true
	}
	if v == nil {
		if nullable || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Interface {
			return nil
		}
		return []string{fmt.Sprintf("%s is null but %s is not nullable", orRoot(path), t)}
	}
	// Types that decode themselves (times, addresses, enums, zones) are checked by the strict decode.
	if reflect.PointerTo(t).Implements(unmarshaler) || t.Implements(unmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		object, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %T, wanted an object for %s", orRoot(path), v, t)}
		}
		var problems []string
		known := map[string]bool{}
		var walk func(t reflect.Type)
		walk = func(t reflect.Type) {
			for i := 0; i < t.NumField(); i++ {
				field := t.Field(i)
				if field.Anonymous {
					walk(field.Type)
					continue
				}
				tag := field.Tag.Get("json")
				name, options, _ := strings.Cut(tag, ",")
				if name == "-" || !field.IsExported() {
					continue
				}
				if name == "" {
					name = field.Name
				}
				known[name] = true
				value, present := object[name]
				if !present {
					// The SDK fills `srn` itself when the API leaves it out (setSRN).
					if !strings.Contains(options, "omitempty") && name != "srn" {
						problems = append(problems, fmt.Sprintf("%s.%s is missing (%s requires it)", orRoot(path), name, t))
					}
					continue
				}
				problems = append(problems, presence(field.Type, value, path+"."+name)...)
			}
		}
		walk(t)
		for key := range object {
			if !known[key] {
				problems = append(problems, fmt.Sprintf("%s.%s is not a field of %s", orRoot(path), key, t))
			}
		}
		return problems
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				return []string{fmt.Sprintf("%s is %T, wanted base64 text", orRoot(path), v)}
			}
			return nil
		}
		list, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %T, wanted a list", orRoot(path), v)}
		}
		var problems []string
		for i, item := range list {
			problems = append(problems, presence(t.Elem(), item, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return problems
	case reflect.Map:
		object, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %T, wanted an object", orRoot(path), v)}
		}
		var problems []string
		for key, item := range object {
			problems = append(problems, presence(t.Elem(), item, path+"."+key)...)
		}
		return problems
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "(answer)"
	}
	return strings.TrimPrefix(path, ".")
}
