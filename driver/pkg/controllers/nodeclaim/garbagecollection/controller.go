// Package garbagecollection deletes the API's nodes that no NodeClaim claims: a create the API
// committed whose answer never reached Karpenter (a dropped connection, a driver restart) and whose
// NodeClaim was deleted before it got its providerID leaves a server that Karpenter's own
// controllers never see, since they act only on NodeClaims. It is the driver's counterpart of the
// AWS provider's pkg/controllers/nodeclaim/garbagecollection and the community Hetzner providers'
// instance garbage collectors (docs/karpenter.md, "Leaked servers").
package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/awslabs/operatorpkg/reconciler"
	"github.com/awslabs/operatorpkg/singleton"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/metrics"
	"nodefleet.dev/driver/pkg/nodefleetapi"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/events"
)

// DefaultGrace is how old an unclaimed node must be before it is deleted. A node's NodeClaim exists
// before its create is sent, so the grace only has to outlast a launch (a create's 10 s timeout,
// Karpenter writing the providerID, its cache catching up) with a wide margin; it stays well under
// the hour Hetzner bills a server for at least.
const DefaultGrace = 5 * time.Minute

// maxInterval is how often the collector runs at most apart, as upstream's collectors do; a grace
// shorter than that (tests) runs it every grace instead.
const maxInterval = 2 * time.Minute

// statusTerminating is the API's status of a node being deleted (docs/design.md §5.3).
const statusTerminating = "TERMINATING"

// nodeClassLabelKey is the label Karpenter puts on every NodeClaim of a NodefleetNodeClass, and so
// (the API keeps a create's labels) on every node this driver created: nodes created otherwise
// (`nodefleet nodes create`, another client) lack it and are never collected.
var nodeClassLabelKey = karpv1.NodeClassLabelKey(schema.GroupKind{Group: apis.Group, Kind: "NodefleetNodeClass"})

// GarbageCollectedReason is the reason of the Event published on the NodeClass a collected node
// was listed through.
const GarbageCollectedReason = "GarbageCollected"

type Controller struct {
	kubeClient  client.Client
	connections *apiclient.Connections
	recorder    events.Recorder
	now         func() time.Time
	grace       time.Duration
}

// NewController collects nodes unclaimed for longer than grace (DefaultGrace when not positive);
// recorder publishes a GarbageCollected Event per node collected, now is the clock (Karpenter's
// operator clock, a fake one in tests).
func NewController(kubeClient client.Client, connections *apiclient.Connections, recorder events.Recorder, now func() time.Time, grace time.Duration) *Controller {
	if grace <= 0 {
		grace = DefaultGrace
	}
	return &Controller{kubeClient: kubeClient, connections: connections, recorder: recorder, now: now, grace: grace}
}

func (c *Controller) Name() string { return "instance.garbagecollection" }

// Interval is how long the collector waits between two runs.
func (c *Controller) Interval() time.Duration { return min(maxInterval, c.grace) }

// listed is a node of the API with the NodeClass and connection it was listed through.
type listed struct {
	node       nodefleetapi.Node
	nodeClass  *v1alpha1.NodefleetNodeClass
	connection *apiclient.Connection
}

func (c *Controller) Reconcile(ctx context.Context) (reconciler.Result, error) {
	// The API's nodes are listed before the NodeClaims, as upstream does: a node in the list was
	// committed after its NodeClaim was created, so the NodeClaim list that follows holds it.
	nodes, err := c.listNodes(ctx)
	if err != nil {
		return reconciler.Result{}, err
	}
	if len(nodes) == 0 {
		return reconciler.Result{RequeueAfter: c.Interval()}, nil
	}
	claimed, err := c.claimed(ctx)
	if err != nil {
		return reconciler.Result{}, err
	}
	kubeNodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, kubeNodes); err != nil {
		return reconciler.Result{}, err
	}
	var errs []error
	for _, candidate := range nodes {
		if !c.collectable(ctx, candidate.node, claimed, kubeNodes.Items) {
			continue
		}
		errs = append(errs, c.collect(ctx, candidate, kubeNodes.Items))
	}
	// One node the API refuses to delete is logged and retried at the next run; the others are
	// collected meanwhile, so the cadence does not turn into an error backoff.
	if err := errors.Join(errs...); err != nil {
		log.FromContext(ctx).Error(err, "garbage collecting unclaimed nodes")
	}
	return reconciler.Result{RequeueAfter: c.Interval()}, nil
}

