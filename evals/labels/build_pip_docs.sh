#!/bin/sh
# Build the folder evals/labels/pip-docs.yaml is written against: the Markdown pages of pip's documentation shipped
# in the PyPI sdist of pip 26.3 (MIT), pinned by version and SHA-256.
# Layout: OUT/PATH.md, PATH relative to the sdist's docs/html (37 pages: getting started, installation, topic guides,
# reference, issue triage, UX research). The .rst pages (user guide, CLI reference, development guide) are left out,
# and so are three index.md pages that hold only a table of contents (cli/, reference/, topics/). The text stays
# out of the repository.
#   evals/labels/build_pip_docs.sh /tmp/pip-docs && executor ingest /tmp/pip-docs --kb pip_docs
out=${1:?usage: build_pip_docs.sh OUT_DIR}
. "$(dirname "$0")/sdist_docs.sh"
sdist_docs "$out" pip 26.3 6c36ae7da8695be67e3cd9f7d87919667ced53f57ce2ede75d89b5912ed2bc4c docs/html \
  ./cli/index.md ./reference/index.md ./topics/index.md
echo "$(find "$out" -name '*.md' | wc -l) pages in $out"
