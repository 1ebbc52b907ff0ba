// Package metrics are the driver's own Prometheus metrics, on controller-runtime's registry (the one
// Karpenter's operator serves on its metrics port, beside Karpenter's own). Their names are listed in
// docs/karpenter.md ("Metrics") and checked against the Grafana dashboard's queries
// (cmd/controller/exportedmetrics_test.go writes what the registry really serves).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	namespace = "nodefleet"
	subsystem = "driver"
)

// Auth error reasons (the reason label of AuthErrors).
const (
	// AuthUnauthorized: the API answered 401, the token is not (or no longer) accepted.
	AuthUnauthorized = "unauthorized"
	// AuthForbidden: the API answered 403, the token is valid but not for this cluster.
	AuthForbidden = "forbidden"
	// AuthTokenUnavailable: the driver could not read the NodeClass's token at all.
	AuthTokenUnavailable = "token_unavailable"
)

// CodeNoResponse is the code label of an API call that got no HTTP answer (refused, reset, timed out).
const CodeNoResponse = "none"

var (
	// APIRequests counts the driver's calls to the scaling API by route (the path template, so
	// node ids do not multiply the series), HTTP method and status code.
	APIRequests = counter("api_requests_total",
		"Calls the driver made to the scaling API, by route, method and HTTP status code (\"none\" when no answer came).",
		"route", "method", "code")

	// APIRequestDuration is how long each call to the scaling API took, answered or not. The
	// buckets reach the driver's 10 s request timeout.
	APIRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem,
		Name:    "api_request_duration_seconds",
		Help:    "Duration of the driver's calls to the scaling API, by route and method.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"route", "method"})

	// AuthErrors counts the calls the API refused for their token, and the calls never sent because
	// the NodeClass's token could not be read, by cluster and reason (the Auth* constants).
	AuthErrors = counter("api_auth_errors_total",
		"Scaling API calls refused for their token (401, 403) or not sent because the token could not be read, by cluster and reason.",
		"cluster", "reason")

	// ListFailures counts, per cluster, the node lists CloudProvider.List could not read from the
	// API. List then answers that cluster's NodeClaims as they are, so only this metric, the log and
	// the NodeClass's Ready condition (its status check reads the same API) show the outage.
	ListFailures = counter("api_list_failures_total",
		"Node lists the driver could not read from the scaling API, by cluster.",
		"cluster")

	// OfferingsMarkedUnavailable counts the offerings the driver marked unavailable after the API
	// refused or failed a launch with InsufficientCapacity (sold out, quota, unusable image, pool at
	// its limit), by cluster, instance type and zone: a bounded set, the pool's offerings.
	OfferingsMarkedUnavailable = counter("offerings_marked_unavailable_total",
		"Offerings the driver marked unavailable after an InsufficientCapacity launch failure, by cluster, instance type and zone.",
		"cluster", "instance_type", "zone")

	// GarbageCollectedNodes counts the API nodes no NodeClaim claimed that the instance garbage
	// collector deleted, by cluster.
	GarbageCollectedNodes = counter("garbage_collected_nodes_total",
		"Nodes of the scaling API that no NodeClaim claimed, deleted by the driver's garbage collector, by cluster.",
		"cluster")
)

// counter is a CounterVec of the driver's namespace and subsystem.
func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
}

func init() {
	crmetrics.Registry.MustRegister(APIRequests, APIRequestDuration, AuthErrors, ListFailures, OfferingsMarkedUnavailable, GarbageCollectedNodes)
}
