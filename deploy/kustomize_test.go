package deploy

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// imageName is the image every manifest runs, Dockerfile.static's tag
// and the one make image's ko tarballs load as; image/kustomization.yaml
// replaces it for a cluster.
const imageName = "attnx:static"

// The Jobs' manifests, each in the folder of its kustomization.
const (
	translateJobFile = "translate/translate-job.yaml"
	mergeJobFile     = "merge/merge-job.yaml"
)

// kustomizations are the folders kubectl apply -k takes.
var kustomizations = []string{".", "translate", "merge", "claims"}

// manifests returns every Kubernetes manifest under deploy/ (not the
// kustomizations themselves).
func manifests(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") && d.Name() != "kustomization.yaml" {
			out = append(out, path)
		}
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("manifests under deploy/: %v %v", out, err)
	}
	return out
}

// containerImages returns the images of every container and init
// container in a decoded object, wherever its pod template is.
func containerImages(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if list, ok := x.([]any); ok && (k == "containers" || k == "initContainers") {
				for _, c := range list {
					if m, ok := c.(map[string]any); ok {
						img, _ := m["image"].(string)
						out = append(out, img)
					}
				}
				continue
			}
			out = append(out, containerImages(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, containerImages(x)...)
		}
	}
	return out
}

// TestImageNames parses every manifest under deploy/: each container runs
// imageName, which is what image/kustomization.yaml's images: entry
// matches and names by default, and what scripts/ko-build.sh tags its
// tarballs (TestKoImage reads the tag in them) and the guide's
// Dockerfile.static build gives.
func TestImageNames(t *testing.T) {
	runs := 0
	for _, path := range manifests(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, img := range containerImages(v) {
			runs++
			if img != imageName {
				t.Errorf("%s runs image %q, want %s (one name across the manifests; image/ sets the registry)", path, img, imageName)
			}
		}
	}
	if runs < 3 {
		t.Errorf("%d containers found in the manifests: want the Deployment's and the two Jobs'", runs)
	}
	var comp struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Images     []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	data, err := os.ReadFile("image/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &comp); err != nil {
		t.Fatalf("image/kustomization.yaml: %v", err)
	}
	name, tag, _ := strings.Cut(imageName, ":")
	if comp.Kind != "Component" || len(comp.Images) != 1 || comp.Images[0].Name != name || comp.Images[0].NewName+":"+comp.Images[0].NewTag != imageName {
		t.Errorf("image/kustomization.yaml: %+v: want a Component whose one images: entry matches %s and names it", comp, name)
	}
	ko, err := os.ReadFile("../scripts/ko-build.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KO_DOCKER_REPO=${KO_DOCKER_REPO:-" + name + "}", `--tags="${KO_TAGS:-` + tag + `}"`, "--bare"} {
		if !bytes.Contains(ko, []byte(want)) {
			t.Errorf("scripts/ko-build.sh lacks %q: its tarballs would not load as %s", want, imageName)
		}
	}
}

