// Package cloudprovider is Karpenter's CloudProvider for nodefleet: a thin client of the scaling
// API, with no cloud credentials of its own (docs/design.md §9).
package cloudprovider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/awslabs/operatorpkg/status"
	"github.com/patrickmn/go-cache"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/metrics"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

// ClusterPoolAnnotationKey records on a NodeClaim the `<clusterID>/<pool>` its node was created
// in; a NodeClass later naming another pool or cluster drifts it.
const ClusterPoolAnnotationKey = apis.Group + "/cluster-pool"

// NodeClassDrift is the drift reason of a NodeClaim whose NodeClass now names another pool.
const NodeClassDrift cloudprovider.DriftReason = "NodeClassDrift"

// instanceTypesTTL is how long the API's instance types are reused: Karpenter asks for them in
// every scheduling simulation, while their availability changes only with launches and limits.
const instanceTypesTTL = 15 * time.Second

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

type CloudProvider struct {
	kubeClient    client.Client
	connections   *apiclient.Connections
	soldOut       *SoldOutOfferings
	instanceTypes *cache.Cache
	source        *instanceTypeSource
	// How long Create waits for an hcloud:// providerID, and how often it asks (awaitProviderID).
	providerIDWait time.Duration
	providerIDPoll time.Duration
	// recorder publishes the OfferingUnavailable Events (unavailable.go); nil publishes none.
	recorder events.Recorder
	// backoffs names each NodeClass one of whose offerings was just marked unavailable, so its
	// OfferingsAvailable condition is re-read at once (BackedOffNodeClasses).
	backoffs chan event.TypedGenericEvent[*v1alpha1.NodefleetNodeClass]
}

// Create's wait for a server id: well inside the launch's own timeouts; a slower server is asked for again by Karpenter's retry.
const (
	defaultProviderIDWait = 20 * time.Second
	defaultProviderIDPoll = time.Second
)

// New is the CloudProvider; recorder publishes its Events (nil for none).
func New(kubeClient client.Client, connections *apiclient.Connections, soldOut *SoldOutOfferings, recorder events.Recorder) *CloudProvider {
	return &CloudProvider{
		kubeClient:     kubeClient,
		connections:    connections,
		soldOut:        soldOut,
		recorder:       recorder,
		instanceTypes:  cache.New(instanceTypesTTL, time.Minute),
		source:         &instanceTypeSource{lastGood: map[string]apiAnswer{}},
		providerIDWait: defaultProviderIDWait,
		providerIDPoll: defaultProviderIDPoll,
		backoffs:       make(chan event.TypedGenericEvent[*v1alpha1.NodefleetNodeClass], backoffQueue),
	}
}

func (c *CloudProvider) Name() string { return "nodefleet" }

func (c *CloudProvider) GetSupportedNodeClasses() []status.Object {
	return []status.Object{&v1alpha1.NodefleetNodeClass{}}
}

// RepairPolicies: a node whose kubelet stopped reporting Ready for 10 minutes is replaced (only
// when Karpenter's NodeRepair feature gate is on).
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 10 * time.Minute},
	}
}

