#!/bin/sh
# Build the folder for a sixth held-out label set (issue 27; labels: structlog-docs.yaml): the Markdown pages of
# structlog's documentation shipped in the PyPI sdist of structlog 26.1.0 (MIT OR Apache-2.0), pinned by version and
# SHA-256. Written by helper labels23, 2026-12-07, before Executor was run on this corpus.
# Layout: OUT/PATH.md, PATH relative to the sdist's docs/ (20 pages: getting started, bound loggers, configuration,
# processors, context variables, exceptions, console output, testing, type hints, frameworks, standard library,
# Twisted, recipes, logging best practices, performance, the deprecated thread-local context, why, glossary, licence,
# index). Every page is kept: index.md introduces each part of the guide in its own words beside its tables of
# contents. api.rst (reStructuredText, autodoc directives) is not Markdown and not copied. The text stays out of the
# repository.
#   evals/labels/build_structlog_docs.sh /tmp/structlog-docs && executor ingest /tmp/structlog-docs --kb structlog_docs
out=${1:?usage: build_structlog_docs.sh OUT_DIR}
. "$(dirname "$0")/sdist_docs.sh"
sdist_docs "$out" structlog 26.1.0 f63a716cbd1b1291cf7661de7794b455acfa4c43c5bcf1630e6ad5ddc1adb3b7 docs
echo "$(find "$out" -name '*.md' | wc -l) pages in $out"
