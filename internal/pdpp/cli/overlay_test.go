package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The kustomization fields the overlay check reads.
type (
	kustomizeImage struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
		Digest  string `yaml:"digest"`
	}
	kustomizeFile struct {
		Resources          []string `yaml:"resources"`
		ConfigMapGenerator []struct {
			Name     string   `yaml:"name"`
			Behavior string   `yaml:"behavior"`
			Literals []string `yaml:"literals"`
		} `yaml:"configMapGenerator"`
		Images []kustomizeImage `yaml:"images"`
	}
)

// splitImage splits an image reference into the name kustomize matches
// images entries on and the tag or digest after it (":v1", "@sha256:…").
func splitImage(ref string) (name, suffix string) {
	if i := strings.Index(ref, "@"); i >= 0 {
		return ref[:i], ref[i:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i:]
	}
	return ref, ""
}

// applyImages does what kustomize's images field does to one container
// image: the entry whose name is the image's name sets its new name, tag or
// digest. matched says whether any entry applied.
func applyImages(ref string, images []kustomizeImage) (out string, matched bool) {
	name, suffix := splitImage(ref)
	for _, im := range images {
		if im.Name != name {
			continue
		}
		if im.NewName != "" {
			name = im.NewName
		}
		switch {
		case im.Digest != "":
			suffix = "@" + im.Digest
		case im.NewTag != "":
			suffix = ":" + im.NewTag
		}
		return name + suffix, true
	}
	return ref, false
}

// documentedOverlay returns the overlay kustomization docs/deploy.md shows
// (the YAML block that starts with the comment naming its file), parsed and
// as text, and the whole page.
func documentedOverlay(t *testing.T) (k kustomizeFile, text, page string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# (overlays/[^\n]*kustomization\\.yaml)\n.*?)```").FindSubmatch(raw)
	if m == nil {
		t.Fatal("docs/deploy.md shows no overlay kustomization (a yaml block starting with # overlays/…/kustomization.yaml)")
	}
	if err := yaml.Unmarshal(m[1], &k); err != nil {
		t.Fatalf("the documented %s: %v", m[2], err)
	}
	return k, string(m[1]), string(raw)
}

