// Package shard splits a test set or a corpus into line-aligned parts that
// separate processes translate (a Kubernetes Indexed Job's pods, a Slurm
// array's tasks, plain processes), records what each part holds, and joins
// the translated parts back in order, checking that every line is there.
//
// Shard K of N (1 <= K <= N, counted from 1 as GNU split's -n l/K/N counts)
// holds the lines of a file that start in the byte range
// [(K-1) x C, K x C), C = floor(S / N) (at least 1), S the file's size (the last shard
// to the end): the shards GNU split -n l/K/N prints. They are contiguous,
// each line is in exactly one, and a shard is found by reading only the
// bytes around its two edges, whatever the file's size. A line longer than
// C can leave a shard empty.
//
// A shard is translated by a Job (OpenJob, Job.Translate): its part file
// (Part) is written atomically as the sentences finish, in order, the
// results that wait for the sentences before them held in a bounded
// buffer and past it in a spill file, and then its record (Record, the
// part's name plus ".json"), which makes it done: a shard run again whose
// record matches its source bytes and its settings is skipped, so a
// retried pod redoes only what is missing. Merge joins the parts of all N
// shards, checking their records against each other and their files.
package shard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Spec is shard K of N, 1 <= K <= N.
type Spec struct{ K, N int }

// String returns "K/N".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// MaxShards bounds N: more shards than this are a mistake (each is a
// process, a pod or an array task with its part file).
const MaxShards = 1 << 20

// Environment variables that --shard auto reads.
const (
	// EnvJobIndex is set by Kubernetes in each pod of an Indexed Job: its
	// completion index, 0 to completions-1.
	EnvJobIndex = "JOB_COMPLETION_INDEX"
	// Slurm sets these in each task of a job array (sbatch --array).
	EnvSlurmTask  = "SLURM_ARRAY_TASK_ID"
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	EnvSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmMax   = "SLURM_ARRAY_TASK_MAX"
	EnvSlurmStep  = "SLURM_ARRAY_TASK_STEP"
)

// Parse reads a shard flag: "K/N"; "auto", which takes K and N from a Slurm
// array task's environment (SLURM_ARRAY_TASK_ID and the array's count,
// minimum, maximum and step); or "auto/N", which takes K from a Kubernetes
// Indexed Job's JOB_COMPLETION_INDEX or a Slurm array's
// SLURM_ARRAY_TASK_ID, either being the shard's index from 0 (index i is
// shard i+1). Kubernetes gives its pods their index but not the Job's
// completions, so auto there needs /N; under Slurm, auto/N is what
// survives a partial resubmission (sbatch --array=2 makes an array of one
// task, 2, from which auto alone would work out shard 1/1).
// getenv looks up the environment (os.Getenv).
func Parse(flag string, getenv func(string) string) (Spec, error) {
	kPart, nPart, hasN := strings.Cut(flag, "/")
	n := 0
	if hasN {
		v, err := strconv.Atoi(nPart)
		if err != nil || v < 1 || v > MaxShards {
			return Spec{}, fmt.Errorf("shard %q: N in K/N must be a whole number from 1 to %d", flag, MaxShards)
		}
		n = v
	}
	if kPart == "auto" {
		s, err := fromEnv(getenv, n)
		if err != nil {
			return Spec{}, fmt.Errorf("shard %s: %w", flag, err)
		}
		return s, nil
	}
	if !hasN {
		return Spec{}, fmt.Errorf("shard %q: want K/N (shard K of N, from 1/N to N/N), auto (a Slurm array task's) or auto/N (a Kubernetes Indexed Job's pod, N its completions)", flag)
	}
	k, err := strconv.Atoi(kPart)
	if err != nil || k < 1 || k > n {
		return Spec{}, fmt.Errorf("shard %q: K in K/N must be a whole number from 1 to %d (shards count from 1, as split -n l/K/N does: a Kubernetes index i is shard i+1, which auto/N works out)", flag, n)
	}
	return Spec{K: k, N: n}, nil
}

// fromEnv works out the shard from a scheduler's environment; n > 0 is
// the count the command line gave.
func fromEnv(getenv func(string) string, n int) (Spec, error) {
	k8s, slurm := getenv(EnvJobIndex), getenv(EnvSlurmTask)
	switch {
	case k8s != "" && slurm != "":
		return Spec{}, fmt.Errorf("both %s=%s (Kubernetes) and %s=%s (Slurm) are set: give the shard as K/N", EnvJobIndex, k8s, EnvSlurmTask, slurm)
	case k8s != "":
		if n == 0 {
			return Spec{}, fmt.Errorf("%s=%s gives this pod's shard but not how many there are (Kubernetes does not pass a Job's completions to its pods): give auto/N, N the Job's spec.completions", EnvJobIndex, k8s)
		}
		i, err := strconv.Atoi(k8s)
		if err != nil || i < 0 || i >= n {
			return Spec{}, fmt.Errorf("%s=%q: want an index from 0 to %d (N-1, N = %d shards: is the Job's spec.completions %d?)", EnvJobIndex, k8s, n-1, n, n)
		}
		return Spec{K: i + 1, N: n}, nil
	case slurm != "":
		return slurmSpec(getenv, n)
	}
	return Spec{}, fmt.Errorf("neither %s (a Kubernetes Indexed Job's pod) nor %s (a Slurm array task) is set: run it as one of those, or give the shard as K/N", EnvJobIndex, EnvSlurmTask)
}