// listNodes lists the nodes of every NodeClass's cluster and pool once. A cluster that cannot be
// read is logged and skipped: the others are still collected (CloudProvider.List, which
// Karpenter's own collector uses, answers that cluster's NodeClaims as they are instead, since a
// list leaving them out would delete them; here a missing list only means no deletion).
func (c *Controller) listNodes(ctx context.Context) ([]listed, error) {
	nodeClasses := &v1alpha1.NodefleetNodeClassList{}
	if err := c.kubeClient.List(ctx, nodeClasses); err != nil {
		return nil, err
	}
	slices.SortFunc(nodeClasses.Items, func(a, b v1alpha1.NodefleetNodeClass) int { return strings.Compare(a.Name, b.Name) })
	sources := map[string]bool{}
	seen := map[string]bool{}
	var nodes []listed
	for i := range nodeClasses.Items {
		nodeClass := &nodeClasses.Items[i]
		source := strings.Join([]string{nodeClass.Spec.Endpoint, nodeClass.Spec.ClusterID, nodeClass.Spec.Pool}, " ")
		if sources[source] {
			continue
		}
		sources[source] = true
		connection, err := c.connections.For(nodeClass)
		if err == nil {
			var apiNodes []nodefleetapi.Node
			if apiNodes, err = connection.ListNodes(ctx); err == nil {
				for _, node := range apiNodes {
					if !seen[node.ProviderID] {
						seen[node.ProviderID] = true
						nodes = append(nodes, listed{node: node, nodeClass: nodeClass, connection: connection})
					}
				}
				continue
			}
		}
		log.FromContext(ctx).Error(err, "listing the nodes of a NodefleetNodeClass for garbage collection; skipping it this time",
			"NodefleetNodeClass", nodeClass.Name, "cluster", nodeClass.Spec.ClusterID, "pool", nodeClass.Spec.Pool)
	}
	return nodes, nil
}

// claims are what NodeClaims claim: their providerIDs, and the nodeIDs their names stand for (a
// NodeClaim whose create answer was lost has no providerID yet, but Karpenter's retried Create is
// a replay that lands on the node of that nodeID).
type claims struct {
	providerIDs map[string]bool
	nodeIDs     map[string]bool
}

func (c *Controller) claimed(ctx context.Context) (claims, error) {
	nodeClaims := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, nodeClaims); err != nil {
		return claims{}, err
	}
	result := claims{providerIDs: map[string]bool{}, nodeIDs: map[string]bool{}}
	for i := range nodeClaims.Items {
		if providerID := nodeClaims.Items[i].Status.ProviderID; providerID != "" {
			result.providerIDs[providerID] = true
		}
		result.nodeIDs[nodefleetapi.NodeIDFor(nodeClaims.Items[i].Name)] = true
	}
	return result, nil
}

// collectable: created by this driver, not already terminating, claimed by no NodeClaim, older
// than the grace, and not a registered Node still Ready (which only a lost NodeClaim, such as a
// CRD reinstall, could leave: deleting it would drop its pods without a drain).
func (c *Controller) collectable(ctx context.Context, node nodefleetapi.Node, claimed claims, kubeNodes []corev1.Node) bool {
	if node.Labels[nodeClassLabelKey] == "" || string(node.Status) == statusTerminating {
		return false
	}
	if claimed.providerIDs[node.ProviderID] || claimed.nodeIDs[node.NodeID] {
		return false
	}
	created, err := time.Parse(time.RFC3339Nano, node.CreatedAt)
	if err != nil || c.now().Sub(created) < c.grace {
		return false
	}
	if kubeNode := kubeNodeOf(kubeNodes, node.ProviderID); kubeNode != nil && registeredAndReady(kubeNode) {
		log.FromContext(ctx).Info("not garbage collecting an unclaimed node whose registered Node is Ready", "provider-id", node.ProviderID, "Node", kubeNode.Name)
		return false
	}
	return true
}

// collect deletes the node through the API, then its Node object if one registered, as upstream
// does, so the scheduler stops counting on it at once.
func (c *Controller) collect(ctx context.Context, candidate listed, kubeNodes []corev1.Node) error {
	node := candidate.node
	if err := candidate.connection.DeleteNode(ctx, node.NodeID); err != nil && !isGone(err) {
		return err
	}
	log.FromContext(ctx).Info("garbage collected a node no NodeClaim claims", "provider-id", node.ProviderID, "created", node.CreatedAt, "status", string(node.Status))
	metrics.GarbageCollectedNodes.WithLabelValues(candidate.connection.ClusterID).Inc()
	c.recorder.Publish(events.Event{
		InvolvedObject: candidate.nodeClass,
		Type:           corev1.EventTypeNormal,
		Reason:         GarbageCollectedReason,
		Message: fmt.Sprintf("Deleted node %s (%s, created %s, %s): no NodeClaim claimed it for longer than %s",
			node.NodeID, node.ProviderID, node.CreatedAt, node.Status, c.grace),
		DedupeValues: []string{node.ProviderID},
	})
	if kubeNode := kubeNodeOf(kubeNodes, node.ProviderID); kubeNode != nil {
		uid := kubeNode.UID
		if err := c.kubeClient.Delete(ctx, kubeNode, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return err
		}
		log.FromContext(ctx).Info("deleted the Node of a garbage collected node", "provider-id", node.ProviderID, "Node", kubeNode.Name)
	}
	return nil
}

func kubeNodeOf(kubeNodes []corev1.Node, providerID string) *corev1.Node {
	// A node whose server does not exist yet has no hcloud:// providerID (hcloudProviderIds:
	// hcloud): it is no Node's, least of all of the Nodes that have none.
	if providerID == "" {
		return nil
	}
	for i := range kubeNodes {
		if kubeNodes[i].Spec.ProviderID == providerID {
			return &kubeNodes[i]
		}
	}
	return nil
}

func registeredAndReady(node *corev1.Node) bool {
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		return false
	}
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			return condition.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isGone: the API's only "gone" answer (docs/design.md §5.2).
func isGone(err error) bool { return apiclient.CodeOf(err) == "NodeNotFound" }

func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return controllerruntime.NewControllerManagedBy(m).
		Named(c.Name()).
		WatchesRawSource(singleton.Source()).
		Complete(singleton.AsReconciler(c))
}
