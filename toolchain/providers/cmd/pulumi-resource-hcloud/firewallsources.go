package main

import (
	"fmt"
	"net"
)

// parseSource reads a firewall rule's source or destination as upstream does
// (terraform-provider-hcloud internal/firewall/validation.go): a CIDR whose address is the start of
// its block, or a single address taken as a /32 or /128. A CIDR with host bits set is refused
// rather than silently narrowed or widened: 2001:db8::1/64 may mean the host or the /64.
func parseSource(text string) (*net.IPNet, error) {
	ip, block, err := net.ParseCIDR(text)
	if err != nil {
		ip = net.ParseIP(text)
		if ip == nil {
			return nil, fmt.Errorf("must be a CIDR such as 203.0.113.0/24 or 2001:db8::/64, or a single address")
		}
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		return &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, nil
	}
	if !ip.Equal(block.IP) {
		return nil, fmt.Errorf("has host bits set: %s is not the start of its block %s (write %s, or the address alone)", text, block, block)
	}
	return block, nil
}
