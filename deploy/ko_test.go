package deploy

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// nonrootUser is distroless's nonroot user, which Dockerfile.static's
// image and the manifests run as.
const nonrootUser = "65532"

// localBase writes a stand-in for .ko.yaml's base image (no registry is
// reachable here) into ko's on-disk cache, KOCACHE/img, where ko finds a
// base image given by digest without pulling it: an index of linux/amd64
// and linux/arm64 images holding what distroless static's nonroot image
// holds for a static binary (/etc/passwd and /etc/group with nonroot,
// /tmp, nonroot's home), running as nonroot. It returns the reference to
// give as KO_DEFAULTBASEIMAGE.
func localBase(t *testing.T, kocache string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		uid  int
		body string
	}{
		{"etc/", 0o755, 0, ""},
		{"etc/passwd", 0o644, 0, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{"etc/group", 0o644, 0, "root:x:0:\nnonroot:x:65532:\n"},
		{"tmp/", 0o1777, 0, ""},
		{"home/", 0o755, 0, ""},
		{"home/nonroot/", 0o700, 65532, ""},
	} {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, Typeflag: tar.TypeReg, Size: int64(len(f.body))}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, f.body)
	}
	tw.Close()
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var imgs []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
		if err != nil {
			t.Fatal(err)
		}
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		cf.Config.User = nonrootUser
		cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	p, err := layout.Write(filepath.Join(kocache, "img"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	// The index and its images, each findable by its digest.
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if err := p.AppendImage(img); err != nil {
			t.Fatal(err)
		}
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return "base.attnx-test.invalid/static@" + d.String()
}

// koBinary returns make deps' ko, or one on PATH.
func koBinary(t *testing.T) string {
	if p, err := filepath.Abs("../.deps/bin/ko"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("ko")
	if err != nil {
		testenv.Missing(t, "ko", "make deps (go install github.com/google/ko@v0.19.1 into .deps/bin)", err)
	}
	return p
}

// TestKoImage builds the static image as make image does
// (scripts/ko-build.sh with .ko.yaml; the base is a local stand-in for
// distroless, as no registry is reachable here), one tarball per
// platform, then reads each tarball as a container runtime would: the
// platform, the user and the entrypoint of its config, the binary in its
// filesystem (a static ELF for the platform), and for this machine's
// platform runs that binary, with an empty environment, on the demo model
// mounted beside it: it translates.
func TestKoImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image for two platforms")
	}
	ko := koBinary(t)
	sh := testenv.Command(t, "bash", "bash")
	// .ko.yaml's base is Dockerfile.static's.
	var cfg struct {
		DefaultBaseImage string   `json:"defaultBaseImage"`
		DefaultPlatforms []string `json:"defaultPlatforms"`
		Builds           []struct {
			ID    string   `json:"id"`
			Main  string   `json:"main"`
			Env   []string `json:"env"`
			Flags []string `json:"flags"`
		} `json:"builds"`
	}
	data, err := os.ReadFile("../.ko.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatalf(".ko.yaml: %v", err)
	}
	froms := readDockerfileAt(t, "../Dockerfile.static")["FROM"]
	if cfg.DefaultBaseImage != froms[len(froms)-1] {
		t.Errorf(".ko.yaml's base %q, Dockerfile.static's %q: want the same", cfg.DefaultBaseImage, froms[len(froms)-1])
	}
	if len(cfg.Builds) != 1 || cfg.Builds[0].Main != "./cmd/attnx" || !strings.Contains(strings.Join(cfg.Builds[0].Env, " "), "CGO_ENABLED=0") {
		t.Errorf(".ko.yaml builds %+v: want ./cmd/attnx with CGO_ENABLED=0", cfg.Builds)
	}

	tmp := t.TempDir()
	kocache := filepath.Join(tmp, "kocache")
	base := localBase(t, kocache)
	out := filepath.Join(tmp, "image")
	cmd := exec.Command(sh, "../scripts/ko-build.sh")
	cmd.Env = append(os.Environ(), "OUT="+out, "KO="+ko, "KOCACHE="+kocache, "KO_DEFAULTBASEIMAGE="+base)
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/ko-build.sh: %v\n%s", err, log)
	} else {
		t.Logf("%s", log)
	}

	model := filepath.Join(tmp, "models", "dates")
	if _, err := modeldir.Export("../testdata/demo/luong.pt", model, modeldir.Options{Greedy: true,
		SrcVocab: "../testdata/demo/src_vocab.json", TgtVocab: "../testdata/demo/tgt_vocab.json"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		arch    string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		path := filepath.Join(out, "attnx-"+p.arch+".tar")
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// It loads (docker load) under the name the manifests run.
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
		if err != nil || len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{imageName}) {
			t.Errorf("%s: manifest %+v, %v: want one image tagged %s, as deploy/'s manifests run it", path, m, err, imageName)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != p.arch || cf.Config.User != nonrootUser || len(cf.Config.Entrypoint) != 1 {
			t.Errorf("%s: %s/%s, user %q, entrypoint %q: want linux/%s, user %s, the binary", path, cf.OS, cf.Architecture, cf.Config.User, cf.Config.Entrypoint, p.arch, nonrootUser)
			continue
		}
		// The image's filesystem, flattened as a runtime unpacks it.
		root := filepath.Join(tmp, "rootfs-"+p.arch)
		if err := unpack(mutate.Extract(img), root); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		bin := filepath.Join(root, cf.Config.Entrypoint[0])
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: the entrypoint %s: %v", path, cf.Config.Entrypoint[0], err)
		}
		interp := false
		for _, prog := range f.Progs {
			interp = interp || prog.Type == elf.PT_INTERP
		}
		f.Close()
		if f.Machine != p.machine || interp {
			t.Errorf("%s: %s is for %v, dynamically linked %v: want a static binary for %v", path, cf.Config.Entrypoint[0], f.Machine, interp, p.machine)
		}
		for _, want := range []string{"etc/passwd", "tmp"} {
			if _, err := os.Stat(filepath.Join(root, want)); err != nil {
				t.Errorf("%s: the base's /%s is missing: %v", path, want, err)
			}
		}
		t.Logf("%s: %d bytes (%.1f MB), linux/%s, user %s, entrypoint %s", filepath.Base(path), st.Size(), float64(st.Size())/1e6, p.arch, cf.Config.User, cf.Config.Entrypoint[0])
		if p.arch != runtime.GOARCH {
			continue
		}
		run := exec.Command(bin, append(cf.Config.Cmd, "translate", "--model", model, "3rd of March 2021")...)
		run.Env = []string{}
		run.Dir = root
		got, err := run.CombinedOutput()
		if err != nil || !strings.Contains(string(got), "3rd of March 2021 -> 2021-03-03") {
			t.Errorf("the image's attnx translate with the mounted demo model: %v\n%s", err, got)
		} else {
			t.Logf("run from the image: %s", strings.TrimSpace(string(got)))
		}
	}
}

// unpack writes a flattened image filesystem (a tar stream) under root.
func unpack(rc io.ReadCloser, root string) error {
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(root)+string(filepath.Separator)) {
			return errors.New("tar entry outside the root: " + h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
