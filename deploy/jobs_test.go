package deploy

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/shard"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestTranslateJobs checks translate/translate-job.yaml and
// merge/merge-job.yaml against each other and against what attnx
// translate --shard needs: an Indexed
// Job whose --shard auto/N has N = completions, retried per index, whose
// pods write their parts where the merge Job reads them, on a volume both
// mount; threads matching the CPU limit; the image's user.
// (cmd/attnx's TestIndexedJobLocally runs the two Jobs' commands.)
func TestTranslateJobs(t *testing.T) {
	var job, merge batchv1.Job
	decodeStrict(t, translateJobFile, "batch/v1", "Job", &job)
	decodeStrict(t, mergeJobFile, "batch/v1", "Job", &merge)
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || *s.Completions < 1 {
		t.Fatalf("completionMode %v, completions %v: want an Indexed Job (its pods get %s)", s.CompletionMode, s.Completions, shard.EnvJobIndex)
	}
	if s.Parallelism == nil || *s.Parallelism < 1 || *s.Parallelism > *s.Completions {
		t.Errorf("parallelism %v: want 1 to completions %d", s.Parallelism, *s.Completions)
	}
	// A failed pod is retried for its index alone, which needs
	// restartPolicy Never.
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex < 1 || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("backoffLimitPerIndex %v, restartPolicy %q: want retries per index, Never", s.BackoffLimitPerIndex, job.Spec.Template.Spec.RestartPolicy)
	}
	if len(job.Spec.Template.Spec.Containers) != 1 || len(merge.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("want one container in each Job")
	}
	c := job.Spec.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "translate" {
		t.Fatalf("translate Job args %q", c.Args)
	}
	// N in --shard auto/N is the Job's completions, and each index maps
	// to a shard.
	sh := flagValue(c.Args, "--shard")
	if sh != "auto/"+strconv.Itoa(int(*s.Completions)) {
		t.Errorf("--shard %q, completions %d: want auto/%d", sh, *s.Completions, *s.Completions)
	}
	for i := range int(*s.Completions) {
		spec, err := shard.Parse(sh, func(k string) string {
			if k == shard.EnvJobIndex {
				return strconv.Itoa(i)
			}
			return ""
		})
		if err != nil || spec != (shard.Spec{K: i + 1, N: int(*s.Completions)}) {
			t.Errorf("index %d: shard %v, %v", i, spec, err)
		}
	}
	// Threads as the CPU limit allows, memory under the limit.
	cpu := c.Resources.Limits.Cpu()
	if threads := flagValue(c.Args, "--threads"); cpu.IsZero() || threads != strconv.FormatInt(cpu.Value(), 10) || c.Resources.Requests.Cpu().Cmp(*cpu) != 0 {
		t.Errorf("--threads %q, CPU request %v, limit %v: want whole cores requested, limited and used", threads, c.Resources.Requests.Cpu(), cpu)
	}
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			q, err := resource.ParseQuantity(strings.TrimSuffix(e.Value, "B"))
			if err != nil || q.Cmp(*c.Resources.Limits.Memory()) >= 0 {
				t.Errorf("GOMEMLIMIT %q: want one under the memory limit %v", e.Value, c.Resources.Limits.Memory())
			}
		}
	}

	// The merge Job joins the translate Job's output, on the same volume.
	m := merge.Spec.Template.Spec.Containers[0]
	out := flagValue(c.Args, "--output")
	if len(m.Args) != 2 || m.Args[0] != "merge" || m.Args[1] != out {
		t.Errorf("merge Job args %q: want merge %s", m.Args, out)
	}
	claim := func(j batchv1.Job, c corev1.Container, path string) (string, bool) {
		for _, vm := range c.VolumeMounts {
			if strings.HasPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/") {
				for _, v := range j.Spec.Template.Spec.Volumes {
					if v.Name == vm.Name && v.PersistentVolumeClaim != nil {
						return v.PersistentVolumeClaim.ClaimName, vm.ReadOnly
					}
				}
			}
		}
		return "", false
	}
	for _, p := range []struct {
		flag     string
		readOnly bool
	}{{"--model", true}, {"--src", false}, {"--output", false}} {
		if name, ro := claim(job, c, flagValue(c.Args, p.flag)); name == "" || ro != p.readOnly {
			t.Errorf("%s %s: on claim %q (read-only %v), want a claim, read-only %v", p.flag, flagValue(c.Args, p.flag), name, ro, p.readOnly)
		}
	}
	tc, _ := claim(job, c, out)
	mc, ro := claim(merge, m, out)
	if tc == "" || mc != tc || ro {
		t.Errorf("the translate Job writes %s on claim %q, the merge Job reads it on %q (read-only %v)", out, tc, mc, ro)
	}

	// The static image, as its user.
	user := staticUser(t)
	for _, j := range []batchv1.Job{job, merge} {
		sc := j.Spec.Template.Spec.SecurityContext
		if sc == nil || sc.RunAsUser == nil || strconv.FormatInt(*sc.RunAsUser, 10) != user || sc.FSGroup == nil {
			t.Errorf("%s: security context %+v: want Dockerfile.static's user %s and an fsGroup (the volume writable by it)", j.Name, sc, user)
		}
		if img := j.Spec.Template.Spec.Containers[0].Image; img != imageName {
			t.Errorf("%s runs image %q, want %s", j.Name, img, imageName)
		}
	}
}

// sbatchDirectives returns an sbatch script's #SBATCH options (--array,
// --cpus-per-task, ...) as a map.
func sbatchDirectives(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "#SBATCH "); ok {
			k, v, _ := strings.Cut(strings.TrimSpace(rest), "=")
			out[k] = v
		}
	}
	return out
}

// TestSbatchScript checks translate.sbatch's directives: an array of one
// range from 0, whose size is the N of its --shard auto/N (task I is
// shard I+1, also when resubmitted alone), a CPU count the script
// passes on as --threads, and a log per task. cmd/attnx's
// TestSlurmArrayLocally runs it.
func TestSbatchScript(t *testing.T) {
	d := sbatchDirectives(t, "translate.sbatch")
	lo, hi, ok := strings.Cut(d["--array"], "-")
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || b < a || a != 0 {
		t.Errorf("--array=%q: want one range 0-B", d["--array"])
	}
	if n, err := strconv.Atoi(d["--cpus-per-task"]); err != nil || n < 1 {
		t.Errorf("--cpus-per-task=%q", d["--cpus-per-task"])
	}
	if !strings.Contains(d["--output"], "%A_%a") {
		t.Errorf("--output=%q: want a log per array task (%%A_%%a)", d["--output"])
	}
	data, _ := os.ReadFile("translate.sbatch")
	for _, want := range []string{fmt.Sprintf("--shard auto/%d ", b-a+1), `--threads "${SLURM_CPUS_PER_TASK`, "srun attnx translate", "set -euo pipefail"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("translate.sbatch lacks %q", want)
		}
	}
}
