package nodefleetapi

import (
	"crypto/sha256"
	"encoding/hex"
)

// NodeIDFor is the nodeID the scaling API gives a create's uniqueID (the NodeClaim name): `k` and
// the first 12 hex digits of its sha256 (docs/design.md §5.3, automation/api/nodeIdentity.ts).
// Written by hand beside the generated client: the API's contract, not part of its document.
func NodeIDFor(uniqueID string) string {
	digest := sha256.Sum256([]byte(uniqueID))
	return "k" + hex.EncodeToString(digest[:])[:12]
}
