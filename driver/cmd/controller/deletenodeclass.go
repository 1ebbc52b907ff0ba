package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/awslabs/operatorpkg/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
)

// deleteNodeClassCommand is the argument that runs deleteNodeClass instead of the controller: the
// chart's pre-delete hook (templates/uninstall-hook.yaml) runs it, so `helm uninstall` removes the
// chart's NodeClass, and with it every node it launched, while the driver still runs.
const deleteNodeClassCommand = "delete-nodeclass"

// deletionPoll is how often deleteNodeClass looks whether the NodeClass is gone.
const deletionPoll = 5 * time.Second

// runDeleteNodeClass is `nodefleet-karpenter delete-nodeclass NAME`, with the in-cluster
// ServiceAccount or KUBECONFIG.
func runDeleteNodeClass(args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: nodefleet-karpenter %s NAME", deleteNodeClassCommand)
	}
	config, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	kubeClient, err := client.New(config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	return deleteNodeClass(context.Background(), kubeClient, args[0], deletionPoll, out)
}

// deleteNodeClass deletes the NodefleetNodeClass and waits until it is gone: its finalizer holds it
// until the driver has had Karpenter drain and delete every node of it (printing why it waits, the
// Ready condition's message, whenever that changes). It never returns before, so what deletes the
// driver afterwards (helm uninstall) cannot strand a node.
func deleteNodeClass(ctx context.Context, kubeClient client.Client, name string, poll time.Duration, out io.Writer) error {
	key := client.ObjectKey{Name: name}
	if err := kubeClient.Delete(ctx, &v1alpha1.NodefleetNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(out, "NodefleetNodeClass %s does not exist\n", name)
			return nil
		}
		return fmt.Errorf("deleting NodefleetNodeClass %s: %w", name, err)
	}
	fmt.Fprintf(out, "deleted NodefleetNodeClass %s; waiting until its nodes are gone\n", name)
	said := ""
	for {
		nodeClass := &v1alpha1.NodefleetNodeClass{}
		if err := kubeClient.Get(ctx, key, nodeClass); err != nil {
			if apierrors.IsNotFound(err) {
				fmt.Fprintf(out, "NodefleetNodeClass %s is gone\n", name)
				return nil
			}
			fmt.Fprintf(out, "reading NodefleetNodeClass %s: %v\n", name, err)
		} else if ready := nodeClass.StatusConditions().Get(status.ConditionReady); ready != nil && ready.Message != said {
			said = ready.Message
			fmt.Fprintln(out, said)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
