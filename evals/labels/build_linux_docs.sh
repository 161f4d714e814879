#!/bin/sh
# Build the folder evals/labels/linux-docs.yaml is written against, from Debian's /usr/share/doc (util-linux,
# systemd and git packages installed): one NAME.md per document. The text stays out of the repository.
set -eu
out=${1:?usage: build_linux_docs.sh OUT_DIR}
mkdir -p "$out"
d=/usr/share/doc
for f in blkid cal col deprecated getopt howto-build-sys howto-compilation howto-debug howto-tests \
         modems-with-agetty release-schedule; do
    cp "$d/util-linux/$f.txt" "$out/util-linux-$f.md"
done
for f in CODING_STYLE ENVIRONMENT HACKING UIDS-GIDS TRANSIENT-SETTINGS; do
    zcat "$d/systemd/$f.md.gz" > "$out/systemd-$f.md"
done
cp "$d/systemd/DISTRO_PORTING.md" "$out/systemd-DISTRO_PORTING.md"
cp "$d/systemd/TRANSLATORS.md" "$out/systemd-TRANSLATORS.md"
for f in diff-highlight coccinelle git-jump persistent-https; do
    cp "$d/git/contrib/$f/README" "$out/git-$f.md"
done
