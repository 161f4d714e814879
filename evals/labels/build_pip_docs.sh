#!/bin/sh
# Build the folder evals/labels/pip-docs.yaml is written against: the Markdown pages of pip's documentation shipped
# in the PyPI sdist of pip 26.3 (MIT), pinned by version and SHA-256.
# Layout: OUT/PATH.md, PATH relative to the sdist's docs/html (37 pages: getting started, installation, topic guides,
# reference, issue triage, UX research). The .rst pages (user guide, CLI reference, development guide) are left out,
# and so are three index.md pages that hold only a table of contents (cli/, reference/, topics/). The text stays
# out of the repository.
#   evals/labels/build_pip_docs.sh /tmp/pip-docs && executor ingest /tmp/pip-docs --kb pip_docs
set -eu
out=${1:?usage: build_pip_docs.sh OUT_DIR}
pip=${PIP:-python3 -m pip}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$pip download --quiet --no-binary :all: --no-deps -d "$tmp" pip==26.3
cd "$tmp"
echo "6c36ae7da8695be67e3cd9f7d87919667ced53f57ce2ede75d89b5912ed2bc4c  pip-26.3.tar.gz" | sha256sum -c --quiet
tar xzf pip-26.3.tar.gz
cd - >/dev/null
( cd "$tmp/pip-26.3/docs/html" && find . -name '*.md' ! -path ./cli/index.md ! -path ./reference/index.md ! -path ./topics/index.md ) |
  while read -r f; do
    mkdir -p "$out/$(dirname "$f")"
    cp "$tmp/pip-26.3/docs/html/$f" "$out/$f"
  done
echo "$(find "$out" -name '*.md' | wc -l) pages in $out"
