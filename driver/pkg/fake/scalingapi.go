// Package fake is an in-memory scaling API on an httptest server, speaking the generated client's
// types: the fake the driver's unit tests run against (docs/design.md §5 behaviour, reduced to what the
// driver observes), with knobs to answer any error.
package fake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"nodefleet.dev/driver/pkg/nodefleetapi"
)

// Request is one request the fake received.
type Request struct {
	Method        string
	Path          string
	Query         string
	Authorization string
	Body          []byte
}

// ErrorAnswer is an error response the fake gives instead of the real answer.
type ErrorAnswer struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	// RawBody, when set, is sent as is (a body that is not the API's error shape).
	RawBody string
}

// ScalingAPI serves one cluster with one or more pools.
type ScalingAPI struct {
	Server *httptest.Server

	mu            sync.Mutex
	cluster       nodefleetapi.Cluster
	tokens        map[string]bool
	instanceTypes []nodefleetapi.InstanceType
	nodes         map[string]*nodefleetapi.Node
	createBodies  map[string]string
	requests      []Request
	errors        map[string]ErrorAnswer
	// CreateStatus is the status of created nodes (PENDING as the real API answers).
	createStatus nodefleetapi.NodeStatus
	// delay holds every answer this long (or until the client gives up).
	delay time.Duration
	// hcloudProviderIDs: created nodes have no providerID until their server exists (HcloudServerCreated).
	hcloudProviderIDs bool
}

// UseHcloudProviderIDs makes created nodes answer as a cluster with hcloudProviderIds: hcloud does:
// no providerID until HcloudServerCreated gives the node its server.
func (a *ScalingAPI) UseHcloudProviderIDs() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hcloudProviderIDs = true
}

// HcloudServerCreated gives a node its server: instanceID serverID and providerID hcloud://<serverID>.
func (a *ScalingAPI) HcloudServerCreated(nodeID string, serverID int) {
	a.UpdateNode(nodeID, func(node *nodefleetapi.Node) {
		instanceID := fmt.Sprint(serverID)
		node.InstanceID = &instanceID
		node.ProviderID = "hcloud://" + instanceID
	})
}

// Delay holds every answer for d (or until the client gives up on the request): a slow or hung API.
func (a *ScalingAPI) Delay(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.delay = d
}

// NewScalingAPI starts a fake API for cluster clusterID accepting token; close it with Close.
func NewScalingAPI(clusterID, token string, pools ...string) *ScalingAPI {
	api := &ScalingAPI{
		cluster:      nodefleetapi.Cluster{Id: clusterID, Kind: "k0s", ProviderIdScheme: "nodefleet"},
		tokens:       map[string]bool{token: true},
		nodes:        map[string]*nodefleetapi.Node{},
		createBodies: map[string]string{},
		errors:       map[string]ErrorAnswer{},
		createStatus: "PENDING",
	}
	for _, pool := range pools {
		api.cluster.Pools = append(api.cluster.Pools, nodefleetapi.Pool{
			Name: pool, Provider: "hcloud", Location: "hel1", ServerTypes: []string{}, TemplateHash: "0000000000000000",
			Labels: map[string]string{}, Taints: []nodefleetapi.Taint{},
		})
	}
	api.Server = httptest.NewServer(http.HandlerFunc(api.serve))
	return api
}

func (a *ScalingAPI) Close() { a.Server.Close() }

// URL is the endpoint a NodeClass names.
func (a *ScalingAPI) URL() string { return a.Server.URL }

// SetTokens replaces the accepted tokens (a rotation on the API's side).
func (a *ScalingAPI) SetTokens(tokens ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens = map[string]bool{}
	for _, token := range tokens {
		a.tokens[token] = true
	}
}

// SetInstanceTypes sets what GET instance-types answers.
func (a *ScalingAPI) SetInstanceTypes(instanceTypes ...nodefleetapi.InstanceType) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.instanceTypes = instanceTypes
}

// FailNext makes every request of the operation (createNode, getNode, listNodes, deleteNode,
// getCluster, listInstanceTypes) answer the error until ClearErrors.
func (a *ScalingAPI) FailNext(operation string, answer ErrorAnswer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errors[operation] = answer
}

func (a *ScalingAPI) ClearErrors() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errors = map[string]ErrorAnswer{}
}

