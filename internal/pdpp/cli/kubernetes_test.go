package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

// The subset of the Kubernetes objects the test checks.
type (
	k8sMeta struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	k8sProbe struct {
		HTTPGet *struct {
			Path string    `yaml:"path"`
			Port yaml.Node `yaml:"port"`
		} `yaml:"httpGet"`
		TimeoutSeconds int `yaml:"timeoutSeconds"`
	}
	k8sContainer struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Args    []string `yaml:"args"`
		EnvFrom []struct {
			ConfigMapRef *struct {
				Name string `yaml:"name"`
			} `yaml:"configMapRef"`
		} `yaml:"envFrom"`
		Env []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		Lifecycle      struct {
			PreStop *struct {
				Sleep *struct {
					Seconds int `yaml:"seconds"`
				} `yaml:"sleep"`
			} `yaml:"preStop"`
		} `yaml:"lifecycle"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			RunAsNonRoot           *bool `yaml:"runAsNonRoot"`
			ReadOnlyRootFilesystem *bool `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
	}
	k8sObject struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   k8sMeta `yaml:"metadata"`
		Spec       struct {
			Replicas *int `yaml:"replicas"`
			Template struct {
				Metadata k8sMeta `yaml:"metadata"`
				Spec     struct {
					TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
					SecurityContext               struct {
						RunAsNonRoot *bool `yaml:"runAsNonRoot"`
						RunAsUser    *int  `yaml:"runAsUser"`
					} `yaml:"securityContext"`
					Containers []k8sContainer `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
			// Service
			Ports []struct {
				Name       string    `yaml:"name"`
				TargetPort yaml.Node `yaml:"targetPort"`
			} `yaml:"ports"`
			// HorizontalPodAutoscaler
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicas *int `yaml:"minReplicas"`
			Metrics     []struct {
				Resource struct {
					Name string `yaml:"name"`
				} `yaml:"resource"`
			} `yaml:"metrics"`
			// PodDisruptionBudget
			MinAvailable yaml.Node `yaml:"minAvailable"`
			// NetworkPolicy
			PodSelector k8sSelector `yaml:"podSelector"`
			PolicyTypes []string    `yaml:"policyTypes"`
			Ingress     []struct {
				From []struct {
					NamespaceSelector *k8sSelector `yaml:"namespaceSelector"`
					PodSelector       *k8sSelector `yaml:"podSelector"`
					IPBlock           yaml.Node    `yaml:"ipBlock"`
				} `yaml:"from"`
				Ports []struct {
					Port     yaml.Node `yaml:"port"`
					Protocol string    `yaml:"protocol"`
				} `yaml:"ports"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	k8sSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	kustomization struct {
		Resources          []string `yaml:"resources"`
		ConfigMapGenerator []struct {
			Name     string   `yaml:"name"`
			Literals []string `yaml:"literals"`
		} `yaml:"configMapGenerator"`
		Images []struct {
			Name string `yaml:"name"`
		} `yaml:"images"`
	}
)

const kubeDir = repoRoot + "/deploy/kubernetes"

// readKustomize loads the kustomize base: the kustomization and its
// resources, by kind.
func readKustomize(t *testing.T) (kustomization, map[string]k8sObject) {
	t.Helper()
	var k kustomization
	raw, err := os.ReadFile(filepath.Join(kubeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	objs := map[string]k8sObject{}
	for _, res := range k.Resources {
		raw, err := os.ReadFile(filepath.Join(kubeDir, res))
		if err != nil {
			t.Fatalf("resource %s: %v", res, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", res, err)
			}
			if _, dup := objs[o.Kind]; dup {
				t.Fatalf("two %s objects", o.Kind)
			}
			objs[o.Kind] = o
		}
	}
	return k, objs
}

// portOf resolves a probe or target port (a name or a number) against the
// container's ports.
func portOf(t *testing.T, c k8sContainer, n yaml.Node) int {
	t.Helper()
	if p, err := strconv.Atoi(n.Value); err == nil {
		return p
	}
	for _, p := range c.Ports {
		if p.Name == n.Value {
			return p.ContainerPort
		}
	}
	t.Fatalf("port %q is not a container port", n.Value)
	return 0
}

func namedPort(c k8sContainer, name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func listenPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func TestKubernetesManifestsMatchTheServer(t *testing.T) {
	k, objs := readKustomize(t)
	for _, kind := range []string{"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy"} {
		if _, ok := objs[kind]; !ok {
			t.Fatalf("the kustomize base has no %s", kind)
		}
	}
	dep := objs["Deployment"]
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// The container's environment: the generated ConfigMap plus literal env.
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		for _, g := range k.ConfigMapGenerator {
			if ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == g.Name {
				for _, l := range g.Literals {
					key, val, _ := strings.Cut(l, "=")
					env[key] = val
				}
			}
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}

	// The args parse with the server's own flag set.
	if len(c.Args) == 0 || c.Args[0] != "http" {
		t.Fatalf("container args %q do not run the http command", c.Args)
	}
	var h httpFlags
	var stderr bytes.Buffer
	f := cmdkit.NewFlagSet(Env{Stderr: &stderr, Getenv: func(k string) string { return env[k] }}, "pdpp-mcp-server", "http", "")
	if err := h.register(f); err != nil {
		t.Fatal(err)
	}
	if err := f.ParseNoArgs(c.Args[1:]); err != nil {
		t.Fatalf("container args %q: %v\n%s", c.Args, err, stderr.String())
	}
	if err := h.requireProvider(); err != nil {
		t.Fatalf("provider: %v", err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := h.config(log)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if _, err := cfg.Effective(); err != nil {
		t.Fatalf("the manifest's configuration is refused: %v", err)
	}

	t.Run("workload", func(t *testing.T) {
		checks := []struct {
			name string
			ok   bool
		}{
			{"3 replicas", dep.Spec.Replicas != nil && *dep.Spec.Replicas == 3},
			{"image named for kustomize", slices.ContainsFunc(k.Images, func(i struct {
				Name string `yaml:"name"`
			}) bool {
				return i.Name == c.Image
			})},
			{"pod runs as non-root", pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot && pod.SecurityContext.RunAsUser != nil && *pod.SecurityContext.RunAsUser != 0},
			{"container runs as non-root", c.SecurityContext.RunAsNonRoot != nil && *c.SecurityContext.RunAsNonRoot},
			{"read-only root filesystem", c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem},
			{"cpu and memory requests and memory limit", c.Resources.Requests["cpu"] != "" && c.Resources.Requests["memory"] != "" && c.Resources.Limits["memory"] != ""},
			{"public base URL set", cfg.PublicBaseURL != ""},
			{"allowed origins set", len(cfg.AllowedOrigins) > 0},
			{"listens beyond loopback", !strings.HasPrefix(h.Listen, "127.") && !strings.HasPrefix(h.Listen, "localhost")},
			{"admin listener on, under its own name", h.AdminListen != "" && h.MetricsListen == ""},
			{"metrics annotation names the admin port", dep.Spec.Template.Metadata.Annotations["prometheus.io/port"] == strconv.Itoa(namedPort(c, "admin"))},
		}
		for _, chk := range checks {
			if !chk.ok {
				t.Errorf("Deployment: %s", chk.name)
			}
		}
	})

	t.Run("ports", func(t *testing.T) {
		if got, want := listenPort(t, h.Listen), namedPort(c, "http"); got != want {
			t.Errorf("--listen port %d, container port http %d", got, want)
		}
		if got, want := listenPort(t, h.AdminListen), namedPort(c, "admin"); got != want {
			t.Errorf("--admin-listen port %d, container port admin %d", got, want)
		}
		for _, p := range objs["Service"].Spec.Ports {
			if portOf(t, c, p.TargetPort) == 0 {
				t.Errorf("Service port %s targets nothing", p.Name)
			}
		}
		for name, pr := range map[string]*k8sProbe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if pr == nil || pr.HTTPGet == nil {
				t.Fatalf("no %s probe", name)
			}
			// On the admin listener: probes on /mcp's port would compete
			// with strangers for its connections.
			if got := portOf(t, c, pr.HTTPGet.Port); got != listenPort(t, h.AdminListen) {
				t.Errorf("%s probe on port %d, the admin listener is on %d", name, got, listenPort(t, h.AdminListen))
			}
		}
		if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("probes %s / %s, want /readyz / /healthz", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
		}
		if time.Duration(c.ReadinessProbe.TimeoutSeconds)*time.Second <= transport.DefaultReadyTimeout {
			t.Errorf("readiness timeout %ds does not exceed the server's own upstream check (%s)", c.ReadinessProbe.TimeoutSeconds, transport.DefaultReadyTimeout)
		}
	})

	t.Run("memory fits the limit", func(t *testing.T) {
		checkMemoryFits(t, "Deployment", c.Resources.Limits["memory"], env["GOMEMLIMIT"], &h.common, int64(h.MaxConcurrentRequests), h.MaxBodyBytes, int64(h.MaxConns))
	})

	t.Run("grace period exceeds the drain", func(t *testing.T) {
		if pod.TerminationGracePeriodSeconds == nil {
			t.Fatal("no terminationGracePeriodSeconds")
		}
		grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
		var preStop time.Duration
		if ps := c.Lifecycle.PreStop; ps != nil && ps.Sleep != nil {
			preStop = time.Duration(ps.Sleep.Seconds) * time.Second
		}
		eff, err := cfg.Effective()
		if err != nil {
			t.Fatal(err)
		}
		drain := eff.DrainDelay + eff.ShutdownTimeout
		if grace <= preStop+drain {
			t.Errorf("terminationGracePeriodSeconds %s <= preStop %s + drain delay %s + shutdown grace %s", grace, preStop, eff.DrainDelay, eff.ShutdownTimeout)
		}
	})

	t.Run("autoscaling and disruption", func(t *testing.T) {
		hpa, pdb := objs["HorizontalPodAutoscaler"], objs["PodDisruptionBudget"]
		if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != dep.Metadata.Name {
			t.Errorf("the autoscaler targets %s/%s", hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name)
		}
		if len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource.Name != "cpu" {
			t.Errorf("the autoscaler does not scale on CPU")
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < *dep.Spec.Replicas {
			t.Errorf("autoscaler minReplicas below the Deployment's replicas")
		}
		if pdb.Spec.MinAvailable.Kind == 0 {
			t.Fatal("the disruption budget sets no minAvailable")
		}
		if n, err := strconv.Atoi(pdb.Spec.MinAvailable.Value); err == nil && n >= *dep.Spec.Replicas {
			t.Errorf("minAvailable %d blocks every voluntary eviction of %d replicas", n, *dep.Spec.Replicas)
		}
	})

	// Only the ingress namespace reaches /mcp, and only a labelled
	// monitoring namespace reaches /metrics, which has no authentication.
	t.Run("network policy", func(t *testing.T) {
		np := objs["NetworkPolicy"]
		for k, v := range np.Spec.PodSelector.MatchLabels {
			if dep.Spec.Template.Metadata.Labels[k] != v {
				t.Errorf("the policy selects %s=%s, which the server's pods do not carry", k, v)
			}
		}
		if len(np.Spec.PodSelector.MatchLabels) == 0 || !slices.Contains(np.Spec.PolicyTypes, "Ingress") {
			t.Fatalf("the policy does not restrict ingress to the server's pods: %+v", np.Spec)
		}
		admits := map[int]map[string]string{} // port -> the namespace labels admitted to it
		for i, rule := range np.Spec.Ingress {
			if len(rule.From) != 1 || rule.From[0].NamespaceSelector == nil || len(rule.From[0].NamespaceSelector.MatchLabels) == 0 ||
				rule.From[0].PodSelector != nil || !rule.From[0].IPBlock.IsZero() {
				t.Fatalf("rule %d admits more than one labelled namespace: %+v", i, rule.From)
			}
			if len(rule.Ports) != 1 || rule.Ports[0].Protocol != "TCP" {
				t.Fatalf("rule %d admits %d ports, want one TCP port", i, len(rule.Ports))
			}
			port := portOf(t, c, rule.Ports[0].Port)
			if admits[port] != nil {
				t.Fatalf("port %d admitted by two rules", port)
			}
			admits[port] = rule.From[0].NamespaceSelector.MatchLabels
		}
		mcpFrom, metricsFrom := admits[listenPort(t, h.Listen)], admits[listenPort(t, h.AdminListen)]
		if len(admits) != 2 || mcpFrom == nil || metricsFrom == nil {
			t.Fatalf("the policy admits ports %v, want exactly /mcp (%d) and the admin listener (%d)", admits, listenPort(t, h.Listen), listenPort(t, h.AdminListen))
		}
		if mcpFrom["kubernetes.io/metadata.name"] == "" {
			t.Errorf("/mcp is admitted from %v, not from a named ingress namespace", mcpFrom)
		}
		if fmt.Sprint(metricsFrom) == fmt.Sprint(mcpFrom) {
			t.Errorf("/metrics is admitted from the ingress namespace %v", mcpFrom)
		}
	})

	// The probe and metrics paths are the ones the server serves: run it with
	// the manifest's flags on loopback ports against the demo RS.
	t.Run("served paths", func(t *testing.T) {
		h.Listen, h.AdminListen, h.providerURL = "127.0.0.1:0", "127.0.0.1:0", demoRS(t)
		h.PublicBaseURL = "" // the manifest's public host does not resolve here
		addr, maddr := serveForTest(t, context.Background(), log, &h)
		if maddr == nil {
			t.Fatal("no admin listener")
		}
		for _, u := range []string{
			"http://" + maddr.String() + c.ReadinessProbe.HTTPGet.Path,
			"http://" + maddr.String() + c.LivenessProbe.HTTPGet.Path,
			// Kept on /mcp's listener for probes configured before the
			// admin listener (they compete there with strangers).
			"http://" + addr.String() + "/healthz",
			"http://" + maddr.String() + dep.Spec.Template.Metadata.Annotations["prometheus.io/path"],
		} {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %s", u, resp.Status)
			}
		}
	})
}
