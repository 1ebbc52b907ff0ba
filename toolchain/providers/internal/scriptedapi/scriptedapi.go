// Package scriptedapi is an HTTP API that a provider double's unit tests script route by route. It
// logs every call as "METHOD /path", so a test can assert the calls upstream makes and their order,
// and answers a route it was not given with the cloud's own not-found body.
package scriptedapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Routes answer by "METHOD /path"; n counts the earlier calls of the same key.
type Routes = map[string]func(n int) (status int, body any)

type API struct {
	// URL is where the API listens (127.0.0.1).
	URL string

	mu       sync.Mutex
	calls    []string
	routes   Routes
	notFound func(key string) any
}

// Start serves routes until the test ends; notFound is the body of a 404 for any other call.
func Start(t *testing.T, routes Routes, notFound func(key string) any) *API {
	t.Helper()
	api := &API{routes: routes, notFound: notFound}
	server := httptest.NewServer(api)
	t.Cleanup(server.Close)
	api.URL = server.URL
	return api
}

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	a.mu.Lock()
	n := Count(a.calls, key)
	a.calls = append(a.calls, key)
	route, ok := a.routes[key]
	a.mu.Unlock()
	status, body := http.StatusNotFound, a.notFound(key)
	if ok {
		status, body = route(n)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if body != nil {
		_ = json.NewEncoder(w).Encode(body)
	}
}

// Log is every call so far, in order.
func (a *API) Log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

// Count is how many of the calls are key.
func Count(calls []string, key string) int {
	n := 0
	for _, c := range calls {
		if c == key {
			n++
		}
	}
	return n
}

// Index is the position of the first call that is key, or -1.
func Index(calls []string, key string) int {
	return slices.Index(calls, key)
}
