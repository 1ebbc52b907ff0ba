package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/retry"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// remoteRunner runs a Command's script on `connection.host` over SSH.
type remoteRunner struct{}

func (remoteRunner) check(inputs resource.PropertyMap) []*pulumirpc.CheckFailure {
	if v := inputs["connection"]; v.ContainsUnknowns() {
		return nil
	}
	conn := nativeprovider.Object(inputs, "connection")
	if conn == nil {
		return []*pulumirpc.CheckFailure{nativeprovider.Failure("connection", "is required: an object with at least `host`")}
	}
	var failures []*pulumirpc.CheckFailure
	if nativeprovider.String(conn, "host") == "" {
		failures = append(failures, nativeprovider.Failure("connection.host", "is required"))
	}
	if nativeprovider.Has(conn, "proxy") {
		failures = append(failures, nativeprovider.Failure("connection.proxy", "is not supported by nodefleet's command provider"))
	}
	if port := conn["port"]; port.IsNumber() && (port.NumberValue() < 1 || port.NumberValue() > 65535) {
		failures = append(failures, nativeprovider.Failure("connection.port", "must be between 1 and 65535"))
	}
	if limit := conn["dialErrorLimit"]; limit.IsNumber() && limit.NumberValue() < -1 {
		failures = append(failures, nativeprovider.Failure("connection.dialErrorLimit", "must be -1 (no limit) or more"))
	}
	// 0 is upstream's "no maximum" (ssh's zero Timeout).
	if timeout := conn["perDialTimeout"]; timeout.IsNumber() && timeout.NumberValue() < 0 {
		failures = append(failures, nativeprovider.Failure("connection.perDialTimeout", "must be 0 (no limit) or more seconds"))
	}
	return failures
}

// connection is the `connection` input with upstream's defaults (user root, port 22, 10 dial errors, 15 s per dial).
type connection struct {
	host, user, password, privateKey, privateKeyPassword, agentSocketPath, hostKey string
	port, dialErrorLimit, perDialTimeout                                           int
}

func connectionOf(inputs resource.PropertyMap) connection {
	m := nativeprovider.Object(inputs, "connection")
	c := connection{
		host:               nativeprovider.String(m, "host"),
		user:               nativeprovider.String(m, "user"),
		password:           nativeprovider.String(m, "password"),
		privateKey:         nativeprovider.String(m, "privateKey"),
		privateKeyPassword: nativeprovider.String(m, "privateKeyPassword"),
		agentSocketPath:    nativeprovider.String(m, "agentSocketPath"),
		hostKey:            nativeprovider.String(m, "hostKey"),
		port:               intOr(m, "port", 22),
		dialErrorLimit:     intOr(m, "dialErrorLimit", 10),
		perDialTimeout:     intOr(m, "perDialTimeout", 15),
	}
	if c.user == "" {
		c.user = "root"
	}
	if c.agentSocketPath == "" {
		c.agentSocketPath = os.Getenv("SSH_AUTH_SOCK")
	}
	return c
}

// intOr is the input's number, or fallback when it is absent (0 is a value: no limit, for example).
func intOr(m resource.PropertyMap, key string, fallback int) int {
	if !nativeprovider.Has(m, key) {
		return fallback
	}
	return int(nativeprovider.Number(m, key))
}

// clientConfig authenticates with the private key, the password and the agent given, and checks the
// server's key against `hostKey` when one is given (any key is accepted without it, as upstream does).
// A pinned key also limits the negotiation to its own type, as upstream's does: a server with several
// host keys would otherwise present the one the client prefers (ECDSA) and fail the pin. The type
// is the key's format, so a pinned RSA key offers only `ssh-rsa` (SHA-1), which OpenSSH 8.8 and
// later refuse by default: such a pin fails upstream, and here too.
// The returned function closes the agent's socket, when one was opened.
func (c connection) clientConfig() (*ssh.ClientConfig, func(), error) {
	config := &ssh.ClientConfig{User: c.user, HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: time.Duration(c.perDialTimeout) * time.Second}
	if c.hostKey != "" {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(c.hostKey))
		if err != nil {
			// Never fall back to an unverified connection: a key that cannot be read pins nothing.
			return nil, nil, fmt.Errorf("connection.hostKey: not an SSH public key (%v)", err)
		}
		config.HostKeyCallback = ssh.FixedHostKey(key)
		config.HostKeyAlgorithms = []string{key.Type()}
	}
	if c.privateKey != "" {
		var signer ssh.Signer
		var err error
		if c.privateKeyPassword != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(c.privateKey), []byte(c.privateKeyPassword))
		} else {
			signer, err = ssh.ParsePrivateKey([]byte(c.privateKey))
		}
		if err != nil {
			return nil, nil, errors.New("connection.privateKey: not a usable private key (wrong format or passphrase)")
		}
		config.Auth = append(config.Auth, ssh.PublicKeys(signer))
	}
	if c.password != "" {
		password := c.password
		config.Auth = append(config.Auth, ssh.Password(password), ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
			answers := make([]string, len(questions))
			for i := range answers {
				answers[i] = password
			}
			return answers, nil
		}))
	}
	closeAgent := func() {}
	if c.agentSocketPath != "" {
		conn, err := net.Dial("unix", c.agentSocketPath)
		if err != nil {
			return nil, nil, fmt.Errorf("connection.agentSocketPath: %v", err)
		}
		closeAgent = func() { _ = conn.Close() }
		config.Auth = append(config.Auth, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
	}
	return config, closeAgent, nil
}

