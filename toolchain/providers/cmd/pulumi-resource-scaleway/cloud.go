package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// cloud is the configured Scaleway client shared by the resources.
type cloud struct {
	client *scw.Client
	// profile is the merged configuration, for the default project, region and zone.
	profile *scw.Profile
	// retryInterval is how often a wait polls; upstream's is 5 s (baremetal/helpers.go retryInterval).
	retryInterval time.Duration
}

// upstreamRetryInterval is terraform-provider-scaleway's poll interval for every Elastic Metal wait
// (internal/services/baremetal/helpers.go, retryInterval).
const upstreamRetryInterval = 5 * time.Second

// defaultServerTimeout is upstream's default create, update and delete timeout of a server: an
// 80-minute server timeout plus a minute for a retry plus a minute (baremetal/helpers.go,
// ServerTimeout, serverRetryFuncTimeout, defaultServerTimeout).
const defaultServerTimeout = 82 * time.Minute

// configure merges the configuration as terraform-provider-scaleway does (internal/meta/meta.go,
// LoadProfile): fr-par and fr-par-1 as defaults, then the scw config file's active profile, then
// the provider's keys (accessKey, secretKey, projectId, organizationId, region, zone, apiUrl,
// profile), then the SCW_* environment, each later source winning. A zone without a region gives
// the zone's region.
func (c *cloud) configure(config resource.PropertyMap) error {
	file, err := scw.LoadConfig()
	if _, missing := errors.AsType[*scw.ConfigFileNotFoundError](err); missing {
		file = &scw.Config{}
	} else if err != nil {
		return fmt.Errorf("scw config file: %w", err)
	}
	active, err := file.GetActiveProfile()
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	provider := &scw.Profile{}
	if name := nativeprovider.String(config, "profile"); name != "" {
		if named, err := file.GetProfile(name); err == nil {
			provider = named
		}
	}
	set := func(key string, field **string) {
		if v := nativeprovider.String(config, key); v != "" {
			*field = &v
		}
	}
	set("accessKey", &provider.AccessKey)
	set("secretKey", &provider.SecretKey)
	set("projectId", &provider.DefaultProjectID)
	set("organizationId", &provider.DefaultOrganizationID)
	set("region", &provider.DefaultRegion)
	set("zone", &provider.DefaultZone)
	set("apiUrl", &provider.APIURL)
	defaults := &scw.Profile{DefaultRegion: scw.StringPtr(scw.RegionFrPar.String()), DefaultZone: scw.StringPtr(scw.ZoneFrPar1.String())}
	profile := scw.MergeProfiles(defaults, active, provider, scw.LoadEnvProfile())
	if profile.DefaultZone != nil && *profile.DefaultZone != "" && (profile.DefaultRegion == nil || *profile.DefaultRegion == "") {
		if region, err := scw.Zone(*profile.DefaultZone).Region(); err == nil {
			profile.DefaultRegion = scw.StringPtr(region.String())
		}
	}
	client, err := scw.NewClient(scw.WithProfile(profile), scw.WithUserAgent("nodefleet-pulumi-resource-scaleway/"+version))
	if err != nil {
		// The SDK's validation names the field (an access key that is not SCW + 17 characters, a
		// secret key that is not a UUID, a zone it does not know).
		return err
	}
	c.client, c.profile = client, profile
	if c.retryInterval == 0 {
		c.retryInterval = upstreamRetryInterval
	}
	return nil
}

func (c *cloud) api() (*scw.Client, error) {
	if c.client == nil {
		return nil, errors.New("the provider is not configured")
	}
	return c.client, nil
}

// zone is the input zone, else the provider's default.
func (c *cloud) zone(inputs resource.PropertyMap) scw.Zone {
	if z := nativeprovider.String(inputs, "zone"); z != "" {
		return scw.Zone(z)
	}
	if c.profile != nil && c.profile.DefaultZone != nil {
		return scw.Zone(*c.profile.DefaultZone)
	}
	return scw.ZoneFrPar1
}

// region is the input region, else the provider's default.
func (c *cloud) region(inputs resource.PropertyMap) scw.Region {
	if r := nativeprovider.String(inputs, "region"); r != "" {
		return scw.Region(r)
	}
	if c.profile != nil && c.profile.DefaultRegion != nil {
		return scw.Region(*c.profile.DefaultRegion)
	}
	return scw.RegionFrPar
}

// projectID is the input project, else the provider's default ("" lets the API pick).
func (c *cloud) projectID(inputs resource.PropertyMap) string {
	if p := nativeprovider.String(inputs, "projectId"); p != "" {
		return p
	}
	if c.profile != nil && c.profile.DefaultProjectID != nil {
		return *c.profile.DefaultProjectID
	}
	return ""
}

// timeout is what a wait may take: what is left of the operation's customTimeouts when the
// program gave one (the context's deadline), else upstream's default for the resource.
func timeout(ctx context.Context, fallback time.Duration) *time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		return &left
	}
	return &fallback
}

// Upstream ids carry their locality: "fr-par-2/<uuid>" for a zoned object (a server, an offer),
// "fr-par/<uuid>" for a regional one (internal/locality zonal.NewIDString, regional.NewIDString);
// inputs accept either form (locality.ExpandID).

func zonedID(zone scw.Zone, id string) string { return zone.String() + "/" + id }

func regionalID(region scw.Region, id string) string { return region.String() + "/" + id }

// splitID is an id's locality ("" without one) and bare id.
func splitID(id string) (string, string) {
	if i := strings.LastIndex(id, "/"); i >= 0 {
		return id[:i], id[i+1:]
	}
	return "", id
}

// bareID drops the locality.
func bareID(id string) string {
	_, bare := splitID(id)
	return bare
}

// isNotFound is a 404 from the API, which upstream treats as "already gone" on read and delete
// (internal/httperrors Is404).
func isNotFound(err error) bool {
	var notFound *scw.ResourceNotFoundError
	var response *scw.ResponseError
	return errors.As(err, &notFound) || (errors.As(err, &response) && response.StatusCode == 404)
}

func stringsProperty(values []string) resource.PropertyValue {
	out := make([]resource.PropertyValue, 0, len(values))
	for _, v := range values {
		out = append(out, resource.NewStringProperty(v))
	}
	return resource.NewArrayProperty(out)
}

func timeProperty(t *time.Time) resource.PropertyValue {
	if t == nil {
		return resource.NewStringProperty("")
	}
	return resource.NewStringProperty(t.Format(time.RFC3339))
}
