package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/serve"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// decodeStrict reads a one-document manifest into v: an unknown or
// misspelt field, a duplicate key or a value of the wrong type fails, and
// apiVersion and kind must be the ones given.
func decodeStrict(t *testing.T, path, apiVersion, kind string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "\n---") {
		t.Fatalf("%s: one document per file", path)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s does not decode strictly into %T: %v", path, v, err)
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &tm); err != nil {
		t.Fatal(err)
	}
	if tm.APIVersion != apiVersion || tm.Kind != kind {
		t.Fatalf("%s is %s %s, want %s %s", path, tm.APIVersion, tm.Kind, apiVersion, kind)
	}
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	var d appsv1.Deployment
	err := yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 2\n"), &d)
	if err == nil || !strings.Contains(err.Error(), `unknown field "replica"`) {
		t.Errorf("a misspelt field decodes: %v", err)
	}
}

func TestManifests(t *testing.T) {
	var dep appsv1.Deployment
	var svc corev1.Service
	var hpa autoscalingv2.HorizontalPodAutoscaler
	decodeStrict(t, "deployment.yaml", "apps/v1", "Deployment", &dep)
	decodeStrict(t, "service.yaml", "v1", "Service", &svc)
	decodeStrict(t, "hpa.yaml", "autoscaling/v2", "HorizontalPodAutoscaler", &hpa)

	// The Deployment selects its own pods.
	pod := dep.Spec.Template.Labels
	if !subset(dep.Spec.Selector.MatchLabels, pod) || len(dep.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("Deployment selector %v does not select its pods %v", dep.Spec.Selector.MatchLabels, pod)
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(dep.Spec.Template.Spec.Containers))
	}
	c := dep.Spec.Template.Spec.Containers[0]

	// The container listens where its port, its probes and the Service say.
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("container args %q: want attnx serve", c.Args)
	}
	addr := flagValue(c.Args, "--addr")
	if addr != fmt.Sprintf(":%d", serve.DefaultPort) {
		t.Errorf("--addr %q, want :%d (every interface, the server's default port)", addr, serve.DefaultPort)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != serve.DefaultPort {
		t.Errorf("container port http = %d, want %d", ports["http"], serve.DefaultPort)
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, serve.PathReady}, {"liveness", c.LivenessProbe, serve.PathHealth}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", pr.name)
			continue
		}
		g := pr.probe.HTTPGet
		if g.Path != pr.path || resolvePort(g.Port, ports) != serve.DefaultPort {
			t.Errorf("%s probe GET %s on port %s (= %d); want %s on %d", pr.name, g.Path, g.Port.String(), resolvePort(g.Port, ports), pr.path, serve.DefaultPort)
		}
	}
	if !subset(svc.Spec.Selector, pod) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the pods %v", svc.Spec.Selector, pod)
	}
	if len(svc.Spec.Ports) != 1 || resolvePort(svc.Spec.Ports[0].TargetPort, ports) != serve.DefaultPort {
		t.Errorf("Service ports %+v: want one, targeting the pods' port %d", svc.Spec.Ports, serve.DefaultPort)
	}

	// Shutdown fits in the grace period: drain, then requests in flight.
	drain := durationFlag(t, c.Args, "--drain-delay", 0)
	shut := durationFlag(t, c.Args, "--shutdown-timeout", serve.DefaultShutdownTimeout)
	grace := time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if drain+shut >= grace {
		t.Errorf("--drain-delay %s + --shutdown-timeout %s do not fit in terminationGracePeriodSeconds %s", drain, shut, grace)
	}

	// Prometheus scrapes the metrics where the server serves them, and the
	// Go heap's soft limit lies under the container's memory limit.
	ann := dep.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/path"] != serve.PathMetrics || ann["prometheus.io/port"] != strconv.Itoa(serve.DefaultPort) {
		t.Errorf("pod annotations %v: want prometheus.io/scrape true, path %s, port %d", ann, serve.PathMetrics, serve.DefaultPort)
	}
	var memLimit string
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			memLimit = e.Value
		}
	}
	limit := c.Resources.Limits.Memory()
	if q, err := resource.ParseQuantity(strings.TrimSuffix(memLimit, "B")); err != nil || limit.IsZero() || q.Cmp(*limit) >= 0 || q.Value() < serve.DefaultMaxMemory {
		t.Errorf("GOMEMLIMIT %q (%v), memory limit %v: want a limit under the container's and above --max-memory's %d bytes", memLimit, err, limit, serve.DefaultMaxMemory)
	}

	// Non-root, as the image's user.
	sc := dep.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod security context %+v: want runAsNonRoot and a non-zero runAsUser", sc)
	} else if user := staticUser(t); user != strconv.FormatInt(*sc.RunAsUser, 10) {
		t.Errorf("pod runs as %d, Dockerfile.static's image as %q", *sc.RunAsUser, user)
	}
	// The image is Dockerfile.static's, the one the README recommends.
	if img := c.Image; img != "attnx:static" {
		t.Errorf("the Deployment runs image %q, want attnx:static (Dockerfile.static)", img)
	}

	// The autoscaler scales this Deployment.
	ref := hpa.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != dep.Name {
		t.Errorf("HPA scales %s %s %q, want apps/v1 Deployment %q", ref.APIVersion, ref.Kind, ref.Name, dep.Name)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 1 || *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas || len(hpa.Spec.Metrics) == 0 {
		t.Errorf("HPA replicas %v..%d, %d metrics", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas, len(hpa.Spec.Metrics))
	}
	if c.Resources.Requests.Cpu().IsZero() {
		t.Error("the container requests no CPU: the HPA's CPU utilisation has nothing to measure against")
	}
}

