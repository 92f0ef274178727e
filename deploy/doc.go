// Package deploy holds the Kubernetes manifests of attnx serve
// (deployment.yaml, service.yaml, hpa.yaml) for the image the repository's
// Dockerfile builds. It has no Go code: its test decodes the manifests
// strictly into the Kubernetes API types and checks them against the
// server's routes and port and against the Dockerfile.
package deploy
