#!/bin/sh
# Build the folder for a seventh held-out label set (issue 27; labels: bump-my-version-docs.yaml): the Markdown pages
# of bump-my-version's documentation shipped in the PyPI sdist of bump-my-version 1.8.1 (MIT), pinned by version and
# SHA-256. Written by helper labels24, 2026-12-07, before Executor was run on this corpus.
# Layout: OUT/PATH.md, PATH relative to the sdist's docs/ (20 pages: the index, a getting-started tutorial, the mental
# model, version parts, the show subcommand, how-tos on CalVer, dates, multiple and per-file replacements, avoiding
# wrong replacements and setting a part, and the reference: configuration (global, file, version component), search
# and replace, formatting context, hooks, CalVer codes, movable version tags).
# Left out: agents/ (instructions for coding agents that work on the project itself: pytest practices, issue
# triage; not user documentation), CHANGELOG.md, CONTRIBUTING.md and tutorials/semantic-versioning-example.md (each
# only an include directive of a file outside docs/, no text of its own), and the three section indexes
# explanation/, howtos/ and reference/index.md (bare lists of links to the pages above). The text stays out of the
# repository.
#   evals/labels/build_bump_my_version_docs.sh /tmp/bmv-docs && executor ingest /tmp/bmv-docs --kb bump_my_version_docs
out=${1:?usage: build_bump_my_version_docs.sh OUT_DIR}
. "$(dirname "$0")/sdist_docs.sh"
sdist_docs "$out" bump_my_version 1.8.1 6457f2a1b964df60ff7d532e61d41422f19dbf936c9752bdff25d79f63768069 docs \
  './agents/*' ./CHANGELOG.md ./CONTRIBUTING.md ./tutorials/semantic-versioning-example.md \
  ./explanation/index.md ./howtos/index.md ./reference/index.md
echo "$(find "$out" -name '*.md' | wc -l) pages in $out"