// TestDockerfile checks the image against the server and the repository:
// the port it exposes and serves on, a non-root user, and the same ONNX
// Runtime version and checksums as scripts/install-deps.sh.
func TestDockerfile(t *testing.T) {
	df := readDockerfile(t)
	if !slices.Contains(df["EXPOSE"], strconv.Itoa(serve.DefaultPort)) {
		t.Errorf("EXPOSE %q, want %d", df["EXPOSE"], serve.DefaultPort)
	}
	var cmd []string
	if len(df["CMD"]) != 1 || json.Unmarshal([]byte(df["CMD"][0]), &cmd) != nil {
		t.Fatalf("CMD %q: want one exec-form (JSON) CMD", df["CMD"])
	}
	if len(cmd) == 0 || cmd[0] != "serve" || flagValue(cmd, "--addr") != fmt.Sprintf(":%d", serve.DefaultPort) {
		t.Errorf("CMD %q: want serve ... --addr :%d", cmd, serve.DefaultPort)
	}
	if len(df["FROM"]) < 2 {
		t.Errorf("%d FROM lines: want a multi-stage build", len(df["FROM"]))
	}
	if u := dockerfileUser(t); u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q: want a non-root user", u)
	}
	deps := shellAssignments(t, "../scripts/install-deps.sh")
	args := map[string]string{}
	for _, a := range df["ARG"] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	for _, k := range []string{"ORT_VERSION", "ORT_TGZ_SHA256", "ORT_LIB_SHA256", "ORT_LIB_SHA256_ARM64"} {
		if deps[k] == "" || args[k] != deps[k] {
			t.Errorf("Dockerfile ARG %s=%q, scripts/install-deps.sh %s=%q: want the same", k, args[k], k, deps[k])
		}
	}
	if n := strings.Count(strings.Join(df["RUN"], "\n"), "sha256sum -c"); n < 2 {
		t.Errorf("%d sha256 checks in the Dockerfile, want 2 (the package and the library)", n)
	}
}

// readDockerfile returns ../Dockerfile's instructions by keyword, each with
// its arguments (continuation lines joined).
func readDockerfile(t *testing.T) map[string][]string { return readDockerfileAt(t, "../Dockerfile") }

// readDockerfileAt is readDockerfile for the Dockerfile at path.
func readDockerfileAt(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	var cur string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		cur += " " + strings.TrimSuffix(line, "\\")
		if strings.HasSuffix(line, "\\") {
			continue
		}
		kw, rest, _ := strings.Cut(strings.TrimSpace(cur), " ")
		out[strings.ToUpper(kw)] = append(out[strings.ToUpper(kw)], strings.TrimSpace(rest))
		cur = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dockerfileUser returns the user of the image's last USER instruction,
// without the group.
func dockerfileUser(t *testing.T) string {
	users := readDockerfile(t)["USER"]
	if len(users) == 0 {
		return ""
	}
	u, _, _ := strings.Cut(users[len(users)-1], ":")
	return u
}

// staticUser is dockerfileUser of Dockerfile.static.
func staticUser(t *testing.T) string {
	users := readDockerfileAt(t, "../Dockerfile.static")["USER"]
	if len(users) == 0 {
		return ""
	}
	u, _, _ := strings.Cut(users[len(users)-1], ":")
	return u
}

var assignment = regexp.MustCompile(`^([A-Z_0-9]+)=([^\s$]+)$`)

// shellAssignments returns the constant assignments NAME=value of a shell
// script.
func shellAssignments(t *testing.T, path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := assignment.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			out[m[1]] = m[2]
		}
	}
	return out
}

// flagValue returns the value after flag in args (or of flag=value).
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func durationFlag(t *testing.T, args []string, flag string, def time.Duration) time.Duration {
	v := flagValue(args, flag)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s %q: %v", flag, v, err)
	}
	return d
}

// resolvePort turns a port given by number or by the container port's name
// into a number (0 when unknown).
func resolvePort(p intstr.IntOrString, named map[string]int32) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	return named[p.StrVal]
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
