"""How often a body of kernels (the same names with the same grids) runs in a row on a
recording's busiest stream: the figures docs/RULES.md gives for C10's loop test
(LOOP_MIN_COPIES). For each recording: its kernels on that stream, the largest number of
copies in a row of any body of up to 64 kernels (and that body's length), and the share of
the kernels inside runs of 8 copies or more.

  python3 tests/golden/loop_copies.py ./gpuwhy tests/fixtures/c10_rnn_loop.gwr ...

Slow (pure Python, minutes on a recording of 100,000 kernels): a tool, not a test."""
import collections
import re
import subprocess
import sys

KEY = re.compile(r"name=(\S+) device=\d+ context=\d+ stream=(\d+) grid_x=(\d+) grid_y=(\d+) grid_z=(\d+)")
START = re.compile(r"start=(\d+)")


def main(gw, paths):
    for path in paths:
        out = subprocess.run([gw, "dump", "--type", "kernel", path], capture_output=True, text=True).stdout
        ks = []
        for line in out.splitlines():
            m, t = KEY.search(line), START.search(line)
            if m and t:
                ks.append((int(t[1]), m[2], (m[1], int(m[3]) * int(m[4]) * int(m[5]))))
        if not ks:
            print(path, "no kernels")
            continue
        ks.sort()
        stream = collections.Counter(k[1] for k in ks).most_common(1)[0][0]
        seq = [k[2] for k in ks if k[1] == stream]
        n, best, best_len, cov = len(seq), 1, 0, [0] * len(seq)
        for p in range(1, 65):
            run = 0
            for i in range(p, n):
                run = run + 1 if seq[i] == seq[i - p] else 0
                if run // p + 1 > best:
                    best, best_len = run // p + 1, p
                if run >= 7 * p:
                    for j in range(i - run - p + 1, i + 1):
                        cov[j] = 1
        print(f"{path.split('/')[-1]}: {n} kernels on its busiest stream; at most {best} copies in a row "
              f"(a body of {best_len}); {100 * sum(cov) / n:.0f}% of the kernels in 8 copies or more")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