// TestClaims decodes the claims strictly: the data claim, which every pod
// of the translate Job writes at once, is ReadWriteMany; the Jobs mount
// the claims by these names; the comments say what permissions a claim
// needs where fsGroup is not applied (NFS).
func TestClaims(t *testing.T) {
	var data, models corev1.PersistentVolumeClaim
	decodeStrict(t, "claims/data.yaml", "v1", "PersistentVolumeClaim", &data)
	decodeStrict(t, "claims/models.yaml", "v1", "PersistentVolumeClaim", &models)
	for _, c := range []corev1.PersistentVolumeClaim{data, models} {
		if !slices.Contains(c.Spec.AccessModes, corev1.ReadWriteMany) || c.Spec.Resources.Requests.Storage().IsZero() {
			t.Errorf("claim %s: access modes %v, size %v: want ReadWriteMany and a size", c.Name, c.Spec.AccessModes, c.Spec.Resources.Requests.Storage())
		}
	}
	var names []string
	for _, f := range []string{translateJobFile, mergeJobFile} {
		raw, _ := os.ReadFile(f)
		var j struct {
			Spec struct {
				Template struct {
					Spec corev1.PodSpec `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &j); err != nil {
			t.Fatal(err)
		}
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				names = append(names, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	slices.Sort(names)
	if names = slices.Compact(names); !slices.Equal(names, []string{data.Name, models.Name}) {
		t.Errorf("the Jobs mount the claims %v, claims/ makes %s and %s", names, data.Name, models.Name)
	}
	comments, _ := os.ReadFile("claims/data.yaml")
	for _, want := range []string{"fsGroup", "NFS", "chown 65532:65532", "chmod 2775"} {
		if !bytes.Contains(comments, []byte(want)) {
			t.Errorf("claims/data.yaml does not say %q: what the claim needs where fsGroup is not applied", want)
		}
	}
	for _, f := range []string{translateJobFile, mergeJobFile} {
		raw, _ := os.ReadFile(f)
		for _, want := range []string{"wait-job.sh", "kubectl delete job"} {
			if !bytes.Contains(raw, []byte(want)) {
				t.Errorf("%s's comments lack %q (wait for complete or failed; delete a finished Job before running it again)", f, want)
			}
		}
	}
}

// kustomize runs kubectl kustomize on dir and returns the images its
// output's containers run.
func kustomize(t *testing.T, kubectl, dir string) []string {
	t.Helper()
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr)
	}
	var images []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("kubectl kustomize %s: %v", dir, err)
		}
		images = append(images, containerImages(v)...)
	}
	return images
}

// TestKustomize builds every kustomization with kubectl kustomize: the
// manifests as they are, and with image/'s entry set to a registry's
// image, which every container then runs (the one place to set it).
// Every manifest under deploy/ is in a kustomization but
// adapter-config.yaml (prometheus-adapter's, applied where it runs).
func TestKustomize(t *testing.T) {
	kubectl := testenv.Command(t, "kubectl", "kubectl")
	listed := map[string]bool{}
	for _, dir := range kustomizations {
		var k struct {
			Resources []string `json:"resources"`
		}
		raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, &k); err != nil {
			t.Fatal(err)
		}
		for _, r := range k.Resources {
			listed[filepath.Join(dir, r)] = true
		}
		for _, img := range kustomize(t, kubectl, dir) {
			if img != imageName {
				t.Errorf("kubectl kustomize %s: image %q, want %s", dir, img, imageName)
			}
		}
	}
	for _, m := range manifests(t) {
		if !listed[m] && m != "adapter-config.yaml" {
			t.Errorf("%s is in no kustomization", m)
		}
	}

	// Set the registry in image/ alone, in a copy of deploy/.
	tmp := t.TempDir()
	if err := os.CopyFS(tmp, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	comp := filepath.Join(tmp, "image", "kustomization.yaml")
	raw, err := os.ReadFile(comp)
	if err != nil {
		t.Fatal(err)
	}
	name, tag, _ := strings.Cut(imageName, ":")
	const want = "registry.example.com/mt/attnx:v1.2.0"
	raw = bytes.Replace(raw, []byte("newName: "+name+"\n"), []byte("newName: registry.example.com/mt/attnx\n"), 1)
	raw = bytes.Replace(raw, []byte("newTag: "+tag+"\n"), []byte("newTag: v1.2.0\n"), 1)
	if err := os.WriteFile(comp, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range kustomizations {
		for _, img := range kustomize(t, kubectl, filepath.Join(tmp, dir)) {
			n++
			if img != want {
				t.Errorf("with image/ set to %s, kubectl kustomize %s runs %q", want, dir, img)
			}
		}
	}
	if n < 3 {
		t.Errorf("%d containers in the kustomizations' output, want 3 or more", n)
	}
}

// TestWaitJob runs wait-job.sh against a stand-in kubectl whose wait for
// one condition returns at once (met) and whose wait for the other never
// does: the script exits with the condition's status (0 complete, 1
// failed) without waiting for the other, and 2 when neither holds.
func TestWaitJob(t *testing.T) {
	sh := testenv.Command(t, "bash", "bash")
	script, err := filepath.Abs("wait-job.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		met  string // the condition kubectl wait finds; "" none: both fail
		code int
		says string
	}{
		{"complete", "complete", 0, "is complete"},
		{"failed", "failed", 1, "failed"},
		{"neither", "", 2, "neither complete nor failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := filepath.Join(dir, "kubectl")
			log := filepath.Join(dir, "calls")
			// The wait for MET returns 0 at once; the other blocks (until
			// killed) while MET is set, and fails at once as a timeout
			// would when it is not.
			body := `#!/usr/bin/env bash
echo "$*" >> "` + log + `"
case "$2" in
--for=condition=$MET) exit 0 ;;
esac
[ -n "$MET" ] && exec sleep 600
echo "error: timed out waiting for the condition on jobs/$4" >&2
exit 1
`
			if err := os.WriteFile(fake, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sh, script, "attnx-translate", "24h", "-n", "mt")
			cmd.Env = append(os.Environ(), "KUBECTL="+fake, "MET="+c.met)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code || !strings.Contains(string(out), c.says) {
				t.Errorf("exit %d, output %q: want %d and %q", code, out, c.code, c.says)
			}
			calls, _ := os.ReadFile(log)
			for _, want := range []string{"wait --for=condition=complete --timeout=24h job/attnx-translate -n mt", "wait --for=condition=failed --timeout=24h job/attnx-translate -n mt"} {
				if !strings.Contains(string(calls), want) {
					t.Errorf("kubectl was called with\n%s\nwant a call %q", calls, want)
				}
			}
		})
	}
}
