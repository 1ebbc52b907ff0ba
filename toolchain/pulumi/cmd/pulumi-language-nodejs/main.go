// Command pulumi-language-nodejs is nodefleet's own small Node.js language
// host for the Pulumi CLI. Upstream's host lives in a nested Go module that
// the module proxy does not serve, so this one implements just what
// `pulumi up|preview|destroy` of a program directory needs: report the
// provider plugins the program's node_modules declare, and run the program
// through @pulumi/pulumi's own `cmd/run` entry point with the engine's
// monitor address and config.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/shlex"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is set by the toolchain build (-ldflags -X main.version=...).
var version = "0.0.0-dev"

func main() {
	flag.String("tracing", "", "ignored: tracing is not supported by this host")
	flag.String("root", "", "ignored: the program info of each request names its directories")
	flag.Bool("binary", false, "ignored")
	flag.Parse()
	engineAddress := ""
	if flag.NArg() > 0 {
		engineAddress = flag.Arg(0)
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		fmt.Fprintln(os.Stderr, "pulumi-language-nodejs: node is not on PATH")
		os.Exit(1)
	}
	host := &languageHost{nodeBin: nodeBin, engineAddress: engineAddress}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: cannot serve: %v\n", err)
		os.Exit(1)
	}
	// The engine reads the port from our first line of output.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	nodeBin       string
	engineAddress string
}

func (h *languageHost) Handshake(_ context.Context, req *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (h *languageHost) GetRequiredPlugins(_ context.Context, req *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	deps, err := providerPackages(programDirectory(req.GetInfo(), req.GetProgram()))
	if err != nil {
		return nil, err
	}
	plugins := make([]*pulumirpc.PluginDependency, 0, len(deps))
	for _, d := range deps {
		plugins = append(plugins, &pulumirpc.PluginDependency{Name: d.name, Kind: "resource", Version: d.version, Server: d.server})
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

func (h *languageHost) GetRequiredPackages(_ context.Context, req *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	deps, err := providerPackages(programDirectory(req.GetInfo(), ""))
	if err != nil {
		return nil, err
	}
	packages := make([]*pulumirpc.PackageDependency, 0, len(deps))
	for _, d := range deps {
		packages = append(packages, &pulumirpc.PackageDependency{Name: d.name, Kind: "resource", Version: d.version, Server: d.server})
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: packages}, nil
}

func (h *languageHost) InstallDependencies(req *pulumirpc.InstallDependenciesRequest, stream pulumirpc.LanguageRuntime_InstallDependenciesServer) error {
	// Dependencies are installed by `npm ci` in the repository; nothing to do.
	return nil
}

func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	programDir := programDirectory(info, req.GetProgram())
	runScript, err := findUp(programDir, filepath.Join("node_modules", "@pulumi", "pulumi", "cmd", "run"))
	if err != nil {
		return &pulumirpc.RunResponse{Error: "It looks like the Pulumi SDK has not been installed: run npm ci"}, nil
	}
	options, err := runtimeOptions(info)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	args := append([]string{}, options.nodeArgs...)
	args = append(args, runScript, "--monitor", req.GetMonitorAddress())
	appendIf := func(flagName, value string) {
		if value != "" {
			args = append(args, "--"+flagName, value)
		}
	}
	appendIf("engine", h.engineAddress)
	appendIf("organization", req.GetOrganization())
	appendIf("project", req.GetProject())
	appendIf("stack", req.GetStack())
	if info != nil {
		appendIf("root-directory", info.GetRootDirectory())
		// As upstream: the program runs in its program directory (Pulumi.yaml's `main` when that is
		// a directory), not the engine's working directory.
		appendIf("pwd", info.GetProgramDirectory())
	}
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	if req.GetParallel() > 0 {
		appendIf("parallel", fmt.Sprint(req.GetParallel()))
	}
	entry := "."
	if info != nil && info.GetEntryPoint() != "" {
		entry = info.GetEntryPoint()
	}
	args = append(args, entry)
	args = append(args, req.GetArgs()...)

	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("serialising config: %w", err)
	}
	secretKeys, err := json.Marshal(req.GetConfigSecretKeys())
	if err != nil {
		return nil, fmt.Errorf("serialising secret keys: %w", err)
	}
	env := append(os.Environ(),
		"PULUMI_CONFIG="+string(config),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys),
		fmt.Sprintf("PULUMI_NODEJS_TYPESCRIPT=%t", options.typescript),
	)
	if options.tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+options.tsconfig)
	}
	cmd := exec.CommandContext(ctx, h.nodeBin, args...)
	cmd.Dir = programDir
	cmd.Env = env
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			// The program reported its own error through the engine; 32 means "already reported".
			if exitErr.ExitCode() == 32 {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run node: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

type nodeRuntimeOptions struct {
	typescript bool
	tsconfig   string
	nodeArgs   []string
}

// runtimeOptions reads Pulumi.yaml's runtime.options (typescript, tsconfig, nodeargs) as upstream's
// host does (sdk/nodejs/cmd/pulumi-language-nodejs/main.go, v3.248.0): an option of the wrong type
// fails the run instead of being ignored, and nodeargs is split as a shell would (quotes kept together).
func runtimeOptions(info *pulumirpc.ProgramInfo) (nodeRuntimeOptions, error) {
	options := nodeRuntimeOptions{typescript: true}
	if info == nil || info.GetOptions() == nil {
		return options, nil
	}
	fields := info.GetOptions().AsMap()
	if v, ok := fields["typescript"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return options, errors.New("typescript option must be a boolean")
		}
		options.typescript = b
	}
	if v, ok := fields["tsconfig"]; ok {
		path, isString := v.(string)
		if !isString {
			return options, errors.New("tsconfig option must be a string")
		}
		options.tsconfig = path
	}
	if v, ok := fields["nodeargs"]; ok {
		args, isString := v.(string)
		if !isString {
			return options, errors.New("nodeargs option must be a string")
		}
		split, err := shlex.Split(args)
		if err != nil {
			return options, fmt.Errorf("nodeargs option: %w", err)
		}
		options.nodeArgs = split
	}
	return options, nil
}

