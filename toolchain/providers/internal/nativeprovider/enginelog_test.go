package nativeprovider

import "testing"

func TestEngineAddressIsTheLastArgumentAfterTheEnginesFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"127.0.0.1:4242"}, "127.0.0.1:4242"},
		{[]string{"--logtostderr", "-v=9", "--tracing", "file:/tmp/trace", "127.0.0.1:4242"}, "127.0.0.1:4242"},
		{[]string{"--tracing", "127.0.0.1:9411"}, ""},
		{[]string{"--logtostderr"}, ""},
		{nil, ""},
	} {
		if got := engineAddress(c.args); got != c.want {
			t.Errorf("engineAddress(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
