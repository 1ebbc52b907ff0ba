// The fake Scaleway API (../) checked against Scaleway's own API definitions: every endpoint driven
// through the official Go SDK, each answer re-decoded strictly into the SDK's types. A module of its
// own so that the SDK never enters the driver's or the toolchain's builds.
module nodefleet.dev/automation/local/fakescaleway/sdkcheck

go 1.26.0

require github.com/scaleway/scaleway-sdk-go v1.39.0

require gopkg.in/yaml.v2 v2.4.0 // indirect
