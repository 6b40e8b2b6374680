#!/usr/bin/env bash
# A virtualenv with NumPy 1.x that imports the mxrs installed in ./.venv: MXNet 1.9.1's example
# scripts (../shared/mxnet-examples) read MNIST with np.fromstring, which NumPy 2 removed.
# (train_mnist.py imports requests even when its data is present; OpenCV decodes the images of
# train_imagenet.py's ImageRecordIter, in a release built for NumPy 1.x.)
# Usage: scripts/np1-venv.sh [DIR]   (default .venv-np1; ./.venv must hold mxrs already)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.venv-np1}
SITE=$(.venv/bin/python -c 'import mxrs, os; print(os.path.dirname(os.path.dirname(mxrs.__file__)))')
[ -x "$DIR/bin/python" ] || python3 -m venv "$DIR"
"$DIR/bin/python" -c 'import numpy, tqdm, requests, ml_dtypes, cv2, sys; sys.exit(numpy.__version__ >= "2")' 2>/dev/null ||
  "$DIR/bin/python" -m pip install -q 'numpy<2' 'tqdm>=4.60' requests 'ml_dtypes>=0.4' \
    'opencv-python-headless>=4.8'
# oneDNN's kernels, as .venv has them: the wheel puts libdnnl.so.3 in the environment's lib,
# where mxrs looks for it
if [ "$(uname -sm)" = "Linux x86_64" ] && [ ! -e "$DIR/lib/libdnnl.so.3" ]; then
  "$DIR/bin/python" -m pip install -q 'onednn-cpu-gomp>=2023.2'
fi
# only mxrs is shared with ./.venv: a directory holding a link to it, on the path by a .pth file
LINKS="$PWD/$DIR/mxrs-only"
mkdir -p "$LINKS"
ln -sfn "$SITE/mxrs" "$LINKS/mxrs"
NP1_SITE=$("$DIR/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$LINKS" > "$NP1_SITE/mxrs-only.pth"
"$DIR/bin/python" -c 'import mxrs, numpy; print("mxrs", mxrs.__version__, "numpy", numpy.__version__, "kernels", mxrs.kernels.provider_name())'
