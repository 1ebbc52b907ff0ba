package apiclient

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"nodefleet.dev/driver/pkg/metrics"
)

// The routes of the scaling API the driver calls, as path templates: the route label of
// metrics.APIRequests and metrics.APIRequestDuration (docs/karpenter.md, "Metrics").
const (
	routeCluster       = "/clusters/{id}"
	routeInstanceTypes = "/clusters/{id}/instance-types"
	routeNodes         = "/clusters/{id}/nodes"
	routeNode          = "/clusters/{id}/nodes/{nodeID}"
)

// callKey carries, in a request's context, what the transport labels its metrics with: the
// generated client builds the URL itself, so the route template is told rather than read back.
type callKey struct{}

type call struct {
	route     string
	clusterID string
}

func withCall(ctx context.Context, route, clusterID string) context.Context {
	return context.WithValue(ctx, callKey{}, call{route: route, clusterID: clusterID})
}

// instrumentedTransport counts and times every request to the scaling API and counts the ones
// refused for their token. A request without a call in its context (none today) is labelled by
// the route "other" rather than by its path, which holds node ids.
type instrumentedTransport struct {
	next http.RoundTripper
}

func (t instrumentedTransport) RoundTrip(request *http.Request) (*http.Response, error) {
	labels, _ := request.Context().Value(callKey{}).(call)
	if labels.route == "" {
		labels.route = "other"
	}
	start := time.Now()
	response, err := t.next.RoundTrip(request)
	metrics.APIRequestDuration.WithLabelValues(labels.route, request.Method).Observe(time.Since(start).Seconds())
	code := metrics.CodeNoResponse
	if err == nil {
		code = strconv.Itoa(response.StatusCode)
		switch response.StatusCode {
		case http.StatusUnauthorized:
			metrics.AuthErrors.WithLabelValues(labels.clusterID, metrics.AuthUnauthorized).Inc()
		case http.StatusForbidden:
			metrics.AuthErrors.WithLabelValues(labels.clusterID, metrics.AuthForbidden).Inc()
		}
	}
	metrics.APIRequests.WithLabelValues(labels.route, request.Method, code).Inc()
	return response, err
}
