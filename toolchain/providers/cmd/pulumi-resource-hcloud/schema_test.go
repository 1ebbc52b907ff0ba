package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// --dump-schema reports what the resources do: their replace keys, and the inputs Check refuses
// to go without (a failure's path cut to its first segment).
func TestDumpSchemaReportsReplaceKeysAndRequiredInputs(t *testing.T) {
	var out bytes.Buffer
	if err := dumpSchema(&out, map[string]nativeprovider.Resource{"subnet": networkSubnet{}, "firewall": firewall{}}); err != nil {
		t.Fatal(err)
	}
	var got map[string]resourceSchema
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	subnet := got["subnet"]
	if want := []string{"ipRange", "networkId", "networkZone", "type"}; !slices.Equal(subnet.Required, want) {
		t.Errorf("subnet required %v, want %v", subnet.Required, want)
	}
	if want := []string{"ipRange", "networkId", "networkZone", "type", "vswitchId"}; !slices.Equal(subnet.ReplaceKeys, want) {
		t.Errorf("subnet replace keys %v, want %v", subnet.ReplaceKeys, want)
	}
	if len(got["firewall"].Required) != 0 || len(got["firewall"].ReplaceKeys) != 0 {
		t.Errorf("firewall %+v, want nothing required and nothing replacing", got["firewall"])
	}
}
