# vault-seed as an image for Argo CD hook Jobs and CI (deploy/, docs/in-the-sync.md).
#
# Build:  docker build -t harbor.cl1.sq4.aegis.internal/platform/vault-seed:0.1.0 .
#
# The final stage is distroless (glibc and CA roots, no shell, no package manager) and runs as
# its `nonroot` user (65532). vault-seed writes nothing to disk and reads no HOME, so it runs on a
# read-only root filesystem; the specs are mounted at /etc/vault-seed/secret-specs (a ConfigMap)
# and Vault's CA at the path VAULT_CACERT names. tests/suite/deploy.rs builds the binary with this
# file's cargo command and runs it as that user, read-only, with only VAULT_CACERT to trust.
#
# Base images: `scripts/pin-images` pins each FROM by the digest the registry gives for its tag
# (the tag kept on a `# pin:` line above it), and the Jobs' image in deploy/ the same way; run it
# again to take a tag's new digest (docs/in-the-sync.md, "Pinning the images").

# The toolchain: at least the lock file's rust-version (Cargo.toml).
ARG RUST_VERSION=1.89

FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# jemalloc's options (src/main.rs), read when it is built.
COPY .cargo ./.cargo
COPY src ./src
RUN cargo build --locked --release --bin vault-seed

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/vault-seed /usr/local/bin/vault-seed
ENV VAULT_SEED_SPECS=/etc/vault-seed/secret-specs
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/usr/local/bin/vault-seed"]
CMD ["--help"]
