//go:build tools

// Pins gofakes3's command in this module, so `go build` of its package resolves from go.sum.
package tools

import _ "github.com/johannesboyne/gofakes3/cmd/gofakes3"
