# usher as a static binary on a distroless, non-root base image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /usher ./cmd/usher

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /usher /usher
USER 65532:65532
ENTRYPOINT ["/usher"]
