"""One worker of ``bench/symbolic.py``: MXNet 1.9.1's ``train_imagenet.py`` (from
``../shared/mxnet-examples``, unchanged) run in this process under whichever library ``import
mxnet`` finds (mxrs through the shim on PYTHONPATH, or MXNet itself).

Usage: ``python _imagenet_side.py SCRIPT_DIR [train_imagenet.py options]``. Prints one JSON line:
``{"speeds": [samples/s of each Speedometer line]}``.
"""

import json
import logging
import runpy
import sys

speeds = []


class _Speeds(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if "\tSpeed: " in msg:
            speeds.append(float(msg.split("\tSpeed: ")[1].split(" samples/sec")[0]))


def main():
    script_dir, args = sys.argv[1], sys.argv[2:]
    # before the script's basicConfig, which then adds nothing: print its lines as it would
    logging.basicConfig(level=logging.DEBUG)
    logging.getLogger().addHandler(_Speeds())
    sys.path.insert(0, script_dir)
    sys.argv = [f"{script_dir}/train_imagenet.py", *args]
    runpy.run_path(sys.argv[0], run_name="__main__")
    print(json.dumps({"speeds": speeds}), flush=True)


if __name__ == "__main__":
    main()
