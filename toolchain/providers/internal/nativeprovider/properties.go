package nativeprovider

import "github.com/pulumi/pulumi/sdk/v3/go/common/resource"

// Typed reads of a property map. A provider needs the plain value of an input whether or not the
// program marked it secret; outputs keep the secretness because they are built from a copy of the inputs.

// String is the input's string value, or "" when it is absent, null or not a string.
func String(m resource.PropertyMap, key string) string {
	if v := plain(m[resource.PropertyKey(key)]); v.IsString() {
		return v.StringValue()
	}
	return ""
}

// Number is the input's numeric value, or 0.
func Number(m resource.PropertyMap, key string) float64 {
	if v := plain(m[resource.PropertyKey(key)]); v.IsNumber() {
		return v.NumberValue()
	}
	return 0
}

// Bool is the input's boolean value, or false.
func Bool(m resource.PropertyMap, key string) bool {
	if v := plain(m[resource.PropertyKey(key)]); v.IsBool() {
		return v.BoolValue()
	}
	return false
}

// Object is the input's nested object (a block such as a connection), unwrapped from its secret;
// nil when it is absent or not an object.
func Object(m resource.PropertyMap, key string) resource.PropertyMap {
	if v := plain(m[resource.PropertyKey(key)]); v.IsObject() {
		return v.ObjectValue()
	}
	return nil
}

// Has reports whether the input is present and not null.
func Has(m resource.PropertyMap, key string) bool {
	v, ok := m[resource.PropertyKey(key)]
	return ok && !plain(v).IsNull()
}

// Strings is the input's list of strings (numbers are formatted), skipping other elements.
func Strings(m resource.PropertyMap, key string) []string {
	var out []string
	for _, e := range Objects(m, key, true) {
		if e.IsString() {
			out = append(out, e.StringValue())
		} else if e.IsNumber() {
			out = append(out, resource.NewNumberProperty(e.NumberValue()).String())
		}
	}
	return out
}

// Numbers is the input's list of numbers, skipping other elements.
func Numbers(m resource.PropertyMap, key string) []float64 {
	var out []float64
	for _, e := range Objects(m, key, true) {
		if e.IsNumber() {
			out = append(out, e.NumberValue())
		}
	}
	return out
}

// StringMap is the input's map of strings (labels), skipping non-string values.
func StringMap(m resource.PropertyMap, key string) map[string]string {
	out := map[string]string{}
	if v := plain(m[resource.PropertyKey(key)]); v.IsObject() {
		for k, e := range v.ObjectValue() {
			if e := plain(e); e.IsString() {
				out[string(k)] = e.StringValue()
			}
		}
	}
	return out
}

// Objects is the input's list; with elements=true each element is unwrapped from its secret.
func Objects(m resource.PropertyMap, key string, elements bool) []resource.PropertyValue {
	v := plain(m[resource.PropertyKey(key)])
	if !v.IsArray() {
		return nil
	}
	out := make([]resource.PropertyValue, 0, len(v.ArrayValue()))
	for _, e := range v.ArrayValue() {
		if elements {
			e = plain(e)
		}
		out = append(out, e)
	}
	return out
}

// Maps is the input's list of objects (nested blocks such as firewall rules), unwrapped from secrets.
func Maps(m resource.PropertyMap, key string) []resource.PropertyMap {
	var out []resource.PropertyMap
	for _, e := range Objects(m, key, true) {
		if e.IsObject() {
			out = append(out, e.ObjectValue())
		}
	}
	return out
}

// Computed marks each key as not known until the resource exists (a preview's outputs).
func Computed(outs resource.PropertyMap, keys ...string) {
	for _, k := range keys {
		outs[resource.PropertyKey(k)] = resource.MakeComputed(resource.NewStringProperty(""))
	}
}