// slurmSpec maps a Slurm array task to its shard. With n > 0 (auto/N) the
// task ID is the shard's index from 0, whatever part of the array was
// submitted: task i is shard i+1 of n. Without, the array is the whole
// job: its tasks are MIN, MIN+STEP, ..., MAX, COUNT of them, and task
// MIN + i*STEP is shard i+1 of COUNT (an array with gaps, --array=1,4,9,
// has no such mapping).
func slurmSpec(getenv func(string) string, n int) (Spec, error) {
	num := func(name string, def int, required bool) (int, error) {
		s := getenv(name)
		if s == "" {
			if required {
				return 0, fmt.Errorf("%s=%s is set but %s is not: is this a Slurm job array (sbatch --array)?", EnvSlurmTask, getenv(EnvSlurmTask), name)
			}
			return def, nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s=%q: want a whole number >= 0", name, s)
		}
		return v, nil
	}
	id, err := num(EnvSlurmTask, 0, true)
	if err != nil {
		return Spec{}, err
	}
	count, err := num(EnvSlurmCount, 0, true)
	if err != nil {
		return Spec{}, err
	}
	lo, err := num(EnvSlurmMin, 0, true)
	if err != nil {
		return Spec{}, err
	}
	hi, err := num(EnvSlurmMax, 0, true)
	if err != nil {
		return Spec{}, err
	}
	step, err := num(EnvSlurmStep, 1, false)
	if err != nil {
		return Spec{}, err
	}
	if step < 1 {
		step = 1
	}
	if n > 0 {
		return slurmIndex(id, count, lo, hi, n)
	}
	switch {
	case count < 1 || count > MaxShards:
		return Spec{}, fmt.Errorf("%s=%d: want 1 to %d tasks", EnvSlurmCount, count, MaxShards)
	case hi < lo || (hi-lo)%step != 0 || (hi-lo)/step+1 != count:
		return Spec{}, fmt.Errorf("the array %d-%d:%d has %s=%d tasks, not one every %d from %d to %d: give the array as one range (--array=0-%d or 1-%d)", lo, hi, step, EnvSlurmCount, count, step, lo, hi, count-1, count)
	case id < lo || id > hi || (id-lo)%step != 0:
		return Spec{}, fmt.Errorf("%s=%d is not a task of the array %d-%d:%d", EnvSlurmTask, id, lo, hi, step)
	}
	return Spec{K: (id-lo)/step + 1, N: count}, nil
}

// slurmIndex is auto/N's shard under Slurm: task id is shard id+1 of n.
// An array of n tasks that does not start at 0 (--array=1-4 for auto/4)
// is refused, as its last task would be out of range and its first task
// not shard 1; so is one of more tasks than shards.
func slurmIndex(id, count, lo, hi, n int) (Spec, error) {
	switch {
	case count > n:
		return Spec{}, fmt.Errorf("the Slurm array has %d tasks, more than auto/%d's shards (%s)", count, n, EnvSlurmCount)
	case count == n && lo != 0:
		return Spec{}, fmt.Errorf("auto/%d numbers Slurm's tasks from 0, as shard indexes (task i is shard i+1), and this array runs from %d to %d: submit it as --array=0-%d", n, lo, hi, n-1)
	case id >= n:
		return Spec{}, fmt.Errorf("%s=%d: want a shard index from 0 to %d (auto/%d numbers Slurm's tasks from 0: submit the array as --array=0-%d, and a failed task again as --array=I)", EnvSlurmTask, id, n-1, n, n-1)
	}
	return Spec{K: id + 1, N: n}, nil
}

// Bounds returns the byte range [start, end) that shard s holds of a file
// of size bytes read through r: with C = floor(size / N), the lines that
// start at or after (K-1) x C and before K x C (the last shard: before the
// end), the shards GNU split -n l/K/N prints (C is 1 when the file has
// fewer bytes than N, as there). Only the bytes
// from those two offsets to the next line ends are read.
func Bounds(r io.ReaderAt, size int64, s Spec) (start, end int64, err error) {
	if s.K < 1 || s.K > s.N || size < 0 {
		return 0, 0, fmt.Errorf("shard %v of %d bytes: want 1 <= K <= N", s, size)
	}
	if start, err = lineStart(r, size, cut(size, s.K-1, s.N)); err != nil {
		return 0, 0, err
	}
	if end, err = lineStart(r, size, cut(size, s.K, s.N)); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}

// cut is where shard k+1 of n starts in a file of size bytes: k x C, C =
// floor(size / n) but at least 1, and the end of the file for k = n.
func cut(size int64, k, n int) int64 {
	c := max(size/int64(n), 1)
	if k == n {
		return size
	}
	return min(int64(k)*c, size)
}

// lineStart returns the offset of the first line that starts at or after
// off: off itself when a line starts there (off 0, or a newline before
// it), else the byte after the next newline, or size when there is none.
func lineStart(r io.ReaderAt, size, off int64) (int64, error) {
	if off <= 0 {
		return 0, nil
	}
	if off >= size {
		return size, nil
	}
	buf := make([]byte, 64<<10)
	for pos := off - 1; pos < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
		pos += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("reading at byte %d: %w", pos, err)
		}
		if n == 0 {
			return 0, fmt.Errorf("reading at byte %d: the file is shorter than its %d bytes (did it change?)", pos, size)
		}
	}
	return size, nil
}
