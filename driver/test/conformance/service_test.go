// Package conformance runs the driver's CloudProvider against the real `nodefleet serve`
// (simulated engine, short boot delay), as Karpenter would call it.
package conformance

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/apiclient"
	"nodefleet.dev/driver/pkg/apis"
	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/cloudprovider"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// The example stack's cluster and autoscaled pool (stacks/Pulumi.example.yaml).
const (
	clusterID = "example"
	pool      = "hel1-burst"
	apiToken  = "conformance-token-0123456789"
	namespace = "karpenter"
)

var listening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// service is one `nodefleet serve` process on a data directory.
type service struct {
	endpoint string
	command  *exec.Cmd
	exited   chan struct{}
	mu       sync.Mutex
	log      strings.Builder
}

func repositoryRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// requireService skips (or fails, where CI requires the toolchain) without node and the built CLI.
func requireService(t *testing.T) (node, cli string) {
	t.Helper()
	cli = filepath.Join(repositoryRoot(t), "bin", "nodefleet.js")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(repositoryRoot(t), "dist", "automation", "cli", "main.js"))
	}
	if err != nil {
		if os.Getenv("NODEFLEET_REQUIRE_TOOLCHAIN") == "1" {
			t.Fatalf("NODEFLEET_REQUIRE_TOOLCHAIN=1 but the nodefleet CLI cannot run: %v", err)
		}
		t.Skipf("needs node and the built CLI (npm ci builds dist/): %v", err)
	}
	return node, cli
}

// startService starts `nodefleet serve --stack example --engine simulated` on dataDir, on a free
// port of 127.0.0.1, and waits until it is ready. It is stopped when the test ends.
func startService(t *testing.T, dataDir string, extraEnv ...string) *service {
	t.Helper()
	return startServiceIn(t, repositoryRoot(t), dataDir, extraEnv...)
}

// startServiceIn is startService for the project in projectDir (its Pulumi.yaml and stacks/).
func startServiceIn(t *testing.T, projectDir, dataDir string, extraEnv ...string) *service {
	t.Helper()
	node, cli := requireService(t)
	command := exec.Command(node, cli, "serve", "--stack", "example", "--engine", "simulated", "--data-dir", dataDir, "--port", "0", "--host", "127.0.0.1")
	command.Dir = projectDir
	command.Env = append(withoutCloudCredentials(os.Environ()),
		"NODEFLEET_API_TOKENS="+clusterID+":"+apiToken,
		"NODEFLEET_SIM_BOOT_DELAY_MS=100",
		"NODEFLEET_BATCH_IDLE_MS=100",
		"NODEFLEET_BATCH_MAX_MS=1000",
	)
	command.Env = append(command.Env, extraEnv...)
	// Its own process group, so stopping it also stops the engine children it started.
	command.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := command.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	command.Stdout = nil
	if err := command.Start(); err != nil {
		t.Fatal(err)
	}
	s := &service{command: command, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stderr)
		scanner.Buffer(make([]byte, 64*1024), 1024*1024)
		for scanner.Scan() {
			line := scanner.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if match := listening.FindStringSubmatch(line); match != nil {
				select {
				case found <- match[1]:
				default:
				}
			}
		}
	}()
	go func() {
		_ = command.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(syscall.SIGTERM) })
	select {
	case s.endpoint = <-found:
	case <-s.exited:
		t.Fatalf("nodefleet serve exited before listening:\n%s", s.output())
	case <-time.After(3 * time.Minute):
		t.Fatalf("nodefleet serve did not listen within 3 minutes:\n%s", s.output())
	}
	s.waitReady(t)
	return s
}

// projectCopy is a project of its own holding the repository's Pulumi.yaml and example stack, whose
// stack file a test may change (the service re-reads the pool templates from it).
func projectCopy(t *testing.T) (dir, stackFile string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "stacks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Pulumi.yaml", filepath.Join("stacks", "Pulumi.example.yaml")} {
		content, err := os.ReadFile(filepath.Join(repositoryRoot(t), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "stacks", "Pulumi.example.yaml")
}

func withoutCloudCredentials(env []string) []string {
	kept := env[:0:0]
	for _, variable := range env {
		if !strings.HasPrefix(variable, "HCLOUD_TOKEN=") && !strings.HasPrefix(variable, "NODEFLEET_API_TOKENS=") && !strings.HasPrefix(variable, "NODEFLEET_SIM_") {
			kept = append(kept, variable)
		}
	}
	return kept
}

func (s *service) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *service) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		response, err := http.Get(s.endpoint + "/readyz")
		if err == nil {
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("nodefleet serve at %s did not become ready:\n%s", s.endpoint, s.output())
}

// stop signals the service's process group and waits for it to exit (SIGKILL after 30 s).
func (s *service) stop(signal syscall.Signal) {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = syscall.Kill(-s.command.Process.Pid, signal)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.command.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// driver is the CloudProvider with a NodeClass naming the service, in a fake Kubernetes client.
type driver struct {
	*cloudprovider.CloudProvider
	// api is the same API without the driver, to watch a node's status.
	api *apiclient.Connection
}

func newDriver(t *testing.T, endpoint string) driver {
	t.Helper()
	nodeClass := &v1alpha1.NodefleetNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.NodefleetNodeClassSpec{
			Endpoint: endpoint, ClusterID: clusterID, Pool: pool,
			TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "nodefleet-token", Namespace: namespace, Key: "token"},
		},
	}
	nodeClass.StatusConditions().SetTrue(status.ConditionReady)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nodefleet-token", Namespace: namespace}, Data: map[string][]byte{"token": []byte(apiToken)}}
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithStatusSubresource(&v1alpha1.NodefleetNodeClass{}).WithObjects(nodeClass, secret).Build()
	connections := apiclient.NewConnections(apiclient.SecretTokens{Reader: kubeClient, Namespace: namespace})
	api, err := connections.For(nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	return driver{CloudProvider: cloudprovider.New(kubeClient, connections, cloudprovider.NewSoldOutOfferings(), nil), api: api}
}

func nodeClaim(name string, requirements ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "burst"}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: apis.Group, Kind: "NodefleetNodeClass", Name: "default"},
			// As Karpenter writes a NodeClaim: its NodePool is a requirement too.
			Requirements: append([]karpv1.NodeSelectorRequirementWithMinValues{requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "burst")}, requirements...),
			Taints:       []corev1.Taint{{Key: "workload", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

func requirement(key string, operator corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: operator, Values: values}
}

// eventually polls check every 250 ms until it answers "" (done) or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if last = check(); last == "" {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("not within %s: %s", timeout, last)
}

// statusOf is the API's status of the node a providerID names.
func (d driver) statusOf(providerID string) string {
	node, err := d.api.GetNode(context.Background(), providerID[strings.LastIndex(providerID, "/")+1:])
	if err != nil {
		return err.Error()
	}
	return string(node.Status)
}

func describe(value any, err error) string { return fmt.Sprintf("%v, %v", value, err) }
