package main

import (
	"context"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

var offsetKeys = []resource.PropertyKey{"offsetYears", "offsetMonths", "offsetDays", "offsetHours", "offsetMinutes", "offsetSeconds"}

type offset struct{}

// Only triggers replace: upstream's base_rfc3339 is optional and computed without RequiresReplace, so a
// new base updates in place (terraform-provider-time v0.12.1, resource_time_offset.go).
func (offset) ReplaceKeys() []string { return []string{"triggers"} }

func (offset) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	if v, ok := news["baseRfc3339"]; ok && v.IsString() {
		if _, err := time.Parse(time.RFC3339, v.StringValue()); err != nil {
			return nil, []*pulumirpc.CheckFailure{nativeprovider.Failure("baseRfc3339", "must be an RFC 3339 timestamp")}
		}
	}
	set := 0
	for _, k := range offsetKeys {
		if v, ok := news[k]; ok && !v.IsNull() {
			set++
		}
	}
	if set == 0 {
		return nil, []*pulumirpc.CheckFailure{nativeprovider.Failure("offsetMinutes", "at least one offset* argument is required")}
	}
	return news, nil
}

func (o offset) Create(_ context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	base := time.Now().UTC().Truncate(time.Second)
	if v, ok := inputs["baseRfc3339"]; ok && v.IsString() {
		parsed, err := time.Parse(time.RFC3339, v.StringValue())
		if err != nil {
			return "", nil, err
		}
		base = parsed
	}
	outs := inputs.Copy()
	if preview || inputs.ContainsUnknowns() {
		for _, k := range []resource.PropertyKey{"baseRfc3339", "rfc3339", "unix", "year", "month", "day", "hour", "minute", "second"} {
			if _, given := inputs[k]; given && k == "baseRfc3339" {
				continue
			}
			outs[k] = resource.MakeComputed(resource.NewStringProperty(""))
		}
		return "", outs, nil
	}
	fill(outs, base)
	return base.Format(time.RFC3339), outs, nil
}

func (offset) Update(_ context.Context, id string, olds, inputs resource.PropertyMap, _ bool) (resource.PropertyMap, error) {
	// The base given now, else the one saved at create (upstream's plan takes the state's when unset).
	baseText := olds["baseRfc3339"].StringValue()
	if v, ok := inputs["baseRfc3339"]; ok && v.IsString() {
		baseText = v.StringValue()
	}
	base, err := time.Parse(time.RFC3339, baseText)
	if err != nil {
		return nil, err
	}
	outs := inputs.Copy()
	fill(outs, base)
	return outs, nil
}

// fill sets the computed outputs from the base time and the offsets.
func fill(outs resource.PropertyMap, base time.Time) {
	t := base.AddDate(int(nativeprovider.Number(outs, "offsetYears")), int(nativeprovider.Number(outs, "offsetMonths")), int(nativeprovider.Number(outs, "offsetDays"))).
		Add(time.Duration(int(nativeprovider.Number(outs, "offsetHours")))*time.Hour +
			time.Duration(int(nativeprovider.Number(outs, "offsetMinutes")))*time.Minute +
			time.Duration(int(nativeprovider.Number(outs, "offsetSeconds")))*time.Second)
	outs["baseRfc3339"] = resource.NewStringProperty(base.Format(time.RFC3339))
	outs["rfc3339"] = resource.NewStringProperty(t.Format(time.RFC3339))
	outs["unix"] = resource.NewNumberProperty(float64(t.Unix()))
	outs["year"] = resource.NewNumberProperty(float64(t.Year()))
	outs["month"] = resource.NewNumberProperty(float64(t.Month()))
	outs["day"] = resource.NewNumberProperty(float64(t.Day()))
	outs["hour"] = resource.NewNumberProperty(float64(t.Hour()))
	outs["minute"] = resource.NewNumberProperty(float64(t.Minute()))
	outs["second"] = resource.NewNumberProperty(float64(t.Second()))
}