// Create asks the API for a node and answers before any server exists, with the providerID,
// capacity, allocatable, imageID and labels the API already knows.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	nodeClass, err := c.nodeClassOf(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(err)
		}
		return nil, fmt.Errorf("resolving the NodeClaim's NodefleetNodeClass: %w", err)
	}
	if ready := nodeClass.StatusConditions().Get(status.ConditionReady); ready.IsFalse() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("NodefleetNodeClass %s is not ready: %s", nodeClass.Name, ready.Message))
	}
	// The NodeClass status check sees a NodePool edited since only at its next reconcile: the
	// NodeClaim carries its NodePool's taints as they were, so check them here too.
	if uncovered := v1alpha1.UncoveredPoolTaints(nodeClass.Status.PoolTaints, nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints); len(uncovered) > 0 {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf(
			"NodeClaim %s lacks the taints %s that pool %s puts on every node (its NodePool's taints must carry them, or no pending pod it was launched for tolerates the node)",
			nodeClaim.Name, v1alpha1.FormatTaints(uncovered), nodeClass.Spec.Pool))
	}
	connection, err := c.connections.For(nodeClass)
	if err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(err)
	}
	if err := c.checkOfferingsLeft(ctx, nodeClass, connection, nodeClaim); err != nil {
		return nil, err
	}
	request, err := createRequest(nodeClaim, nodeClass.Spec.Pool)
	if err != nil {
		return nil, err
	}
	node, err := connection.CreateNode(ctx, request)
	if err != nil {
		c.rememberSoldOut(ctx, nodeClaim, connection.ClusterID, err)
		return nil, createErrorOf(err)
	}
	if node.ProviderID == "" {
		node = c.awaitProviderID(ctx, connection, node)
	}
	switch string(node.Status) {
	case statusFailed:
		// A replayed create of a node that failed: its uniqueID is burned (the API answers the same
		// FAILED node to every replay). Release it and end the NodeClaim at once, whatever the
		// failure was, so Karpenter launches a new NodeClaim instead of replaying this one until
		// its registration timeout.
		if deleteErr := connection.DeleteNode(ctx, node.NodeID); deleteErr != nil && !isGone(deleteErr) {
			return nil, fmt.Errorf("releasing failed node %s: %w", node.NodeID, deleteErr)
		}
		failure := c.failureError(ctx, nodeClaim, connection.ClusterID, node)
		if cloudprovider.IsInsufficientCapacityError(failure) {
			return nil, failure
		}
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("replayed create of NodeClaim %s: %w", nodeClaim.Name, failure))
	case statusTerminating:
		return nil, cloudprovider.NewCreateError(fmt.Errorf("node %s of NodeClaim %s is terminating", node.NodeID, nodeClaim.Name), "NodeTerminating", "the node of this NodeClaim is being deleted")
	}
	if node.ProviderID == "" {
		// Karpenter retries a Create that errs; the API answers the same node to the replay.
		return nil, fmt.Errorf("node %s of NodeClaim %s has no server yet, so no hcloud:// providerID; retrying", node.NodeID, nodeClaim.Name)
	}
	created, err := toNodeClaim(node)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.NodeID, err)
	}
	created.Annotations = map[string]string{ClusterPoolAnnotationKey: clusterPool(nodeClass)}
	return created, nil
}

// awaitProviderID polls a node whose providerID is `hcloud://<server id>` (hcloudProviderIds:
// hcloud) until its server exists, for at most providerIDWait: Karpenter's Launched condition then
// carries the providerID its Node registers. The last answer read is returned, with or without it.
func (c *CloudProvider) awaitProviderID(ctx context.Context, connection *apiclient.Connection, node *nodefleetapi.Node) *nodefleetapi.Node {
	deadline := time.Now().Add(c.providerIDWait)
	for node.ProviderID == "" && string(node.Status) != statusFailed && string(node.Status) != statusTerminating && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return node
		case <-time.After(c.providerIDPoll):
		}
		read, err := connection.GetNode(ctx, node.NodeID)
		if err != nil {
			return node // the retried Create asks again
		}
		node = read
	}
	return node
}

// refOf is the node a launched NodeClaim names: its providerID's, or for `hcloud://<server id>`
// the node the API made for the NodeClaim (nodefleetapi.NodeIDFor of its name) in its NodeClass's cluster.
func (c *CloudProvider) refOf(ctx context.Context, nodeClaim *karpv1.NodeClaim) (nodeRef, error) {
	ref, err := parseProviderID(nodeClaim.Status.ProviderID)
	if err != nil || ref.ServerID == "" {
		return ref, err
	}
	nodeClass, err := c.nodeClassOf(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return nodeRef{}, fmt.Errorf("NodeClaim %s (%s): resolving its NodefleetNodeClass: %w", nodeClaim.Name, nodeClaim.Status.ProviderID, err)
	}
	ref.ClusterID = nodeClass.Spec.ClusterID
	ref.NodeID = nodefleetapi.NodeIDFor(nodeClaim.Name)
	return ref, nil
}

