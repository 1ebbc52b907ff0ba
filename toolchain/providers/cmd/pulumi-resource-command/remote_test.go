package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

const sshdPath = "/usr/sbin/sshd"

// testSSHD is a real OpenSSH server on a loopback port, run as this user with its own config and
// keys in a temporary directory (it changes nothing on the host): one host key of each type.
type testSSHD struct {
	port       int
	privateKey string
	hostKeys   map[string]string // key type (ssh-keygen -t) → its public key line
}

func startSSHD(t *testing.T, acceptEnv string) testSSHD {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		t.Skipf("%s not installed (Debian: apt-get install openssh-server)", sshdPath)
	}
	dir := t.TempDir()
	keygen := func(kind, name string) string {
		path := filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", kind, "-N", "", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen -t %s: %v: %s", kind, err, out)
		}
		return path
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	s := testSSHD{hostKeys: map[string]string{}}
	config := []string{"ListenAddress 127.0.0.1", "StrictModes no", "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password"}
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		path := keygen(kind, "host_"+kind)
		s.hostKeys[kind] = strings.TrimSpace(read(path + ".pub"))
		config = append(config, "HostKey "+path)
	}
	client := keygen("ed25519", "client")
	s.privateKey = read(client)
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, []byte(read(client+".pub")), 0o600); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = listener.Addr().(*net.TCPAddr).Port
	_ = listener.Close()
	config = append(config, fmt.Sprintf("Port %d", s.port), "AuthorizedKeysFile "+authorized, "PidFile "+filepath.Join(dir, "sshd.pid"), "AcceptEnv "+acceptEnv)
	configPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(configPath, []byte(strings.Join(config, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// sshd's privilege separation directory (the package's service unit creates it at boot).
		_ = os.MkdirAll("/run/sshd", 0o755)
	}
	sshd := exec.Command(sshdPath, "-D", "-e", "-f", configPath)
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sshd.Process.Kill(); _ = sshd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))); err == nil {
			_ = conn.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatal("sshd did not listen")
		}
	}
}

// runOn runs script on the test sshd pinned to hostKey, with one dial.
func (s testSSHD) runOn(t *testing.T, hostKey, script string, env environment) (string, error) {
	t.Helper()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	conn := resource.PropertyMap{
		"host":           plain("127.0.0.1"),
		"port":           resource.NewNumberProperty(float64(s.port)),
		"user":           plain(me.Username),
		"privateKey":     secret(s.privateKey),
		"hostKey":        plain(hostKey),
		"dialErrorLimit": resource.NewNumberProperty(0),
	}
	out := newOutput(func(string) {}, false, false)
	err = remoteRunner{}.run(context.Background(), resource.PropertyMap{"connection": resource.NewObjectProperty(conn)}, script, false, env, out)
	return out.combined(), err
}

// A pinned key limits the negotiation to its type, as upstream's HostKeyAlgorithms does. Without it
// (the old double), the server presented its ECDSA key first and a pinned ed25519 or RSA key failed
// with "host key mismatch". A pinned RSA key offers only ssh-rsa, which OpenSSH 8.8+ refuses.
func TestPinnedHostKeyNegotiatesItsOwnType(t *testing.T) {
	s := startSSHD(t, "NODEFLEET_*")
	for _, kind := range []string{"ed25519", "ecdsa"} {
		out, err := s.runOn(t, s.hostKeys[kind], "echo ok", environment{})
		if err != nil || out != "ok\n" {
			t.Errorf("pinned %s key: %q, %v", kind, out, err)
		}
	}
	_, err := s.runOn(t, s.hostKeys["rsa"], "echo ok", environment{})
	if err == nil || !strings.Contains(err.Error(), "no common algorithm for host key") {
		t.Errorf("pinned RSA key against OpenSSH's defaults: want upstream's failure to agree on ssh-rsa, got %v", err)
	}
	_, err = s.runOn(t, strings.Replace(s.hostKeys["ed25519"], "AAAA", "AAAB", 1), "echo ok", environment{})
	if err == nil {
		t.Errorf("a pinned key that cannot be read connected")
	}
	// Without a pin any host key is accepted (upstream's InsecureIgnoreHostKey): the first read of a new server.
	if out, err := s.runOn(t, "", "echo ok", environment{}); err != nil || out != "ok\n" {
		t.Errorf("unpinned: %q, %v", out, err)
	}
}

// As upstream: an `environment` variable the server refuses fails the run; a refused previous
// output is a warning and the script runs (the old double dropped both silently).
func TestRefusedEnvironmentFailsButRefusedPreviousOutputOnlyWarns(t *testing.T) {
	s := startSSHD(t, "NODEFLEET_*")
	key := s.hostKeys["ed25519"]
	out, err := s.runOn(t, key, `echo "$NODEFLEET_A"`, environment{variables: map[string]string{"NODEFLEET_A": "accepted"}})
	if err != nil || out != "accepted\n" {
		t.Fatalf("an accepted variable: %q, %v", out, err)
	}
	if _, err := s.runOn(t, key, "true", environment{variables: map[string]string{"OTHER": "x"}}); err == nil || !strings.Contains(err.Error(), `could not set environment variable "OTHER"`) {
		t.Fatalf("a refused variable: %v", err)
	}
	out, err = s.runOn(t, key, `echo "[$PULUMI_COMMAND_STDOUT]"`, environment{previousOutput: map[string]string{"PULUMI_COMMAND_STDOUT": "old"}})
	if err != nil || out != "[]\n" {
		t.Fatalf("a refused previous output: %q, %v", out, err)
	}
}
