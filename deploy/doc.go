// Package deploy holds attnx's manifests for Kubernetes and Slurm, for the
// image Dockerfile.static (or ko) builds, attnx:static in every manifest
// and set for a cluster in one place, image/kustomization.yaml (a
// kustomize Component the kustomizations share):
//
//   - serving (kubectl apply -k deploy): deployment.yaml (rolling updates
//     that never lack a ready pod, probes, drain on SIGTERM), service.yaml,
//     hpa.yaml (scales on the rows in flight per pod, through
//     prometheus-adapter's rule in adapter-config.yaml, and on CPU),
//     pdb.yaml;
//   - translating a corpus in shards: claims/ (the ReadWriteMany claim of
//     the corpus and the parts, the model's claim, and the permissions
//     they need where fsGroup is not applied), translate/ (an Indexed Job,
//     translate --shard auto/N), wait-job.sh (until the Job is complete or
//     failed) and merge/; or translate.sbatch (a Slurm array, --shard
//     auto/N). docs/deploy.md walks through both.
//
// It has no Go code: its tests decode the manifests strictly into the
// Kubernetes API types and check them against the server's routes, port
// and metrics, the Dockerfiles and each other; cmd/attnx's tests run the
// Jobs' and the sbatch script's commands here as the schedulers would.
package deploy
