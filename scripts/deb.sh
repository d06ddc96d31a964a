#!/bin/sh
# Builds the .deb (target/debian/pointhook_*.deb): writes the packaged
# configuration from sample-config.toml, then runs `cargo deb` with any
# arguments given. The configuration asset (packaging/pointhook.toml, not in
# the repository) is written here each time, so it cannot be stale; on a
# fresh checkout `cargo deb` alone fails for want of it.
set -eu
cd "$(dirname "$0")/.."
scripts/packaged-config.sh >packaging/pointhook.toml
exec cargo deb "$@"
