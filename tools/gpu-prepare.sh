#!/bin/sh
# tools/gpu-prepare.sh — here, before a lent-GPU call: the Debian packages that machine
# lacks (.devdeps, by ../shared/device/fetch-debs.sh) and the Fashion-MNIST files
# (.devdata/fashion-mnist, for tools/gpu-nn.sh); both git-ignored through .git/info/exclude.
set -eu
[ -d .devdeps ] || ../shared/device/fetch-debs.sh
mkdir -p .devdata/fashion-mnist
cp /usr/share/datasets/fashion-mnist/*.gz .devdata/fashion-mnist/
grep -qx '/.devdata/' .git/info/exclude 2>/dev/null || echo '/.devdata/' >> .git/info/exclude
du -sh .devdeps .devdata
