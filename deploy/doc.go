// Package deploy holds attnx's manifests for Kubernetes and Slurm, for the
// image Dockerfile.static (or ko) builds:
//
//   - serving: deployment.yaml (rolling updates that never lack a ready
//     pod, probes, drain on SIGTERM), service.yaml, hpa.yaml (scales on the
//     rows in flight per pod, through prometheus-adapter's rule in
//     adapter-config.yaml, and on CPU), pdb.yaml;
//   - translating a corpus in shards: translate-job.yaml (an Indexed Job,
//     translate --shard auto/N) and merge-job.yaml, or translate.sbatch
//     (a Slurm array, --shard auto/N).
//
// It has no Go code: its tests decode the manifests strictly into the
// Kubernetes API types and check them against the server's routes, port
// and metrics, the Dockerfiles and each other; cmd/attnx's tests run the
// Jobs' and the sbatch script's commands here as the schedulers would.
package deploy
