# syntax=docker/dockerfile:1
# attnx serve in a container, with ONNX Runtime (amd64 and arm64): the demo
# date model (testdata/demo/luong.pt) is exported into /models/dates at
# build time, so the image serves out of the box. Dockerfile.static builds
# the smaller image without ONNX Runtime (the native backend, any
# platform), which is the one to start with.
#
#   docker build -t attnx .
#   docker run --rm -p 8080:8080 attnx
#   curl -s localhost:8080/v1/translate -H 'Content-Type: application/json' -d '{"inputs": ["3rd of March 2021"]}'
#
# Your own model: export it (attnx export CHECKPOINT -o mymodel) and mount
# the directory, read-only:
#
#   docker run --rm -p 8080:8080 -v "$PWD/mymodel:/models/mine:ro" attnx serve --model mine=/models/mine --addr :8080
#
# deploy/ holds Kubernetes manifests for this image.

# --- ONNX Runtime: the CPU library from the npm package onnxruntime-node,
# checked by sha256 as scripts/install-deps.sh does (same version, same
# sums; serve/deploy's test keeps them equal). No install scripts run.
# The package holds the linux x64 and arm64 libraries; TARGETARCH picks.
FROM --platform=$BUILDPLATFORM node:22-bookworm-slim AS ort
ARG TARGETARCH
ARG ORT_VERSION=1.24.1
ARG ORT_TGZ_SHA256=57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772
ARG ORT_LIB_SHA256=53ef1ac028dd1b05554b8da28d9159eb3876f99868193d2aaa6e67f0243c23d4
ARG ORT_LIB_SHA256_ARM64=7954e8bdedb497f830c6a679e818d98399b7f4d81ade1126c3e0be74d28111ab
WORKDIR /ort
RUN case "${TARGETARCH:-amd64}" in \
      amd64) arch=x64 sum="${ORT_LIB_SHA256}" ;; \
      arm64) arch=arm64 sum="${ORT_LIB_SHA256_ARM64}" ;; \
      *) echo "ONNX Runtime's package has no linux/${TARGETARCH} library: build Dockerfile.static" >&2; exit 1 ;; \
    esac \
 && npm pack --silent "onnxruntime-node@${ORT_VERSION}" >/dev/null \
 && echo "${ORT_TGZ_SHA256}  onnxruntime-node-${ORT_VERSION}.tgz" | sha256sum -c - \
 && tar -xzf "onnxruntime-node-${ORT_VERSION}.tgz" "package/bin/napi-v6/linux/${arch}/libonnxruntime.so.1" \
 && mv "package/bin/napi-v6/linux/${arch}/libonnxruntime.so.1" . \
 && echo "${sum}  libonnxruntime.so.1" | sha256sum -c -

# --- attnx, built with cgo (ONNX Runtime is loaded at run time).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -o /out/attnx ./cmd/attnx \
 && /out/attnx export testdata/demo/luong.pt -o /out/models/dates --greedy \
      --src-vocab testdata/demo/src_vocab.json --tgt-vocab testdata/demo/tgt_vocab.json

# --- The service: a non-root user, the binary, the library and the model.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin attnx
COPY --from=ort /ort/libonnxruntime.so.1 /usr/local/lib/libonnxruntime.so.1
COPY --from=build /out/attnx /usr/local/bin/attnx
COPY --from=build /out/models /models
USER 10001:10001
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["attnx"]
CMD ["serve", "--model", "dates=/models/dates", "--addr", ":8080"]
