"""Write amplification of an embedded run (issue 18): bytes and syncs per task.

Three views of one `apollo11 run --slots S` of a noop DAG:
- write_bytes: the process's /proc/PID/io write_bytes (ru_oublock x 512 from
  wait4), what the kernel charged it for dirtying page-cache pages. Linux
  6.x charges a whole large folio when one 4 KiB page of it is dirtied, so
  this overstates the bytes a random page write costs the device;
- device: sectors written (and flush requests) of the state dir's block
  device, /sys/dev/block/MAJ:MIN/stat, around the run with sync() before and
  after. The device is shared: the rate of an idle window just before the run
  is subtracted, and the figure is only as good as the machine is quiet;
- syscalls (one more run under `strace -f`): pages written with pwrite and
  durable syncs per file (fdatasync/fsync/msync, plus LMDB's O_DSYNC meta page
  write after each synced commit), i.e. commits and pages per commit.
"""

import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time


def device_stat(path):
    """(sectors written, flushes) of the block device holding `path`, or None."""
    st = os.stat(path)
    name = "/sys/dev/block/%d:%d/stat" % (os.major(st.st_dev), os.minor(st.st_dev))
    try:
        with open(name) as f:
            fields = [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return None
    return fields[6], (fields[15] if len(fields) > 15 else 0)


def run_with_rusage(cmd, timeout):
    """Runs cmd; returns (rc, wall_s, stdout). Its write_bytes land in
    RUSAGE_CHILDREN once it is reaped."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise RuntimeError("timed out after %d s" % timeout)
    return p.returncode, time.perf_counter() - t0, out


def one_run(apollo11, pipeline, slots, state, timeout, extra=()):
    """One measured run: dict with wall_s, write_bytes, device bytes/flushes."""
    os.sync()
    before_idle = device_stat(state)
    time.sleep(2.0)
    base = device_stat(state)
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_oublock
    rc, wall, _ = run_with_rusage(
        [apollo11, "run", pipeline, "--state-dir", state, "--json", "--slots", str(slots)]
        + list(extra), timeout)
    os.sync()
    after = device_stat(state)
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_oublock
    if rc != 0:
        raise RuntimeError("apollo11 run exit %d" % rc)
    res = {"wall_s": wall, "write_bytes": (usage1 - usage0) * 512}
    if before_idle and base and after:
        rate = (base[0] - before_idle[0]) / 2.0  # sectors/s of everything else
        res["device_bytes"] = max(0.0, (after[0] - base[0]) - rate * wall) * 512
        res["device_bytes_raw"] = (after[0] - base[0]) * 512
        frate = (base[1] - before_idle[1]) / 2.0
        res["device_flushes"] = max(0.0, (after[1] - base[1]) - frate * wall)
    return res


PWRITE = re.compile(r'pwrite64\(\d+<([^>]*)>, .*, (\d+), (\d+)\)\s+= (\d+)')
SYNC = re.compile(r'(fdatasync|fsync|msync)\((\d+|0x[0-9a-f]+)(?:<([^>]*)>)?')


def strace_run(apollo11, pipeline, slots, state, timeout, extra=()):
    """Per file (last two path parts): pages written, syncs, meta writes."""
    log = state + ".strace"
    cmd = ["strace", "-f", "-qq", "-y", "-e", "trace=pwrite64,fdatasync,fsync,msync", "-o",
           log, apollo11, "run", pipeline, "--state-dir", state, "--slots", str(slots)] + list(extra)
    # LeakSanitizer cannot run under ptrace: a sanitizer build (the harness
    # smoke test of the ASan build) would abort at exit.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                   check=True, env=env)
    files = {}

    def entry(path):
        key = "/".join(path.split("/")[-2:])
        return files.setdefault(key, {"pages": 0, "syncs": 0, "meta_writes": 0})

    with open(log) as f:
        for line in f:
            m = PWRITE.search(line)
            if m:
                e = entry(m.group(1))
                size, off = int(m.group(2)), int(m.group(3))
                if size < 4096 and off < 8192:
                    e["meta_writes"] += 1
                else:
                    e["pages"] += (size + 4095) // 4096
                continue
            m = SYNC.search(line)
            if m and m.group(3):
                entry(m.group(3))["syncs"] += 1
    os.unlink(log)
    return files


def measure(apollo11, work, pipeline, n, slots, runs, timeout, extra=()):
    """Returns a dict of per-task figures (medians over `runs`), or raises.
    `extra` is appended to every `apollo11 run` command (e.g. --prefetch N)."""
    series = []
    for _ in range(runs):
        state = tempfile.mkdtemp(prefix="wa-", dir=work)
        try:
            series.append(one_run(apollo11, pipeline, slots, state, timeout, extra))
        finally:
            shutil.rmtree(state, ignore_errors=True)
    out = {"tasks": n, "runs": runs,
           "wall_s": statistics.median(r["wall_s"] for r in series),
           "write_bytes_per_task": statistics.median(r["write_bytes"] for r in series) / n}
    if all("device_bytes" in r for r in series):
        out["device_bytes_per_task"] = statistics.median(r["device_bytes"] for r in series) / n
        out["device_bytes_raw_per_task"] = statistics.median(
            r["device_bytes_raw"] for r in series) / n
        out["device_flushes_per_task"] = statistics.median(
            r["device_flushes"] for r in series) / n
    if shutil.which("strace"):
        state = tempfile.mkdtemp(prefix="wa-strace-", dir=work)
        try:
            files = strace_run(apollo11, pipeline, slots, state, timeout, extra)
        finally:
            shutil.rmtree(state, ignore_errors=True)
        out["files"] = files
        journal = files.get("journal/data.mdb", {})
        commits = journal.get("syncs", 0)
        out["journal_commits"] = commits
        out["journal_pages_per_commit"] = journal.get("pages", 0) / commits if commits else None
        # A synced file's meta write is O_DSYNC: a second device flush per commit.
        synced = sum(f["syncs"] + (f["meta_writes"] if f["syncs"] else 0) for f in files.values())
        out["syncs_per_task"] = synced / n
        out["fdatasync_per_task"] = sum(f["syncs"] for f in files.values()) / n
        out["pages_per_task"] = {k: f["pages"] / n for k, f in files.items() if f["pages"]}
    return out


def table_rows(wa, slots):
    """Rows for harness.build_table's table: (section, what, value, peer, ratio,
    target, verdict)."""
    if not wa or "error" in wa:
        why = wa.get("error", "not run") if wa else "not run"
        return [("8", "write amplification, embedded noop DAG", "not measured: " + why)
                + ("",) * 4]
    n = wa["tasks"]
    rows = []
    what = "%d noop tasks, embedded `--slots %d`" % (n, slots)
    if "device_bytes_per_task" in wa:
        kib = wa["device_bytes_per_task"] / 1024.0
        rows.append(("8", what + ": block-device writes per task (net of the idle rate; "
                     "raw %.1f KiB)" % (wa["device_bytes_raw_per_task"] / 1024.0),
                     "%.1f KiB, %.2f device flushes" % (kib, wa["device_flushes_per_task"]), "",
                     "", "<= 8 KiB", "met" if kib <= 8 else "**missed**"))
    rows.append(("8", what + ": /proc/PID/io write_bytes per task",
                 "%.1f KiB" % (wa["write_bytes_per_task"] / 1024.0), "", "", "", ""))
    if "syncs_per_task" in wa:
        pages = ", ".join("%s %.2f" % (k, v) for k, v in sorted(wa["pages_per_task"].items()))
        ppc = wa["journal_pages_per_commit"]
        rows.append(("8", what + ": durable syncs per task (fdatasync/fsync/msync + LMDB "
                     "O_DSYNC meta writes; strace -f)",
                     "%.3f (fdatasync %.3f); %d journal commits, %s pages per commit; "
                     "4 KiB pages written per task: %s" % (
                         wa["syncs_per_task"], wa["fdatasync_per_task"], wa["journal_commits"],
                         "%.1f" % ppc if ppc else "n/a", pages),
                     "", "", "<= 0.05", "met" if wa["syncs_per_task"] <= 0.05 else "**missed**"))
    return rows
