#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make bench's skewed-node section (alone: make bench-skew): how far the
loader's static sizing leaves a job's ranks from the node's ideal.

Usage: tests/perf/skew.py BUILD [IMAGES [ROUNDS [noisy]]]
       ("noisy": the calibration and the noisy-neighbour runs alone)

In synchronous data-parallel training every step waits for the slowest
rank. Two ranks of one job run on this node, kept in step after every
batch as DDP's all-reduce keeps them (bench --lockstep), each a shard of
IMAGES (default 1200) samples, with one rank given more work per
sample: rank 0 reads a data set of JPEGs at quality 90 (dlcachectl gen's
default), rank 1 the same images at quality 100, about twice the decode
work each. Runs, ROUNDS times (default 3) interleaved, medians counted,
every run 3 epochs of which epochs 1 and 2 count (epoch 0 fills the
in-process cache):

  calibrate  each rank's loader alone on one CPU (taskset), no step pace:
             its CPU time per sample (getrusage of the process), the
             work a sample of that rank costs
  ideal      what the two cores give when the work is shared perfectly:
             steps/s = CPUs / (the CPU time a step costs both ranks)
  static     the two ranks in step, each bound to its own CPU as
             launchers bind ranks (taskset -c 0, -c 1), each loader sized
             by the library's default (decode threads: its CPUs less one,
             at least one, plus the I/O thread)
  unbound    the same without taskset: the scheduler moves the ranks'
             threads between the cores, so the cores are shared; shown
             for comparison (a launcher that binds ranks does not get it)

  noisy      static and shared again, longer (NOISY_EPOCHS epochs), with
             a CPU hog (a busy loop at normal priority, bound to rank 1's
             CPU) started halfway: the job's steps/s before it, in the 5 s
             after it and after those, against the ideal of what the hog
             leaves (2 CPUs less the hog's measured share), and the time
             until a 2-s window of steps first reaches 0.9 of that ideal
             (the job's steps come from the lockstep file, every 50 ms)

and, for the single-loader case, one loader of the quality-90 set with
no binding, its consumer paced (bench --step-ms) at half the rate that
loader reaches unpaced, at decode threads 1, 2 and 4 and the default:
the CPU time per sample of each, against the smallest.

Output: BUILD/bench/skew.md (the tables, the ratios) and skew.json; the
runs' JSON in BUILD/bench/raw/skew/. A run that fails stops the section
with its command and stderr.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

EPOCHS = 3
NOISY_EPOCHS = 24
BATCH = 32


def log(msg):
    print("skew: " + msg, file=sys.stderr, flush=True)


def die(msg):
    log(msg)
    sys.exit(1)


def proc_cpu(pid):
    """(state, utime + stime in seconds) of @pid, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    # utime and stime are fields 14 and 15 of stat(5).
    return fields[0], (int(fields[11]) + int(fields[12])) / os.sysconf(
        "SC_CLK_TCK")


def interp(line, t):
    """The value of @line, [(t, v)] in time order, at @t: interpolated
    between samples, its first or last value outside them."""
    if t <= line[0][0]:
        return line[0][1]
    for (t0, v0), (t1, v1) in zip(line, line[1:]):
        if t <= t1:
            return v0 + (v1 - v0) * (t - t0) / max(t1 - t0, 1e-9)
    return line[-1][1]


class Run:
    """One dlcachectl bench process: its JSON and its CPU time."""

    def __init__(self, argv, cpus=None):
        self.argv = (["taskset", "-c", cpus] if cpus is not None else []) + argv
        self.proc = None
        self.out = None

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.cpu_line = []
        self.sampler = threading.Thread(target=self.sample_cpu)
        self.sampler.start()

    def sample_cpu(self):
        """(CLOCK_MONOTONIC, CPU seconds of all its threads) every 20 ms,
        from /proc/PID/stat, until the process has exited."""
        while True:
            try:
                state, cpu = proc_cpu(self.proc.pid)
            except OSError:
                return
            if state == "Z":
                return
            self.cpu_line.append((time.monotonic(), cpu))
            time.sleep(0.02)

    def cpu_at(self, t):
        """CPU seconds used by @t (interpolated between samples)."""
        return interp(self.cpu_line, t) if self.cpu_line else 0.0

    def steady_cpu(self):
        """CPU seconds of the counted epochs (1..): the bench's epochs
        carry their start on CLOCK_MONOTONIC, as time.monotonic()."""
        eps = self.out["epochs"]
        t0 = eps[1]["start_s"]
        t1 = eps[-1]["start_s"] + eps[-1]["seconds"]
        return self.cpu_at(t1) - self.cpu_at(t0)

    def wait(self):
        # Both pipes drained before the child is reaped: a full pipe
        # would block it.
        errs = []
        t = threading.Thread(target=lambda: errs.append(self.proc.stderr.read()))
        t.start()
        out = self.proc.stdout.read()
        t.join()
        err = errs[0]
        _, status, _ = os.wait4(self.proc.pid, 0)
        self.sampler.join()
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if self.proc.returncode != 0:
            die("%s: exit %d: %s" % (" ".join(self.argv),
                                    self.proc.returncode, err.strip()))
        self.out = json.loads(out)
        return self


def steady(b):
    """Images and seconds of the counted epochs (1..)."""
    eps = b["epochs"][1:]
    return sum(e["images"] for e in eps), sum(e["seconds"] for e in eps)


def bench(ctl, idx, extra, cpus=None, epochs=EPOCHS):
    return Run([ctl, "bench", idx, "--epochs", str(epochs), "--batch-size",
                str(BATCH), "--json"] + extra, cpus)


def drop_group(extra):
    """Remove a --node-group's segment, should a loader have left it."""
    if extra:
        try:
            os.unlink("/dev/shm/dlcache-node-%d-%s" % (os.geteuid(), extra[1]))
        except OSError:
            pass


def noisy_run(ctl, sets, binds, extra, hog_cpu, half):
    """Two ranks in step for NOISY_EPOCHS epochs; a busy loop bound to
    @hog_cpu starts once the job has done @half steps. Returns the job's
    steps over time [(t, steps)], the hog's start, its CPU share from
    then on, and the two runs."""
    with tempfile.TemporaryDirectory() as t:
        ls = os.path.join(t, "lockstep")
        runs = [bench(ctl, sets[name], ["--world", "2", "--rank", str(r),
                                        "--lockstep", ls] + extra,
                      binds[r], NOISY_EPOCHS)
                for r, name in enumerate(("q90", "q100"))]
        for b in runs:
            b.start()
        line, hog, hog_t = [], None, None
        try:
            # The file holds each rank's batches done (u64), then a seq
            # word (dlcachectl bench --lockstep).
            # Not poll(): Run.wait() reaps the child itself.
            while any(os.waitid(os.P_PID, b.proc.pid, os.WEXITED |
                                os.WNOHANG | os.WNOWAIT) is None
                      for b in runs):
                try:
                    with open(ls, "rb") as f:
                        w = f.read(16)
                except OSError:
                    w = b""
                if len(w) == 16:
                    steps = min(int.from_bytes(w[0:8], "little"),
                                int.from_bytes(w[8:16], "little"))
                    line.append((time.monotonic(), steps))
                    if hog is None and steps >= half:
                        hog = subprocess.Popen(
                            ["taskset", "-c", str(hog_cpu), sys.executable,
                             "-c", "while True: pass"])
                        hog_t = time.monotonic()
                time.sleep(0.05)
            hog_share = None
            if hog is not None:
                hog_share = proc_cpu(hog.pid)[1] / max(
                    time.monotonic() - hog_t, 1e-9)
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
        for b in runs:
            b.wait()
    return line, hog_t, hog_share, runs


def rate(line, t0, t1):
    """Steps/s of @line between @t0 and @t1 (interpolated)."""
    return (interp(line, t1) - interp(line, t0)) / max(t1 - t0, 1e-9)


def recovery(line, t0, end, target):
    """Seconds after @t0 until a 2-s window of @line first reaches
    @target steps/s; None if none does before @end."""
    d = 0.0
    while t0 + d + 2 <= end:
        if rate(line, t0 + d, t0 + d + 2) >= target:
            return d
        d += 0.1
    return None


def noisy_md(res, c0, c1, ideal):
    """The noisy-neighbour table: medians of the rounds."""
    md = ["",
          "Noisy neighbour: the same two bound ranks for %d epochs, a busy "
          "loop on rank 1's CPU from halfway; \"left\" is the ideal of the "
          "2 CPUs less the hog's measured share, \"recovered\" the time "
          "until a 2-s window reaches 0.9 of it:" % NOISY_EPOCHS,
          "",
          "| run | steps/s before | vs ideal | hog's CPUs | left: steps/s | "
          "first 5 s vs left | after vs left | recovered in |",
          "|---|---|---|---|---|---|---|---|"]
    out = {}
    for kind, name in (("noisy_static", "static"), ("noisy_shared", "shared")):
        rows = res[kind]
        left = [(2.0 - r["hog_share"]) / (BATCH * (c0 + c1)) for r in rows]
        rec = [recovery(r["line"], r["hog_t"], r["end"], 0.9 * lf)
               for r, lf in zip(rows, left)]
        m = {"before": statistics.median(r["before"] for r in rows),
             "hog_share": statistics.median(r["hog_share"] for r in rows),
             "left": statistics.median(left),
             "first5_vs_left": statistics.median(
                 r["first5"] / lf for r, lf in zip(rows, left)),
             "after_vs_left": statistics.median(
                 r["after"] / lf for r, lf in zip(rows, left)),
             "recovered_s": rec}
        out[name] = m
        got = [x for x in rec if x is not None]
        md.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |" % (
            name, m["before"], m["before"] / ideal, m["hog_share"], m["left"],
            m["first5_vs_left"], m["after_vs_left"],
            "%.1f s (%d of %d rounds)" % (statistics.median(got), len(got),
                                         len(rec)) if got else "never"))
    return md, out


