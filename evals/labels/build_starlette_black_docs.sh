#!/bin/sh
# Build the folder evals/labels/starlette-black-docs.yaml is written against: the Markdown docs shipped in the PyPI
# sdists of Starlette 1.10.0 (BSD-3-Clause) and Black 26.10.1 (MIT), pinned by version and SHA-256.
# Layout: OUT/starlette/NAME.md (25 pages), OUT/black/PATH.md (25 pages; Black's three one-line MyST
# `{include}` stubs authors.md, change_log.md, license.md are left out). The text stays out of the repository.
#   evals/labels/build_starlette_black_docs.sh /tmp/starlette-black-docs && executor ingest /tmp/starlette-black-docs --kb starlette_black_docs
out=${1:?usage: build_starlette_black_docs.sh OUT_DIR}
. "$(dirname "$0")/sdist_docs.sh"
sdist_docs "$out/starlette" starlette 1.10.0 b8399098d4c1e3522734f7235dc79b1fc967f96cf139c81e0fa30479e0685f9b docs
sdist_docs "$out/black" black 26.10.1 5f9f83beae62437e060dafd53d7f1fc327e3d3494f74d72ee5c2b73eb90fc4e7 docs \
  '*/authors.md' '*/change_log.md' '*/license.md'
echo "$(find "$out" -name '*.md' | wc -l) pages in $out"