func programDirectory(info *pulumirpc.ProgramInfo, program string) string {
	if info != nil && info.GetProgramDirectory() != "" {
		return info.GetProgramDirectory()
	}
	if program != "" {
		return program
	}
	wd, _ := os.Getwd()
	return wd
}

// findUp returns the first dir/rel that exists, walking from dir to the root (Node's resolution order).
func findUp(dir, rel string) (string, error) {
	for current := dir; ; current = filepath.Dir(current) {
		candidate := filepath.Join(current, rel)
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
		if filepath.Dir(current) == current {
			return "", fmt.Errorf("%s not found above %s", rel, dir)
		}
	}
}

type providerPackage struct{ name, version, server string }

// providerPackages lists the node_modules packages that declare a Pulumi resource plugin
// ({"pulumi": {"resource": true}} in package.json), as the engine expects them.
func providerPackages(programDir string) ([]providerPackage, error) {
	nodeModules, err := findUp(programDir, "node_modules")
	if err != nil {
		return nil, nil
	}
	var found []providerPackage
	seen := map[string]bool{}
	visit := func(pkgDir string) {
		raw, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
		if err != nil {
			return
		}
		var manifest struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Pulumi  struct {
				Resource bool   `json:"resource"`
				Name     string `json:"name"`
				Version  string `json:"version"`
				Server   string `json:"server"`
			} `json:"pulumi"`
		}
		if json.Unmarshal(raw, &manifest) != nil || !manifest.Pulumi.Resource {
			return
		}
		name := manifest.Pulumi.Name
		if name == "" {
			name = strings.TrimPrefix(strings.TrimPrefix(manifest.Name, "@pulumi/"), "@")
		}
		v := manifest.Pulumi.Version
		if v == "" {
			v = manifest.Version
		}
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		if seen[name+v] {
			return
		}
		seen[name+v] = true
		found = append(found, providerPackage{name: name, version: v, server: manifest.Pulumi.Server})
	}
	entries, err := os.ReadDir(nodeModules)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", nodeModules, err)
	}
	for _, entry := range entries {
		path := filepath.Join(nodeModules, entry.Name())
		if strings.HasPrefix(entry.Name(), "@") {
			scoped, _ := os.ReadDir(path)
			for _, s := range scoped {
				visit(filepath.Join(path, s.Name()))
			}
			continue
		}
		visit(path)
	}
	return found, nil
}
