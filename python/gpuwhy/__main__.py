"""`python -m gpuwhy ARGS` and the `gpuwhy` console script: run the bundled
binary in place of this process (it finds its injection libraries next to
itself, in ../lib/gpuwhy)."""
import os
import sys

from . import binary


def main():
    exe = binary()
    try:
        os.execv(exe, ["gpuwhy"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("gpuwhy: cannot run %s: %s (reinstall the gpuwhy wheel)\n" % (exe, e))
        return 127
    return 0


if __name__ == "__main__":
    sys.exit(main())
