# usher as a static binary on a distroless, non-root base image.
#
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) -t ghcr.io/usherhq/usher:v0.1.0 .
#
# VERSION and COMMIT are stamped into the binary (usher version prints
# them); .dockerignore keeps .git out of the build context, so the commit
# comes from the build argument, not from Go's VCS stamping. Multi-arch:
# docker buildx build --platform linux/amd64,linux/arm64 ... cross-compiles
# on the build platform (no emulation).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/usherhq/usher/cmd/usher/cli.Version=${VERSION} -X github.com/usherhq/usher/cmd/usher/cli.Commit=${COMMIT}" \
    -o /usher ./cmd/usher

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /usher /usher
USER 65532:65532
ENTRYPOINT ["/usher"]
