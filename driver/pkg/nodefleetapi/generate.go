// Package nodefleetapi is the scaling API's client, generated from the repository's openapi.json
// (the document the API's zod schemas produce). Regenerate with `go generate ./...` in driver/;
// TestGeneratedClientIsCurrent fails when the committed file is stale.
package nodefleetapi

//go:generate go tool -modfile=../../go.tools.mod oapi-codegen -config oapi-codegen.yaml -o client.gen.go ../../../openapi.json