// checkOfferingsLeft refuses a create at once when every offering the NodeClaim allows is
// unavailable (sold out moments ago, or the pool is at a limit), sparing the API a request.
func (c *CloudProvider) checkOfferingsLeft(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass, connection *apiclient.Connection, nodeClaim *karpv1.NodeClaim) error {
	instanceTypes, err := c.instanceTypesOf(ctx, nodeClass, connection, nodeClaim.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		return nil // the API decides
	}
	requirements := scheduling.NewNodeSelectorRequirementsWithMinValues(nodeClaim.Spec.Requirements...)
	compatible := 0
	for _, instanceType := range instanceTypes {
		if instanceType.Requirements.Intersects(requirements) != nil {
			continue
		}
		offerings := instanceType.Offerings.Compatible(requirements)
		compatible += len(offerings)
		if len(offerings.Available()) > 0 {
			return nil
		}
	}
	if compatible == 0 {
		return nil // nothing fits by our reading; let the API answer NoCompatibleInstanceType itself
	}
	return cloudprovider.NewInsufficientCapacityError(fmt.Errorf("every offering NodeClaim %s allows is unavailable", nodeClaim.Name))
}

// rememberSoldOut marks what an InsufficientCapacity answer names unavailable (sold out, backed
// off after a quota or image failure, or a whole pool backed off), so the next scheduling
// simulation steers elsewhere before the instance types are read again.
func (c *CloudProvider) rememberSoldOut(ctx context.Context, nodeClaim *karpv1.NodeClaim, clusterID string, err error) {
	var apiError *apiclient.Error
	if !errors.As(err, &apiError) || apiError.Code != codeInsufficientCapacity {
		return
	}
	for _, offering := range unavailableOfferings(apiError) {
		c.markUnavailable(ctx, nodeClaim, clusterID, offering[0], offering[1], apiError.Message)
	}
}

// failureError is the error of a node the API could not create: sold out becomes an
// InsufficientCapacityError (and the offering is remembered), anything else a CreateError.
func (c *CloudProvider) failureError(ctx context.Context, nodeClaim *karpv1.NodeClaim, clusterID string, node *nodefleetapi.Node) error {
	code, reason := failureOf(node)
	err := fmt.Errorf("node %s failed: %s", node.NodeID, reason)
	if code == codeInsufficientCapacity {
		c.markUnavailable(ctx, nodeClaim, clusterID, node.InstanceType, node.Zone, reason)
		return cloudprovider.NewInsufficientCapacityError(err)
	}
	return cloudprovider.NewCreateError(err, code, reason)
}

func failureOf(node *nodefleetapi.Node) (code, reason string) {
	code, reason = "CreateFailed", "the API could not create the server"
	if node.FailureCode != nil && conditionReason.MatchString(*node.FailureCode) {
		code = *node.FailureCode
	}
	if node.FailureReason != nil && *node.FailureReason != "" {
		reason = *node.FailureReason
	}
	return code, reason
}

// Delete asks the API to delete the node: nil while it terminates (Karpenter calls again every
// few seconds), NodeClaimNotFoundError once the API confirms it gone.
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	if nodeClaim.Status.ProviderID == "" {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("NodeClaim %s was never launched", nodeClaim.Name))
	}
	ref, err := c.refOf(ctx, nodeClaim)
	if err != nil {
		return err
	}
	connection, err := c.connectionForCluster(ctx, ref.ClusterID, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return err
	}
	if err := connection.DeleteNode(ctx, ref.NodeID); err != nil {
		if isGone(err) {
			return cloudprovider.NewNodeClaimNotFoundError(err)
		}
		return fmt.Errorf("deleting node %s: %w", ref.NodeID, err)
	}
	return nil
}

// Get is the node of a providerID; NodeClaimNotFoundError only once the API confirms it gone.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	ref, err := parseProviderID(providerID)
	if err != nil {
		return nil, err
	}
	if ref.ServerID != "" {
		return c.getByServer(ctx, providerID)
	}
	node, err := c.getNode(ctx, ref, nil)
	if err != nil {
		if isGone(err) {
			return nil, cloudprovider.NewNodeClaimNotFoundError(err)
		}
		return nil, fmt.Errorf("getting node %s: %w", ref.NodeID, err)
	}
	return toNodeClaim(node)
}

// getByServer is the node of an `hcloud://<server id>` providerID, which names no cluster or node:
// found in List, which reads every NodeClass's pool (and keeps the NodeClaims of a cluster it cannot read).
func (c *CloudProvider) getByServer(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	nodeClaims, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, nodeClaim := range nodeClaims {
		if nodeClaim.Status.ProviderID == providerID {
			return nodeClaim, nil
		}
	}
	return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no node of any NodefleetNodeClass's pool has providerID %s", providerID))
}

