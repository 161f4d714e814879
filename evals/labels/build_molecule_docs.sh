#!/bin/sh
# Build the folder for a fifth held-out label set (issue 27; labels: molecule-docs.yaml): the Markdown pages of
# Ansible Molecule's documentation shipped in the PyPI sdist of molecule 26.10.0 (MIT), pinned by version and SHA-256.
# Written by helper labels22, 2026-12-07, before Executor was run on this corpus.
# Layout: OUT/PATH.md, PATH relative to the sdist's docs/ (29 pages: getting started for roles, playbooks and
# collections, configuration, ansible-native and pre-ansible-native reference, workflow, CI, examples, guides, FAQ,
# testing philosophy, contributing). Every page is kept: none holds only a table of contents (getting-started.md
# explains how to choose a path). The text stays out of the repository.
#   evals/labels/build_molecule_docs.sh /tmp/molecule-docs && executor ingest /tmp/molecule-docs --kb molecule_docs
out=${1:?usage: build_molecule_docs.sh OUT_DIR}
. "$(dirname "$0")/sdist_docs.sh"
sdist_docs "$out" molecule 26.10.0 32533aaba78c29eed80bcaab5d03ff63fe48b8f43071cf77953f391e0732d439 docs
echo "$(find "$out" -name '*.md' | wc -l) pages in $out"
