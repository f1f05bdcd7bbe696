#!/usr/bin/env bash
# Unpacks xz-compressed binaries next to themselves, executable (GPU calls carry the release
# binaries compressed: the carried tree has a size limit). python3's lzma: no xz needed.
for f in "$@"; do
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[1][:-3], "wb"))' "$f" && chmod +x "${f%.xz}"
done
