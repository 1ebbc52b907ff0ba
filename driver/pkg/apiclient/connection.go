package apiclient

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/metrics"
	"nodefleet.dev/driver/pkg/nodefleetapi"
)

// DefaultRequestTimeout bounds one API call. The API answers every call, creates included, before
// any server exists, so a call slower than this means the API is in trouble: failing fast keeps a
// dead API from holding Karpenter's provisioner, which works on all NodePools in one loop.
const DefaultRequestTimeout = 10 * time.Second

// serviceKeepAlive is how long the scaling API keeps an idle connection open
// (keepAliveMs in automation/api/httpTimeouts.ts).
const serviceKeepAlive = 5 * time.Second

// idleConnTimeout closes the driver's idle connections before the service does: a POST written on a
// connection the service is closing fails, and Go does not retry a request that is not idempotent.
const idleConnTimeout = serviceKeepAlive - time.Second

// Connections hands out a Connection per NodeClass, sharing one HTTP client (and so its kept-alive
// connections) per endpoint and CA bundle.
type Connections struct {
	// RequestTimeout bounds one API call (DefaultRequestTimeout when zero); set it before the first
	// For.
	RequestTimeout time.Duration

	tokens TokenSource

	mu          sync.Mutex
	httpClients map[string]*http.Client
}

func NewConnections(tokens TokenSource) *Connections {
	return &Connections{tokens: tokens, httpClients: map[string]*http.Client{}}
}

// Connection is the scaling API of one NodeClass's cluster and pool.
type Connection struct {
	ClusterID string
	Pool      string
	api       *nodefleetapi.ClientWithResponses
}

// For connects to the API the NodeClass names. The token is read on every request, never kept.
func (c *Connections) For(nodeClass *v1alpha1.NodefleetNodeClass) (*Connection, error) {
	httpClient, err := c.httpClient(nodeClass.Spec.CABundle)
	if err != nil {
		return nil, fmt.Errorf("NodefleetNodeClass %s spec.caBundle: %w", nodeClass.Name, err)
	}
	nodeClass = nodeClass.DeepCopy()
	authorize := func(ctx context.Context, request *http.Request) error {
		token, err := c.tokens.Token(ctx, nodeClass)
		if err != nil {
			metrics.AuthErrors.WithLabelValues(nodeClass.Spec.ClusterID, metrics.AuthTokenUnavailable).Inc()
			return err
		}
		request.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	api, err := nodefleetapi.NewClientWithResponses(strings.TrimRight(nodeClass.Spec.Endpoint, "/"),
		nodefleetapi.WithHTTPClient(httpClient), nodefleetapi.WithRequestEditorFn(authorize))
	if err != nil {
		return nil, fmt.Errorf("NodefleetNodeClass %s spec.endpoint: %w", nodeClass.Name, err)
	}
	return &Connection{ClusterID: nodeClass.Spec.ClusterID, Pool: nodeClass.Spec.Pool, api: api}, nil
}

func (c *Connections) httpClient(caBundle []byte) (*http.Client, error) {
	digest := sha256.Sum256(caBundle)
	key := hex.EncodeToString(digest[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if existing, ok := c.httpClients[key]; ok {
		return existing, nil
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.IdleConnTimeout = idleConnTimeout
	if len(caBundle) > 0 {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	timeout := c.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	created := &http.Client{Transport: instrumentedTransport{next: transport}, Timeout: timeout}
	c.httpClients[key] = created
	return created, nil
}

// Cluster is GET /clusters/{id}: the cluster and its autoscaled pools.
func (c *Connection) Cluster(ctx context.Context) (*nodefleetapi.Cluster, error) {
	response, err := c.api.GetClusterWithResponse(withCall(ctx, routeCluster, c.ClusterID), c.ClusterID)
	if err != nil {
		return nil, err
	}
	if response.JSON200 == nil {
		return nil, errorOf(response.HTTPResponse, response.Body)
	}
	return response.JSON200, nil
}

// InstanceTypes is GET /clusters/{id}/instance-types, narrowed to this connection's pool.
func (c *Connection) InstanceTypes(ctx context.Context) ([]nodefleetapi.InstanceType, error) {
	response, err := c.api.ListInstanceTypesWithResponse(withCall(ctx, routeInstanceTypes, c.ClusterID), c.ClusterID)
	if err != nil {
		return nil, err
	}
	if response.JSON200 == nil {
		return nil, errorOf(response.HTTPResponse, response.Body)
	}
	var ofPool []nodefleetapi.InstanceType
	for _, instanceType := range response.JSON200.InstanceTypes {
		if instanceType.Pool == c.Pool {
			ofPool = append(ofPool, instanceType)
		}
	}
	return ofPool, nil
}

// CreateNode is POST /clusters/{id}/nodes; a replay of the same body answers the same node.
func (c *Connection) CreateNode(ctx context.Context, body nodefleetapi.CreateNodeJSONRequestBody) (*nodefleetapi.Node, error) {
	response, err := c.api.CreateNodeWithResponse(withCall(ctx, routeNodes, c.ClusterID), c.ClusterID, &nodefleetapi.CreateNodeParams{}, body)
	if err != nil {
		return nil, err
	}
	switch {
	case response.JSON201 != nil:
		return response.JSON201, nil
	case response.JSON200 != nil:
		return response.JSON200, nil
	}
	return nil, errorOf(response.HTTPResponse, response.Body)
}

// GetNode is GET /clusters/{id}/nodes/{nodeID}; 404 NodeNotFound once the server is gone.
func (c *Connection) GetNode(ctx context.Context, nodeID string) (*nodefleetapi.Node, error) {
	response, err := c.api.GetNodeWithResponse(withCall(ctx, routeNode, c.ClusterID), c.ClusterID, nodeID)
	if err != nil {
		return nil, err
	}
	if response.JSON200 == nil {
		return nil, errorOf(response.HTTPResponse, response.Body)
	}
	return response.JSON200, nil
}

// ListNodes is GET /clusters/{id}/nodes?pool=: the pool's nodes not yet confirmed gone.
func (c *Connection) ListNodes(ctx context.Context) ([]nodefleetapi.Node, error) {
	pool := c.Pool
	response, err := c.api.ListNodesWithResponse(withCall(ctx, routeNodes, c.ClusterID), c.ClusterID, &nodefleetapi.ListNodesParams{Pool: &pool})
	if err != nil {
		return nil, err
	}
	if response.JSON200 == nil {
		return nil, errorOf(response.HTTPResponse, response.Body)
	}
	return response.JSON200.Nodes, nil
}

// DeleteNode is DELETE /clusters/{id}/nodes/{nodeID}: accepted (or already terminating), or 404
// NodeNotFound once gone.
func (c *Connection) DeleteNode(ctx context.Context, nodeID string) error {
	response, err := c.api.DeleteNodeWithResponse(withCall(ctx, routeNode, c.ClusterID), c.ClusterID, nodeID)
	if err != nil {
		return err
	}
	if response.JSON202 == nil {
		return errorOf(response.HTTPResponse, response.Body)
	}
	return nil
}