// UpdatePool changes a pool as a changed stack would (its template hash, labels, taints, limits).
func (a *ScalingAPI) UpdatePool(name string, update func(*nodefleetapi.Pool)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.cluster.Pools {
		if a.cluster.Pools[i].Name == name {
			update(&a.cluster.Pools[i])
		}
	}
}

// UpdateNode changes a node as the engine would (status, failure, drift).
func (a *ScalingAPI) UpdateNode(nodeID string, update func(*nodefleetapi.Node)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if node, ok := a.nodes[nodeID]; ok {
		update(node)
	}
}

// Gone removes a node as the API does once its server is confirmed deleted.
func (a *ScalingAPI) Gone(nodeID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.nodes, nodeID)
}

// Node is a copy of a node, or nil.
func (a *ScalingAPI) Node(nodeID string) *nodefleetapi.Node {
	a.mu.Lock()
	defer a.mu.Unlock()
	if node, ok := a.nodes[nodeID]; ok {
		copied := *node
		return &copied
	}
	return nil
}

// Requests are the requests received so far.
func (a *ScalingAPI) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Request(nil), a.requests...)
}

func (a *ScalingAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.requests = append(a.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Authorization: r.Header.Get("Authorization"), Body: body})
	delay := a.delay
	a.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()

	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || !a.tokens[token] {
		writeError(w, ErrorAnswer{Status: 401, Code: "Unauthorized", Message: "missing or unknown token"})
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/clusters/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/api/v1/clusters/") {
		writeError(w, ErrorAnswer{Status: 404, Code: "RouteNotFound", Message: "no such route"})
		return
	}
	if parts[0] != a.cluster.Id {
		writeError(w, ErrorAnswer{Status: 404, Code: "ClusterNotFound", Message: "this service does not serve cluster " + parts[0]})
		return
	}
	operation := operationOf(r.Method, parts[1:])
	if answer, ok := a.errors[operation]; ok {
		writeError(w, answer)
		return
	}
	switch operation {
	case "getCluster":
		writeJSON(w, 200, a.cluster)
	case "listInstanceTypes":
		writeJSON(w, 200, nodefleetapi.InstanceTypeList{InstanceTypes: a.instanceTypes})
	case "createNode":
		a.create(w, body)
	case "listNodes":
		pool := r.URL.Query().Get("pool")
		list := nodefleetapi.NodeList{Nodes: []nodefleetapi.Node{}}
		for _, node := range a.nodes {
			if pool == "" || node.Pool == pool {
				list.Nodes = append(list.Nodes, *node)
			}
		}
		writeJSON(w, 200, list)
	case "getNode":
		if node, ok := a.nodes[parts[2]]; ok {
			writeJSON(w, 200, node)
			return
		}
		writeError(w, ErrorAnswer{Status: 404, Code: "NodeNotFound", Message: "node " + parts[2] + " is gone"})
	case "deleteNode":
		node, ok := a.nodes[parts[2]]
		if !ok {
			writeError(w, ErrorAnswer{Status: 404, Code: "NodeNotFound", Message: "node " + parts[2] + " is gone"})
			return
		}
		node.Status = "TERMINATING"
		writeJSON(w, 202, map[string]string{"nodeID": node.NodeID, "status": "TERMINATING"})
	default:
		writeError(w, ErrorAnswer{Status: 404, Code: "RouteNotFound", Message: "no such route"})
	}
}

func operationOf(method string, rest []string) string {
	switch {
	case len(rest) == 0 && method == http.MethodGet:
		return "getCluster"
	case len(rest) == 1 && rest[0] == "instance-types" && method == http.MethodGet:
		return "listInstanceTypes"
	case len(rest) == 1 && rest[0] == "nodes" && method == http.MethodPost:
		return "createNode"
	case len(rest) == 1 && rest[0] == "nodes" && method == http.MethodGet:
		return "listNodes"
	case len(rest) == 2 && rest[0] == "nodes" && method == http.MethodGet:
		return "getNode"
	case len(rest) == 2 && rest[0] == "nodes" && method == http.MethodDelete:
		return "deleteNode"
	}
	return ""
}

