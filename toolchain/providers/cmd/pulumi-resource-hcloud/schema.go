package main

import (
	"io"

	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// resourceSchema is what --dump-schema reports of one resource (see nativeprovider.ResourceSchema).
type resourceSchema = nativeprovider.ResourceSchema

func dumpSchema(out io.Writer, resources map[string]nativeprovider.Resource) error {
	return nativeprovider.DumpSchema(out, resources)
}
