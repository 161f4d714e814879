#!/bin/sh
# Build the folder for a fourth held-out label set (issue 27; labels: hatch-docs.yaml): the Markdown pages of Hatch's
# documentation shipped in the PyPI sdist of hatch 1.14.1 (MIT), pinned by version and SHA-256.
# Written by helper held10, 2026-12-03, before Executor was run on this corpus.
# Layout: OUT/PATH.md, PATH relative to the sdist's docs/ (user guide, config, how-to, plugins, tutorials, CLI).
# Left out: blog/, history/ (changelogs), community/ and meta/authors.md: release notes and people lists, not
# documentation. The text stays out of the repository.
#   evals/labels/build_hatch_docs.sh /tmp/hatch-docs && executor ingest /tmp/hatch-docs --kb hatch_docs
out=${1:?usage: build_hatch_docs.sh OUT_DIR}
. "$(dirname "$0")/sdist_docs.sh"
sdist_docs "$out" hatch 1.14.1 ca1aff788f8596b0dd1f8f8dfe776443d2724a86b1976fabaf087406ba3d0713 docs \
  './blog/*' './history/*' './community/*' ./meta/authors.md
echo "$(find "$out" -name '*.md' | wc -l) pages in $out"