// TestDocumentedOverlayRetargetsTheBase: the overlay docs/deploy.md tells
// operators to write renames the image the base renders (kustomize matches
// an overlay's images entry against the base's output, after the base's own
// rename), replaces the base's ConfigMap rather than clashing with it, and
// the page names the Kubernetes version the manifests need.
func TestDocumentedOverlayRetargetsTheBase(t *testing.T) {
	overlay, overlayText, page := documentedOverlay(t)
	var base kustomizeFile
	raw, err := os.ReadFile(filepath.Join(kubeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &base); err != nil {
		t.Fatal(err)
	}
	_, objs := readKustomize(t)
	containers := objs["Deployment"].Spec.Template.Spec.Containers
	if len(containers) == 0 {
		t.Fatal("the base Deployment has no container")
	}

	t.Run("image", func(t *testing.T) {
		if len(overlay.Images) == 0 {
			t.Fatal("the documented overlay sets no image")
		}
		for _, c := range containers {
			rendered, _ := applyImages(c.Image, base.Images)
			final, matched := applyImages(rendered, overlay.Images)
			if !matched {
				name, _ := splitImage(rendered)
				t.Errorf("the overlay's images name %q; the base renders container %s as %s, so the name must be %q (kustomize would leave %s)",
					overlay.Images[0].Name, c.Name, rendered, name, rendered)
				continue
			}
			if final == rendered {
				t.Errorf("the overlay leaves container %s at the base's image %s", c.Name, rendered)
			}
		}
	})

	// Where kubectl is installed, its kustomize renders the documented
	// overlay over a copy of the base and must agree with applyImages.
	t.Run("kubectl kustomize", func(t *testing.T) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("kubectl is not installed; the image subtest checks the same by itself")
		}
		dir := t.TempDir()
		if err := os.CopyFS(filepath.Join(dir, "base"), os.DirFS(kubeDir)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "overlays", "prod"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "overlays", "prod", "kustomization.yaml"), []byte(overlayText), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, "kustomize", filepath.Join(dir, "overlays", "prod")).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize: %v", err)
		}
		for _, c := range containers {
			rendered, _ := applyImages(c.Image, base.Images)
			want, _ := applyImages(rendered, overlay.Images)
			if !strings.Contains(string(out), "image: "+want+"\n") {
				t.Errorf("kubectl kustomize does not render image %s:\n%s", want, out)
			}
		}
		for _, g := range base.ConfigMapGenerator {
			for _, l := range g.Literals {
				if k := strings.SplitN(l, "=", 2)[0]; !strings.Contains(string(out), "  "+k+": ") {
					t.Errorf("kubectl kustomize drops the base's %s:\n%s", k, out)
				}
			}
		}
	})

	t.Run("config map", func(t *testing.T) {
		baseMaps := map[string]bool{}
		for _, g := range base.ConfigMapGenerator {
			baseMaps[g.Name] = true
		}
		for _, g := range overlay.ConfigMapGenerator {
			if !baseMaps[g.Name] {
				t.Errorf("the overlay generates ConfigMap %q, which the Deployment does not read", g.Name)
			}
			if g.Behavior != "replace" && g.Behavior != "merge" {
				t.Errorf("the overlay's ConfigMap %q has behavior %q: kustomize refuses a second ConfigMap of the base's name unless it replaces or merges", g.Name, g.Behavior)
			}
			// What the pods get: every key of the base survives (replace
			// would drop those the overlay does not repeat).
			keys := map[string]bool{}
			for _, l := range g.Literals {
				keys[strings.SplitN(l, "=", 2)[0]] = true
			}
			for _, b := range base.ConfigMapGenerator {
				if b.Name != g.Name {
					continue
				}
				for _, l := range b.Literals {
					if k := strings.SplitN(l, "=", 2)[0]; g.Behavior == "replace" && !keys[k] {
						t.Errorf("the overlay's behavior replace drops the base's %s from ConfigMap %q; merge, or repeat it", k, g.Name)
					}
				}
			}
		}
	})

	t.Run("minimum Kubernetes version", func(t *testing.T) {
		for _, c := range containers {
			if ps := c.Lifecycle.PreStop; ps != nil && ps.Sleep != nil && !strings.Contains(page, "Kubernetes 1.30 or newer") {
				t.Errorf("container %s uses the preStop sleep action, which needs Kubernetes 1.30 or newer, and docs/deploy.md does not say so", c.Name)
			}
		}
	})
}

func TestApplyImages(t *testing.T) {
	cases := []struct {
		ref     string
		images  []kustomizeImage
		want    string
		matched bool
	}{
		{"pdpp-mcp", []kustomizeImage{{Name: "pdpp-mcp", NewName: "ghcr.io/example/pdpp-mcp", NewTag: "latest"}}, "ghcr.io/example/pdpp-mcp:latest", true},
		{"ghcr.io/example/pdpp-mcp:latest", []kustomizeImage{{Name: "pdpp-mcp", NewName: "ghcr.io/you/pdpp-mcp", NewTag: "v1"}}, "ghcr.io/example/pdpp-mcp:latest", false},
		{"ghcr.io/example/pdpp-mcp:latest", []kustomizeImage{{Name: "ghcr.io/example/pdpp-mcp", NewName: "ghcr.io/you/pdpp-mcp", NewTag: "v1"}}, "ghcr.io/you/pdpp-mcp:v1", true},
		{"localhost:5000/pdpp-mcp", []kustomizeImage{{Name: "localhost:5000/pdpp-mcp", NewTag: "v2"}}, "localhost:5000/pdpp-mcp:v2", true},
		{"pdpp-mcp:v1", []kustomizeImage{{Name: "pdpp-mcp", Digest: "sha256:abc"}}, "pdpp-mcp@sha256:abc", true},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			got, matched := applyImages(tc.ref, tc.images)
			if got != tc.want || matched != tc.matched {
				t.Errorf("applyImages(%q) = %q, %v; want %q, %v", tc.ref, got, matched, tc.want, tc.matched)
			}
		})
	}
}
