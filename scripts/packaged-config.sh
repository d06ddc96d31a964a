#!/bin/sh
# Prints the packaged configuration, installed by the .deb as
# /etc/pointhook/pointhook.toml: sample-config.toml with its database in the
# unit's state directory, /var/lib/pointhook. The one source is the sample;
# scripts/deb.sh writes this to packaging/pointhook.toml before `cargo deb`.
set -eu
sample="$(dirname "$0")/../sample-config.toml"
line='path = "pointhook.db"'
if [ "$(grep -cx "$line" "$sample")" != 1 ]; then
  echo "packaged-config.sh: $sample has no single line '$line' to change" >&2
  exit 1
fi
sed "s|^$line\$|path = \"/var/lib/pointhook/pointhook.db\"|" "$sample"
