# Sourced by the build_*_docs.sh scripts: the held-out corpora are the Markdown documentation shipped in PyPI
# sdists, each pinned by version and SHA-256, so that every checker builds the same folder. The text stays out of
# the repository.
set -euf  # -f: the exclusion patterns are find's, not the shell's
pip=${PIP:-python3 -m pip}
sdist_tmp=$(mktemp -d)
trap 'rm -rf "$sdist_tmp"' EXIT

# sdist_docs OUT PACKAGE VERSION SHA256 DOCS [EXCLUDED...]: copy every .md page under DOCS (a folder of the sdist)
# into OUT, keeping its path below DOCS; EXCLUDED are `find -path` patterns relative to DOCS (./index.md, */x.md).
sdist_docs() {
  # sh has no local variables: these names are the function's own
  sd_out=$1 sd_src=$sdist_tmp/$2-$3/$5 sd_tarball=$2-$3.tar.gz sd_spec=$2==$3 sd_sha=$4
  shift 5
  n=$#
  while [ "$n" -gt 0 ]; do  # each pattern becomes ! -path PATTERN
    set -- "$@" ! -path "$1"
    shift
    n=$((n - 1))
  done
  $pip download --quiet --no-binary :all: --no-deps -d "$sdist_tmp" "$sd_spec"
  (cd "$sdist_tmp" && echo "$sd_sha  $sd_tarball" | sha256sum -c --quiet && tar xzf "$sd_tarball")
  (cd "$sd_src" && find . -name '*.md' "$@") |
    while read -r f; do
      mkdir -p "$sd_out/$(dirname "$f")"
      cp "$sd_src/$f" "$sd_out/$f"
    done
}