// dial connects, retrying any failed dial (a server still booting, its sshd not settled) up to
// dialErrorLimit times (-1: no limit) with the SDK's retry backoff, each retry shown as a status
// line, as upstream does.
func (c connection) dial(ctx context.Context, config *ssh.ClientConfig) (*ssh.Client, error) {
	address := net.JoinHostPort(c.host, strconv.Itoa(c.port))
	var client *ssh.Client
	_, _, err := retry.Until(ctx, retry.Acceptor{
		Accept: func(try int, _ time.Duration) (bool, any, error) {
			var err error
			if client, err = ssh.Dial("tcp", address, config); err == nil {
				return true, nil, nil
			}
			if c.dialErrorLimit >= 0 && try+1 > c.dialErrorLimit {
				return true, nil, fmt.Errorf("connecting to %s as %s: %w", address, c.user, err)
			}
			limit := "inf"
			if c.dialErrorLimit >= 0 {
				limit = strconv.Itoa(c.dialErrorLimit)
			}
			nativeprovider.LogStatus(ctx, fmt.Sprintf("Dial %d/%s failed: retrying", try+1, limit))
			return false, nil, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return client, nil
}

// run sends the script as the session's command: over the encrypted channel, never in an argument
// list on this machine (on the server, sshd starts the user's shell with it, as upstream's does).
func (remoteRunner) run(ctx context.Context, inputs resource.PropertyMap, script string, _ bool, env environment, out *output) error {
	c := connectionOf(inputs)
	config, closeAgent, err := c.clientConfig()
	if err != nil {
		return err
	}
	defer closeAgent()
	client, err := c.dial(ctx, config)
	if err != nil {
		return err
	}
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return fmt.Errorf("opening an SSH session on %s: %w", c.host, err)
	}
	defer session.Close()
	if err := setEnvironment(ctx, session, env); err != nil {
		return err
	}
	if stdin := nativeprovider.String(inputs, "stdin"); stdin != "" {
		session.Stdin = strings.NewReader(stdin)
	}
	session.Stdout, session.Stderr = out.stdoutWriter(), out.stderrWriter()
	done := make(chan error, 1)
	go func() { done <- session.Run(script) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = session.Signal(ssh.SIGTERM)
		return ctx.Err()
	}
	if err != nil {
		var exit *ssh.ExitError
		if errors.As(err, &exit) {
			return &scriptError{status: fmt.Sprintf("exited with status %d on %s", exit.ExitStatus(), c.host)}
		}
		return fmt.Errorf("running on %s: %w", c.host, err)
	}
	return nil
}

// setEnvironment sets the script's variables in the session, where sshd accepts them (its AcceptEnv).
// As upstream: a refused `environment` variable fails the run; a refused previous output
// (PULUMI_COMMAND_STDOUT/STDERR) is a warning, and the script runs without it.
func setEnvironment(ctx context.Context, session *ssh.Session, env environment) error {
	for k, v := range env.variables {
		if _, previous := env.previousOutput[k]; previous {
			continue
		}
		if err := session.Setenv(k, v); err != nil {
			return fmt.Errorf("could not set environment variable %q (the SSH server accepts only what its AcceptEnv names): %w", k, err)
		}
	}
	for k, v := range env.previousOutput {
		if err := session.Setenv(k, v); err != nil {
			nativeprovider.Warn(ctx, fmt.Sprintf("could not set %s (the SSH server accepts only what its AcceptEnv names): the script runs without it", k))
		}
	}
	return nil
}
