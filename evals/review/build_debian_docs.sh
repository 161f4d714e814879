#!/bin/sh
# Build the folder evals/review/11-debian-docs-sessions.yaml is written against, from Debian's /usr/share/doc
# (dpkg, openssh-client, postgresql-common, apt, mariadb-server, make, tmux, gnupg installed): one NAME.md per
# document. None of these is in evals/labels/linux-docs.yaml (the grading dev set): nobody fitted on them. Their
# text stays out of the repository. Usage: build_debian_docs.sh OUT_DIR
set -eu
out=${1:?usage: build_debian_docs.sh OUT_DIR}
mkdir -p "$out"
d=/usr/share/doc
for f in triggers rootless-builds frontend-api protected-field; do
    cp "$d/dpkg/spec/$f.txt" "$out/dpkg-$f.md"
done
cp "$d/openssh-client/README.dns" "$out/openssh-dns.md"
zcat "$d/openssh-client/README.tun.gz" > "$out/openssh-tun.md"
zcat "$d/openssh-client/README.Debian.gz" > "$out/openssh-debian.md"
zcat "$d/postgresql-common/README.Debian.gz" > "$out/postgresql-common-debian.md"
cp "$d/postgresql-common/README.systemd" "$out/postgresql-common-systemd.md"
zcat "$d/apt/README.md.gz" > "$out/apt-readme.md"
zcat "$d/mariadb-server/README.Debian.gz" > "$out/mariadb-server-debian.md"
zcat "$d/make/README.customs.gz" > "$out/make-customs.md"
cp "$d/tmux/README" "$out/tmux-readme.md"
cp "$d/gnupg/KEYSERVER" "$out/gnupg-keyserver.md"