func (c *CloudProvider) getNode(ctx context.Context, ref nodeRef, nodeClassRef *karpv1.NodeClassReference) (*nodefleetapi.Node, error) {
	connection, err := c.connectionForCluster(ctx, ref.ClusterID, nodeClassRef)
	if err != nil {
		return nil, err
	}
	return connection.GetNode(ctx, ref.NodeID)
}

// List is every node of every NodeClass's pool, read per cluster and pool. A cluster whose nodes
// cannot be read is answered with its NodeClaims as they are: Karpenter's garbage collection deletes
// a launched NodeClaim missing from the list, so leaving them out would delete healthy NodeClaims,
// and failing the whole list would stop garbage collection for every other NodeClass. The failure
// is logged and counted in metrics.ListFailures (docs/karpenter.md, "Outages").
func (c *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	nodeClasses, err := c.nodeClasses(ctx)
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	seen := map[string]bool{}
	unread := map[string]bool{}
	var nodeClaims []*karpv1.NodeClaim
	for _, nodeClass := range nodeClasses {
		source := strings.Join([]string{nodeClass.Spec.Endpoint, nodeClass.Spec.ClusterID, nodeClass.Spec.Pool}, " ")
		if listed[source] {
			continue
		}
		listed[source] = true
		nodes, err := c.listNodes(ctx, nodeClass)
		if err != nil {
			metrics.ListFailures.WithLabelValues(nodeClass.Spec.ClusterID).Inc()
			log.FromContext(ctx).Error(err, "keeping the cluster's NodeClaims as they are", "cluster", nodeClass.Spec.ClusterID)
			unread[nodeClass.Spec.ClusterID] = true
			continue
		}
		for i := range nodes {
			// A node whose server does not exist yet has no hcloud:// providerID: no NodeClaim can name it.
			if nodes[i].ProviderID == "" || seen[nodes[i].ProviderID] {
				continue
			}
			seen[nodes[i].ProviderID] = true
			nodeClaim, err := toNodeClaim(&nodes[i])
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", nodes[i].NodeID, err)
			}
			nodeClaims = append(nodeClaims, nodeClaim)
		}
	}
	if len(unread) > 0 {
		kept, err := c.keptNodeClaims(ctx, unread)
		if err != nil {
			return nil, err
		}
		for _, nodeClaim := range kept {
			if !seen[nodeClaim.Status.ProviderID] {
				seen[nodeClaim.Status.ProviderID] = true
				nodeClaims = append(nodeClaims, nodeClaim)
			}
		}
	}
	return nodeClaims, nil
}

func (c *CloudProvider) listNodes(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) ([]nodefleetapi.Node, error) {
	connection, err := c.connections.For(nodeClass)
	if err != nil {
		return nil, err
	}
	nodes, err := connection.ListNodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of NodefleetNodeClass %s: %w", nodeClass.Name, err)
	}
	return nodes, nil
}

// GetInstanceTypes is every instance type of the NodePool's pool, unavailable ones included.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	nodeClass, err := c.nodeClassOf(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil // the NodePool is not ready either; Karpenter says why
		}
		return nil, err
	}
	connection, err := c.connections.For(nodeClass)
	if err != nil {
		return nil, err
	}
	return c.instanceTypesOf(ctx, nodeClass, connection, nodePool.Name)
}

func (c *CloudProvider) instanceTypesOf(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass, connection *apiclient.Connection, nodePoolName string) ([]*cloudprovider.InstanceType, error) {
	key := strings.Join([]string{nodeClass.Spec.Endpoint, nodeClass.Spec.ClusterID, nodeClass.Spec.Pool}, " ")
	answer, err := c.apiInstanceTypes(ctx, key, nodeClass, connection)
	if err != nil {
		return nil, err
	}
	instanceTypes := make([]*cloudprovider.InstanceType, 0, len(answer.types))
	for _, apiType := range answer.types {
		instanceType, err := toInstanceType(connection.ClusterID, nodePoolName, apiType, answer.asked, c.soldOut)
		if err != nil {
			return nil, err
		}
		instanceTypes = append(instanceTypes, instanceType)
	}
	return instanceTypes, nil
}