def main_md(res, single, ideal, med, images):
    """The skewed-node and single-loader tables."""
    st, ub = med(res["static"], "steps_per_s"), med(res["unbound"], "steps_per_s")
    sh = med(res["shared"], "steps_per_s")
    rows = [
        ("ideal: the CPU work of a step over 2 CPUs", None, None, ideal),
        ("static: each rank bound to its CPU, default sizing",
         med(res["static"], "rank_images_per_s", 0),
         med(res["static"], "rank_images_per_s", 1), st),
        ("shared: the same, --node-group (guests at SCHED_IDLE)",
         med(res["shared"], "rank_images_per_s", 0),
         med(res["shared"], "rank_images_per_s", 1), sh),
        ("unbound: the scheduler shares the CPUs",
         med(res["unbound"], "rank_images_per_s", 0),
         med(res["unbound"], "rank_images_per_s", 1), ub),
    ]
    md = ["",
          "| run | rank 0 images/s | rank 1 images/s | job steps/s | vs ideal |",
          "|---|---|---|---|---|"]
    for name, r0, r1, sp in rows:
        md.append("| %s | %s | %s | %.2f | %.2f |" % (
            name, "-" if r0 is None else "%.0f" % r0,
            "-" if r1 is None else "%.0f" % r1, sp, sp / ideal))
    base = min(statistics.median(x["cpu_per_image"] for x in single[t])
               for t in ("1", "2", "4", "default"))
    md += ["",
           "Shared: rank 1's guests decoded %.0f of its %d samples of the "
           "counted epochs on rank 0's CPU (median); rank 0's %.0f."
           % (med(res["shared"], "guest_decodes", 1), images // 2 * (EPOCHS - 1),
              med(res["shared"], "guest_decodes", 0))]
    md += ["",
           "One loader, consumer paced at half its unpaced %.0f images/s "
           "(--step-ms %d), no binding:" % (single["unpaced_images_per_s"],
                                            single["step_ms"]),
           "",
           "| decode threads | images/s | CPU ms a sample | vs the least |",
           "|---|---|---|---|"]
    for t in ("1", "2", "4", "default"):
        c = statistics.median(x["cpu_per_image"] for x in single[t])
        md.append("| %s | %.0f | %.3f | %.2f |" % (
            # bench's "threads" counts the I/O thread too.
            t if t != "default" else "default (%d)" %
            (single[t][0]["threads"] - 1),
            statistics.median(x["images_per_s"] for x in single[t]),
            c * 1e3, c / base))
    return md, {"static_vs_ideal": st / ideal, "shared_vs_ideal": sh / ideal,
                "unbound_vs_ideal": ub / ideal}


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    images = int(sys.argv[2]) if len(sys.argv) > 2 else 1200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    noisy_only = len(sys.argv) > 4 and sys.argv[4] == "noisy"
    ctl = os.path.join(build, "dlcachectl")
    if not os.access(ctl, os.X_OK):
        die("%s is missing (make tools)" % ctl)
    ncpu = len(os.sched_getaffinity(0))
    if ncpu < 2:
        die("needs 2 CPUs, has %d" % ncpu)
    cpu0, cpu1 = sorted(os.sched_getaffinity(0))[:2]
    work = os.path.join(build, "bench-skew")
    raw = os.path.join(build, "bench", "raw", "skew")
    os.makedirs(raw, exist_ok=True)
    sets = {}
    for name, q in (("q90", 90), ("q100", 100)):
        d = os.path.join(work, "%s-%d" % (name, images))
        subprocess.run([ctl, "gen", d, "--images", str(images), "--classes",
                        "10", "--quality", str(q)], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([ctl, "index", d, "-o", d + ".idx"], check=True,
                       stdout=subprocess.DEVNULL)
        sets[name] = d + ".idx"
    log("data sets: %d images each at quality 90 and 100; %d rounds, "
        "2 of %d CPUs (%d, %d)" % (images, rounds, ncpu, cpu0, cpu1))

    res = {k: [] for k in ("cal0", "cal1", "static", "shared", "unbound",
                           "noisy_static", "noisy_shared")}
    half = NOISY_EPOCHS * -(-(images // 2) // BATCH) // 2
    single = {}
    for rnd in range(rounds):
        # Each rank alone on one CPU: the work a sample costs it.
        for r, name in enumerate(("q90", "q100")):
            b = bench(ctl, sets[name], ["--world", "2", "--rank", str(r)],
                      str(cpu0))
            b.start()
            b.wait()
            n, s = steady(b.out)
            res["cal%d" % r].append({"cpu_per_image": b.steady_cpu() / n,
                                     "images_per_s": n / s})
        group = ["--node-group", "skew-%d-%d" % (os.getpid(), rnd)]
        # A CPU hog on rank 1's CPU halfway through.
        for kind, extra in (("noisy_static", []), ("noisy_shared", group)):
            line, hog_t, share, runs = noisy_run(
                ctl, sets, (str(cpu0), str(cpu1)), extra, cpu1, half)
            if hog_t is None:
                die("%s: the job ended before the hog started" % kind)
            end = min(t for t, n in line if n == line[-1][1])
            res[kind].append({"before": rate(line, hog_t - 4, hog_t),
                              "first5": rate(line, hog_t, hog_t + 5),
                              "after": rate(line, hog_t + 5, end),
                              "hog_share": share, "hog_t": hog_t,
                              "end": end, "line": line})
            drop_group(extra)
            with open(os.path.join(raw, "%s-%d.json" % (kind, rnd)), "w") as f:
                json.dump([b.out for b in runs], f)
        if noisy_only:
            log("round %d of %d done" % (rnd + 1, rounds))
            continue
        # The two ranks in step, bound and unbound.
        for kind, binds, extra in (
                ("static", (str(cpu0), str(cpu1)), []),
                ("shared", (str(cpu0), str(cpu1)), group),
                ("unbound", (None, None), [])):
            with tempfile.TemporaryDirectory() as t:
                ls = os.path.join(t, "lockstep")
                runs = [bench(ctl, sets[name], ["--world", "2", "--rank",
                                                str(r), "--lockstep",
                                                ls] + extra,
                              binds[r])
                        for r, name in enumerate(("q90", "q100"))]
                for b in runs:
                    b.start()
                for b in runs:
                    b.wait()
            rates = [steady(b.out) for b in runs]
            # In step, the job's pace is its slower rank's.
            secs = max(s for _, s in rates)
            steps = rates[0][0] / BATCH
            res[kind].append({"steps_per_s": steps / secs,
                              "rank_images_per_s": [n / s for n, s in rates],
                              "guest_decodes": [
                                  sum(e["node_guest_decodes"]
                                      for e in b.out["epochs"][1:])
                                  for b in runs]})
            drop_group(extra)
            with open(os.path.join(raw, "%s-%d.json" % (kind, rnd)), "w") as f:
                json.dump([b.out for b in runs], f)
        # One loader, its consumer at half its unpaced rate.
        if rnd == 0:
            b = bench(ctl, sets["q90"], [])
            b.start()
            b.wait()
            n, s = steady(b.out)
            single["unpaced_images_per_s"] = n / s
            single["step_ms"] = max(1, round(2000.0 * BATCH * s / n))
        for th in ("1", "2", "4", "default"):
            extra = ["--step-ms", str(single["step_ms"])]
            if th != "default":
                extra += ["--threads", th]
            b = bench(ctl, sets["q90"], extra)
            b.start()
            b.wait()
            n, s = steady(b.out)
            single.setdefault(th, []).append(
                {"cpu_per_image": b.steady_cpu() / n, "images_per_s": n / s,
                 "threads": b.out.get("threads")})
        log("round %d of %d done" % (rnd + 1, rounds))

    def med(lst, key, i=None):
        return statistics.median(x[key] if i is None else x[key][i]
                                 for x in lst)

    # The work a sample costs: the seconds of its one dedicated CPU, which
    # the loader alone keeps busy (its CPU time is printed beside it).
    c0 = 1.0 / med(res["cal0"], "images_per_s")
    c1 = 1.0 / med(res["cal1"], "images_per_s")
    # A step is BATCH samples on each rank.
    ideal = 2.0 / (BATCH * (c0 + c1))
    md = ["## Skewed node: two ranks of one job in step (tests/perf/skew.py)",
          "",
          "%d rounds, medians; each rank a shard of %d images; rank 1's "
          "samples cost %.2fx rank 0's: %.2f against %.2f ms each of one "
          "CPU, alone on it (CPU time %.2f and %.2f ms a sample)."
          % (rounds, images // 2, c1 / c0, c1 * 1e3, c0 * 1e3,
             med(res["cal1"], "cpu_per_image") * 1e3,
             med(res["cal0"], "cpu_per_image") * 1e3)]
    summary = {}
    if not noisy_only:
        md2, summary = main_md(res, single, ideal, med, images)
        md += md2
    nmd, noisy = noisy_md(res, c0, c1, ideal)
    md += nmd
    out = os.path.join(build, "bench")
    with open(os.path.join(out, "skew.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "skew.json"), "w") as f:
        json.dump(dict({"images": images, "rounds": rounds, "raw": res,
                        "single": single, "ideal_steps_per_s": ideal,
                        "noisy": noisy}, **summary), f, indent=1)
    print("\n".join(md))


if __name__ == "__main__":
    main()
