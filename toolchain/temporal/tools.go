//go:build tools

// Pins the Temporal CLI's command in this module, so `go build` of its package resolves from go.sum.
package tools

import _ "github.com/temporalio/cli/cmd/temporal"