// IsDrifted is the API's drift reason (the pool template changed since the node was created), or
// NodeClassDrift when the NodeClass now names another cluster or pool.
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	if nodeClaim.Status.ProviderID == "" {
		return "", nil
	}
	ref, err := c.refOf(ctx, nodeClaim)
	if err != nil {
		return "", err
	}
	if nodeClass, err := c.nodeClassOf(ctx, nodeClaim.Spec.NodeClassRef); err == nil {
		if recorded, ok := nodeClaim.Annotations[ClusterPoolAnnotationKey]; ok && recorded != clusterPool(nodeClass) {
			return NodeClassDrift, nil
		}
	}
	node, err := c.getNode(ctx, ref, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		if isGone(err) {
			return "", nil
		}
		return "", fmt.Errorf("getting node %s: %w", ref.NodeID, err)
	}
	if !node.Drifted {
		return "", nil
	}
	if node.DriftReason != nil && conditionReason.MatchString(*node.DriftReason) {
		return cloudprovider.DriftReason(*node.DriftReason), nil
	}
	return "TemplateDrift", nil
}

// LaunchFailure is why the node of a launched NodeClaim FAILED, as the error Create would have
// returned (nil while the node has not failed); a sold-out failure marks the offering sold out.
func (c *CloudProvider) LaunchFailure(ctx context.Context, nodeClaim *karpv1.NodeClaim) (failure error, err error) {
	ref, err := c.refOf(ctx, nodeClaim)
	if err != nil {
		return nil, err
	}
	node, err := c.getNode(ctx, ref, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		if isGone(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting node %s: %w", ref.NodeID, err)
	}
	if string(node.Status) != statusFailed {
		return nil, nil
	}
	return c.failureError(ctx, nodeClaim, ref.ClusterID, node), nil
}

func clusterPool(nodeClass *v1alpha1.NodefleetNodeClass) string {
	return nodeClass.Spec.ClusterID + "/" + nodeClass.Spec.Pool
}

func (c *CloudProvider) nodeClassOf(ctx context.Context, ref *karpv1.NodeClassReference) (*v1alpha1.NodefleetNodeClass, error) {
	if ref == nil {
		return nil, apierrors.NewNotFound(v1alpha1.SchemeGroupVersion.WithResource("nodefleetnodeclasses").GroupResource(), "")
	}
	nodeClass := &v1alpha1.NodefleetNodeClass{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nodeClass); err != nil {
		return nil, err
	}
	return nodeClass, nil
}

func (c *CloudProvider) nodeClasses(ctx context.Context) ([]*v1alpha1.NodefleetNodeClass, error) {
	list := &v1alpha1.NodefleetNodeClassList{}
	if err := c.kubeClient.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing NodefleetNodeClasses: %w", err)
	}
	nodeClasses := make([]*v1alpha1.NodefleetNodeClass, 0, len(list.Items))
	for i := range list.Items {
		nodeClasses = append(nodeClasses, &list.Items[i])
	}
	slices.SortFunc(nodeClasses, func(a, b *v1alpha1.NodefleetNodeClass) int { return strings.Compare(a.Name, b.Name) })
	return nodeClasses, nil
}

// connectionForCluster reaches the API of a cluster a providerID names: through the NodeClaim's
// own NodeClass when it still names that cluster, else through any NodeClass that does.
func (c *CloudProvider) connectionForCluster(ctx context.Context, clusterID string, ref *karpv1.NodeClassReference) (*apiclient.Connection, error) {
	if ref != nil {
		if nodeClass, err := c.nodeClassOf(ctx, ref); err == nil && nodeClass.Spec.ClusterID == clusterID {
			return c.connections.For(nodeClass)
		}
	}
	nodeClasses, err := c.nodeClasses(ctx)
	if err != nil {
		return nil, err
	}
	for _, nodeClass := range nodeClasses {
		if nodeClass.Spec.ClusterID == clusterID {
			return c.connections.For(nodeClass)
		}
	}
	return nil, fmt.Errorf("no NodefleetNodeClass names cluster %q", clusterID)
}