// create answers 201 with a PENDING node, 200 with the same node for a replay (labels may have
// grown), 409 Conflict for the same uniqueID with another body, 404 PoolNotFound.
func (a *ScalingAPI) create(w http.ResponseWriter, body []byte) {
	var request nodefleetapi.CreateNodeJSONRequestBody
	if err := json.Unmarshal(body, &request); err != nil {
		writeError(w, ErrorAnswer{Status: 400, Code: "ValidationError", Message: err.Error()})
		return
	}
	var pool *nodefleetapi.Pool
	for i := range a.cluster.Pools {
		if a.cluster.Pools[i].Name == request.Pool {
			pool = &a.cluster.Pools[i]
		}
	}
	if pool == nil {
		writeError(w, ErrorAnswer{Status: 404, Code: "PoolNotFound", Message: "no autoscaled pool " + request.Pool})
		return
	}
	labels := request.Labels
	request.Labels = nil
	canonical, _ := json.Marshal(request)
	nodeID := nodefleetapi.NodeIDFor(request.UniqueID)
	if earlier, ok := a.createBodies[request.UniqueID]; ok {
		if earlier != string(canonical) {
			writeError(w, ErrorAnswer{Status: 409, Code: "Conflict", Message: "uniqueID " + request.UniqueID + " was created with another body"})
			return
		}
		if node, ok := a.nodes[nodeID]; ok {
			writeJSON(w, 200, node)
			return
		}
		// As the API: the uniqueID of a deleted node is burned.
		writeError(w, ErrorAnswer{Status: 409, Code: "Conflict", Message: "uniqueID " + request.UniqueID + " belonged to node " + nodeID + ", which has been deleted",
			Details: map[string]any{"nodeID": nodeID, "status": "GONE"}})
		return
	}
	var chosen *nodefleetapi.InstanceType
	for i := range a.instanceTypes {
		if a.instanceTypes[i].Pool == request.Pool && (chosen == nil || cheapest(a.instanceTypes[i]) < cheapest(*chosen)) {
			chosen = &a.instanceTypes[i]
		}
	}
	if chosen == nil || len(chosen.Offerings) == 0 {
		writeError(w, ErrorAnswer{Status: 422, Code: "NoCompatibleInstanceType", Message: "no instance type fits"})
		return
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	nodeLabels := map[string]string{
		"node.kubernetes.io/instance-type": chosen.Name,
		"topology.kubernetes.io/zone":      chosen.Offerings[0].Zone,
		"topology.kubernetes.io/region":    chosen.Region,
		"kubernetes.io/arch":               string(chosen.Arch),
		"kubernetes.io/os":                 string(chosen.Os),
		"karpenter.sh/capacity-type":       "on-demand",
		"nodefleet.io/pool":                request.Pool,
	}
	if labels != nil {
		for key, value := range *labels {
			nodeLabels[key] = value
		}
	}
	node := &nodefleetapi.Node{
		NodeID:       nodeID,
		ProviderID:   fmt.Sprintf("%s:///%s/%s", a.cluster.ProviderIdScheme, a.cluster.Id, nodeID),
		Status:       a.createStatus,
		Pool:         request.Pool,
		InstanceType: chosen.Name,
		Zone:         chosen.Offerings[0].Zone,
		Capacity:     chosen.Capacity,
		Allocatable:  chosen.Capacity,
		ImageID:      "ubuntu-24.04",
		Labels:       nodeLabels,
		Taints:       []nodefleetapi.Taint{},
		CreatedAt:    now,
		UpdatedAt:    now,
	}
	if a.hcloudProviderIDs {
		node.ProviderID = ""
	}
	a.nodes[nodeID] = node
	a.createBodies[request.UniqueID] = string(canonical)
	writeJSON(w, 201, node)
}

func cheapest(instanceType nodefleetapi.InstanceType) float32 {
	lowest := float32(1e9)
	for _, offering := range instanceType.Offerings {
		if offering.Available && offering.Price < lowest {
			lowest = offering.Price
		}
	}
	return lowest
}

func writeJSON(w http.ResponseWriter, status int, value any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(value)
}

func writeError(w http.ResponseWriter, answer ErrorAnswer) {
	if answer.RawBody != "" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(answer.Status)
		_, _ = io.WriteString(w, answer.RawBody)
		return
	}
	body := map[string]any{"code": answer.Code, "message": answer.Message}
	if answer.Details != nil {
		body["details"] = answer.Details
	}
	writeJSON(w, answer.Status, map[string]any{"error": body})
}
