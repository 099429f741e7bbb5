"""What ceql costs on Spark, side by side in one run: start-up and a tiny job, a floor job and
``find()``, streaming against batch, the local engine; with local[1] and local[2].

    python -m benchmarks.spark_cost [--events 1000000] [--masters local[1],local[2]]

Per master, in a fresh process (its own driver, JVM and Python workers):
- **start-up**: ``ceql.spark.session()`` until it returns (JVM and SparkContext);
- **tiny**: then, cold, ``find`` on 7 events collected (the first job pays for the Python
  daemon and workers), and again warm; the fixed cost of a small job;
- **CLI tiny**: ``ceql run --engine spark`` on the same 7 events, a process of its own, against
  a process that only starts and stops a session (both whole processes);
- **floor**: read the Parquet files, group by the partition key, ``applyInArrow`` returning a
  count per group, write: the least any per-key evaluation on Spark costs;
- **find**: ``find`` on a partitioned query with about 300,000 matches (``MANY``), each written
  with the ids of its events, as Parquet, in the nested layout (the default) and with
  ``layout="flat"``; and the same into Spark's ``noop`` sink (find's cost without Parquet's
  writer, which the floor hardly uses: it writes a row per key);
- **jobs**: the Spark jobs, stages that ran and their tasks, of the floor, find and the
  stream (``jobs_of``: Spark's status tracker), after the timed runs;
- **batch (time) / stream (time)**: a query with a time window, by ``find`` on the files and as a
  stream over the same files (``trigger(availableNow=True)``), both written as Parquet;
- **users** (``--users`` events, 60,000 user keys, ``users()``): the funnel LOGIN -> FAIL ->
  PURCHASE > 500 per user within 30 minutes by ``find`` and by a hand-written self-join (the
  same complex events), and LOGIN NOT FOLLOWED BY PURCHASE per user (``ABSENCE``), each against
  the local engine's CPU on the same rows, and NOT FOLLOWED BY against a keyed floor on them
  (users hashed into the shuffle's partitions, an Arrow task per partition counting rows); and the funnel's steps in a row per user as
  MATCH_RECOGNIZE (``RECOGNIZE``) by ``ceql.spark.sql`` against ``ceql.sql.run``.

Figures are CPU seconds of the whole process tree (driver, JVM, Python daemon and workers; from
/proc, sampled so that a process that ends is still counted: ``TreeSampler``), wall seconds in brackets; ratios are of CPU seconds. Each measured job first runs once on
5,000 rows, written as it is measured, so that none pays for starting workers or for the JVM
compiling its code paths (the nested Parquet writer's first use costs about 3 CPU s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANY = """SELECT * FROM S
WHERE SELL AS s; BUY AS b
FILTER s[name = 'MSFT']
PARTITION BY [volume]
WITHIN 22000 [stock_time]"""
TIME_QUERY = """SELECT * FROM S
WHERE (SELL AS msft; (BUY OR SELL) AS oracle; (BUY OR SELL) AS csco; SELL AS amat)
FILTER msft[name = 'MSFT'] AND oracle[name = 'ORCL'] AND csco[name = 'CSCO'] AND amat[name = 'AMAT']
PARTITION BY [volume]
WITHIN 10 SECONDS"""
TIME_DECLARATION = """CREATE STREAM S {
EVENT BUY { id:int, name:string, volume:int, price:double, stock_time:primary_time(ms) },
EVENT SELL { id:int, name:string, volume:int, price:double, stock_time:primary_time(ms) }
}"""
TINY = [("SELL", 1, "INTC", 100, 1.0, 10), ("BUY", 2, "RIMM", 100, 1.0, 20), ("BUY", 3, "QQQ", 100, 1.0, 30),
        ("SELL", 4, "INTC", 200, 1.0, 40), ("BUY", 5, "RIMM", 200, 1.0, 50), ("BUY", 6, "QQQ", 200, 1.0, 60),
        ("BUY", 7, "QQQ", 100, 1.0, 70)]  # fmt: skip
TINY_QUERY = (
    "SELECT * FROM S WHERE SELL AS a; BUY AS b; BUY AS c FILTER a[name = 'INTC'] PARTITION BY [volume]"
)
FILES = 8
USERS_DECLARATION = """CREATE STREAM S {
EVENT LOGIN { user_id:int, amount:double, ts:primary_time(ms) },
EVENT FAIL { user_id:int, amount:double, ts:primary_time(ms) },
EVENT PURCHASE { user_id:int, amount:double, ts:primary_time(ms) }
}"""
FUNNEL = (
    "SELECT * FROM S WHERE LOGIN AS l; FAIL AS f; PURCHASE AS p FILTER p[amount > 500] "
    "PARTITION BY [user_id] WITHIN 30 MINUTES"
)
ABSENCE = "SELECT * FROM S WHERE LOGIN AS l NOT FOLLOWED BY PURCHASE AS p PARTITION BY [user_id] WITHIN 30 MINUTES"
USER_KEYS = 60_000
# The funnel's three steps in a row per user, as MATCH_RECOGNIZE (``ceql.spark.sql``).
RECOGNIZE = (
    "SELECT * FROM ev MATCH_RECOGNIZE (PARTITION BY user_id ORDER BY ts, id MEASURES L.id AS l, F.id AS f, "
    "P.id AS p ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (L F P) DEFINE L AS L.event_type = 'LOGIN', "
    "F AS F.event_type = 'FAIL', P AS P.event_type = 'PURCHASE' AND P.amount > 500)"
)


def users(events: int, keys: int = USER_KEYS, seed: int = 12):
    """User events in time order: a random user each, LOGIN / FAIL / PURCHASE, amounts up to
    1,000, 10 ms apart on average (so a user's 30 minutes hold about three of their events)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    kinds = np.array(["LOGIN", "FAIL", "PURCHASE"])
    return pa.table(
        {
            "event_type": kinds[rng.choice(3, events, p=[0.4, 0.3, 0.3])],
            "id": np.arange(events, dtype=np.int64),
            "user_id": rng.integers(0, keys, events),
            "amount": np.round(rng.random(events) * 1000, 2),
            "ts": np.cumsum(rng.integers(0, 21, events)).astype(np.int64),
        }
    )


def self_join(frame):
    """The funnel as a Spark engineer writes it: a self-join per user, each step after the
    previous (equal times in the input order, ``id``), the PURCHASE within 30 minutes of the
    LOGIN (the window admits spans below 30 minutes, as WITHIN does)."""
    from pyspark.sql import functions as F

    def step(kind: str, name: str):
        return frame.where(F.col("event_type") == kind).select(
            F.col("user_id"), F.col("ts").alias(f"{name}_ts"), F.col("id").alias(f"{name}_id"), F.col("amount").alias(f"{name}_amount")
        )

    logins, fails = step("LOGIN", "l"), step("FAIL", "f")
    purchases = step("PURCHASE", "p").where(F.col("p_amount") > 500)
    return (
        logins.join(fails, "user_id")
        .where(F.col("f_id") > F.col("l_id"))
        .join(purchases, "user_id")
        .where((F.col("p_id") > F.col("f_id")) & (F.col("p_ts") - F.col("l_ts") < 30 * 60 * 1000))
        .select("l_id", "f_id", "p_id")
    )


def _processes(own: bool = False) -> tuple[dict[int, int], dict[int, float]]:
    """Parent and CPU seconds (user and system, with the reaped children's unless ``own``) of
    every process."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        times[pid] = sum(int(x) for x in fields[11 : 13 if own else 15]) / tick  # utime stime [cutime cstime]
    return parents, times


def _tree(root: int, own: bool = False) -> dict[int, float]:
    parents, times = _processes(own)
    found, stack = {}, [root]
    while stack:
        pid = stack.pop()
        if pid in times:
            found[pid] = times[pid]
        stack.extend(p for p, parent in parents.items() if parent == pid)
    return found


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds of a process and all its descendants (alive ones, and the reaped children
    they account for)."""
    return sum(_tree(root or os.getpid()).values())


class TreeSampler:
    """The CPU seconds of this process's tree, never losing a process: a thread samples the own
    CPU (no reaped children) of every process in the tree every ``every`` seconds and keeps the
    last sample of each (by pid and start time). A difference of two ``total()`` readings is
    then never negative: the difference of two ``tree_cpu()`` readings was, when a process left
    the tree between them without its CPU being added to a member's reaped children (a Python
    worker or daemon that Spark ends while a job runs). It undercounts a process by at most the
    CPU of its last ``every`` seconds, and misses processes that live less than that."""

    def __init__(self, every: float = 0.2) -> None:
        import threading

        self.every = every
        self.seen: dict[tuple[int, str], float] = {}
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        root, tick = os.getpid(), os.sysconf("SC_CLK_TCK")
        stats: dict[int, list[str]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        stats[int(entry)] = handle.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
        children: dict[int, list[int]] = {}
        for pid, fields in stats.items():
            children.setdefault(int(fields[1]), []).append(pid)
        stack = [root]
        with self.lock:
            while stack:
                pid = stack.pop()
                fields = stats.get(pid)
                if fields is not None:  # utime, stime; start time (field 22) tells pids apart
                    key = (pid, fields[19])
                    self.seen[key] = max(self.seen.get(key, 0.0), (int(fields[11]) + int(fields[12])) / tick)
                stack.extend(children.get(pid, ()))

    def _run(self) -> None:
        while True:
            self._sample()
            time.sleep(self.every)

    def total(self) -> float:
        """CPU seconds of every process seen in the tree so far (sampled now)."""
        self._sample()
        with self.lock:
            return sum(self.seen.values())


_SAMPLER: TreeSampler | None = None


def measured(action) -> tuple[float, float]:
    """(CPU s of the process tree, wall s) of ``action()`` (``TreeSampler``)."""
    global _SAMPLER
    if _SAMPLER is None:
        _SAMPLER = TreeSampler()
    cpu, wall = _SAMPLER.total(), time.perf_counter()
    action()
    return round(_SAMPLER.total() - cpu, 2), round(time.perf_counter() - wall, 2)


def jobs_of(spark, action) -> tuple[int, int, int]:
    """(Spark jobs, stages that ran, tasks) of ``action()``, from the status tracker: the jobs
    that started while it ran (this process runs one thing at a time; a stream's micro-batches
    run on its own thread, so a job group would miss them). Skipped stages (a shuffle's map
    output reused) are not counted."""
    tracker = spark.sparkContext.statusTracker()

    def known() -> set[int]:
        ids: set[int] = set()
        for group in [None, *_groups(spark)]:
            ids.update(tracker.getJobIdsForGroup(group))
        return ids

    before = known()
    action()
    jobs = sorted(known() - before)
    stages = tasks = 0
    for job in jobs:
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            found = tracker.getStageInfo(stage)
            if found is not None and found.numCompletedTasks:
                stages += 1
                tasks += found.numTasks
    return len(jobs), stages, tasks


def _groups(spark) -> list[str]:
    """The job groups of the session's streaming queries (a stream's jobs run in its run id's group)."""
    return [str(query.runId) for query in spark.streams.active] + _PAST_RUNS


_PAST_RUNS: list[str] = []


def run_master(master: str, data: str, out: str, user_data: str = "") -> dict:
    """Every in-session figure for one master, in this (fresh) process."""
    import pyarrow as pa

    from benchmarks.generators import STOCK_DECLARATION

    figures: dict = {"master": master}
    holder: dict = {}

    def start() -> None:
        from ceql.spark import session

        holder["spark"] = session(master, progress=False, **{"spark.sql.shuffle.partitions": master[6:-1]})

    figures["startup"] = measured(start)
    spark = holder["spark"]
    from ceql.spark import find

    tiny = spark.createDataFrame(
        TINY, "event_type string, id long, name string, volume long, price double, stock_time long"
    )

    def tiny_job() -> None:
        holder["tiny"] = len(find(tiny, TINY_QUERY, STOCK_DECLARATION, tie_break="id").collect())

    figures["tiny_cold"] = measured(tiny_job)
    figures["tiny_warm"] = measured(tiny_job)
    figures["tiny_matches"] = holder["tiny"]
    frame = spark.read.parquet(data)
    schema = frame.schema

    def count_group(table: pa.Table) -> pa.Table:
        return pa.table({"volume": [table.column("volume")[0].as_py()], "n": [table.num_rows]})

    def floor(source=frame, target: str = "floor") -> None:
        counted = source.groupBy("volume").applyInArrow(count_group, "volume long, n long")
        counted.write.mode("overwrite").parquet(f"{out}/{target}")

    def many(source=frame, target: str = "find", layout: str = "nested") -> None:
        found = find(source, MANY, STOCK_DECLARATION, tie_break="id", id_columns=["id"], layout=layout)
        found.write.mode("overwrite").parquet(f"{out}/{target}")

    def many_unwritten() -> None:  # the same job into Spark's noop sink: find without the Parquet writer
        find(frame, MANY, STOCK_DECLARATION, tie_break="id", id_columns=["id"]).write.format("noop").mode(
            "overwrite"
        ).save()

    def batch(source=frame, target: str = "batch") -> None:
        found = find(source, TIME_QUERY, TIME_DECLARATION, tie_break="id", id_columns=["id"])
        found.write.mode("overwrite").parquet(f"{out}/{target}")

    def stream(source_path: str = data, target: str = "stream") -> None:
        source = spark.readStream.schema(schema).parquet(source_path)
        running = (
            find(source, TIME_QUERY, TIME_DECLARATION, tie_break="id", id_columns=["id"])
            .writeStream.format("parquet")
            .option("path", f"{out}/{target}")
            .option("checkpointLocation", f"{out}/{target}-checkpoint")
            .trigger(availableNow=True)
            .start()
        )
        _PAST_RUNS.append(str(running.runId))
        running.awaitTermination()

    # Warm-up: every measured job once, written as it is measured, on a little data: the JVM
    # compiles each job's code paths (the Parquet writer of nested columns among them: ~3 CPU s
    # the first time) before any is measured, so the ratios compare the jobs, not who ran first.
    small = frame.limit(5000)
    small.write.parquet(f"{out}/warm-up-input")
    small = spark.read.parquet(f"{out}/warm-up-input")
    floor(small, "warm-up-floor")
    many(small, "warm-up-find")
    many(small, "warm-up-flat", "flat")
    batch(small, "warm-up-batch")
    stream(f"{out}/warm-up-input", "warm-up-stream")
    figures["floor"] = measured(floor)
    figures["find"] = measured(many)
    figures["find_flat"] = measured(lambda: many(frame, "find-flat", "flat"))
    figures["find_unwritten"] = measured(many_unwritten)
    figures["batch"] = measured(batch)
    figures["stream"] = measured(stream)
    if user_data:
        people = spark.read.parquet(user_data)

        def written(found, name: str):
            return lambda: found.write.mode("overwrite").parquet(f"{out}/{name}")

        funnel = find(people, FUNNEL, USERS_DECLARATION, tie_break="id", id_columns=["id"])
        absent = find(people, ABSENCE, USERS_DECLARATION, tie_break="id", id_columns=["id"])

        def count_users(batches):  # per task, the rows of each of its users (vectorised)
            table = pa.Table.from_batches(list(batches), schema=people_schema)
            yield from table.group_by("user_id").aggregate([("id", "count")]).rename_columns(["user_id", "n"]).to_batches()

        from pyspark.sql.pandas.types import to_arrow_schema

        people_schema = to_arrow_schema(people.schema)

        def user_floor(source=people):
            """The floor of a keyed job on the user events: read, hash the users into the
            shuffle's partitions, a Python task per partition (Arrow in and out) counting
            each user's rows, write (what find's partitioned plan does, less the evaluation)."""
            return source.repartition("user_id").mapInArrow(count_users, "user_id long, n long")

        few = people.limit(5000)
        for name, job in (("floor", user_floor(few)), ("absence", find(few, ABSENCE, USERS_DECLARATION, tie_break="id", id_columns=["id"]))):
            written(job, f"warm-up-users-{name}")()
        figures["users_floor"] = measured(written(user_floor(), "users-floor"))
        figures["funnel"] = measured(written(funnel, "funnel"))
        figures["self_join"] = measured(written(self_join(people), "self_join"))
        figures["absence"] = measured(written(absent, "absence"))
        import ceql.spark

        figures["recognize"] = measured(written(ceql.spark.sql(RECOGNIZE, ev=people), "recognize"))
        figures["absence_jobs"] = jobs_of(spark, written(absent, "absence"))
        for name in ("funnel", "self_join", "absence", "recognize"):
            figures[f"{name}_matches"] = spark.read.parquet(f"{out}/{name}").count()
    # Jobs, stages and tasks of one find and one stream (after the timed runs: not timed).
    figures["find_jobs"] = jobs_of(spark, many)
    figures["floor_jobs"] = jobs_of(spark, floor)
    figures["stream_jobs"] = jobs_of(spark, lambda: (shutil.rmtree(f"{out}/stream", ignore_errors=True),
                                                     shutil.rmtree(f"{out}/stream-checkpoint", ignore_errors=True), stream()))
    figures["find_matches"] = spark.read.parquet(f"{out}/find").count()
    figures["find_flat_matches"] = spark.read.parquet(f"{out}/find-flat").count()
    figures["batch_matches"] = spark.read.parquet(f"{out}/batch").count()
    figures["stream_matches"] = spark.read.parquet(f"{out}/stream").count()
    spark.stop()
    return figures


def run_process(args: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(CPU s of the process tree, wall s) of a whole process. Its descendants (the JVM, the
    Python workers) are not all waited for by it, so their CPU is sampled while it runs (every
    0.2 s, the last sample of each process: it undercounts by at most that much per process)."""
    wall = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    seen: dict[int, float] = {}
    while child.poll() is None:
        for pid, cpu in _tree(child.pid, own=True).items():
            seen[pid] = max(cpu, seen.get(pid, 0.0))
        time.sleep(0.2)
    stdout, stderr = child.communicate()
    result = subprocess.CompletedProcess(args, child.returncode, stdout, stderr)
    return round(sum(seen.values()), 2), round(time.perf_counter() - wall, 2), result


def cli_tiny(master: str, root: Path) -> dict:
    """``ceql run --engine spark`` on the 7 events, and a process that only starts a session."""
    from benchmarks.generators import STOCK_DECLARATION

    folder = root / f"cli-{master[6:-1]}"
    folder.mkdir()
    (folder / "decl.core").write_text(STOCK_DECLARATION)
    lines = ["event_type,id,name,volume,price,stock_time"] + [",".join(map(str, row)) for row in TINY]
    (folder / "tiny.csv").write_text("\n".join(lines) + "\n")
    # A bare session that reads the same file: the least a Spark run of it costs.
    session_only = (
        "from ceql.spark import session; "
        f"spark = session({master!r}, progress=False, **{{'spark.sql.shuffle.partitions': {master[6:-1]!r}}}); "
        f"spark.read.option('header', True).csv({str(folder / 'tiny.csv')!r}).count(); spark.stop()"
    )
    env_python = sys.executable
    start = run_process([env_python, "-c", session_only])
    os.environ["CEQL_SHUFFLE_PARTITIONS"] = master[6:-1]
    cli = run_process(
        [env_python, "-m", "ceql", "run", "--engine", "spark", "--master", master, "-d", str(folder / "decl.core"),
         "-q", TINY_QUERY, "-i", str(folder / "tiny.csv"), "-o", str(folder / "out"), "--quiet"]
    )  # fmt: skip
    if cli[2].returncode:
        raise RuntimeError(cli[2].stderr[-2000:])
    return {"session_process": start[:2], "cli_tiny_process": cli[:2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--users", type=int, default=1_000_000, help="user events (0: none)")
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_master(*args.one)))
        return
    import pyarrow.parquet as pq

    import ceql
    from benchmarks.generators import STOCK_DECLARATION, stocks

    root = Path(tempfile.mkdtemp(prefix="ceql-spark-cost-"))
    data = root / "events"
    data.mkdir()
    table = stocks(args.events)
    step = -(-table.num_rows // FILES)
    for index in range(FILES):  # several files: the stream and the batch read the same ones
        pq.write_table(table.slice(index * step, step), data / f"part-{index}.parquet")
    query = ceql.compile(MANY, ceql.declare(STOCK_DECLARATION))
    cpu = time.process_time()
    wall = time.perf_counter()
    local_matches = query.run(pq.read_table(data), output="arrow").num_rows
    local = (round(time.process_time() - cpu, 2), round(time.perf_counter() - wall, 2))
    print(f"{args.events:,} events in {FILES} Parquet files; CPU s of the process tree (wall s)\n")
    print(f"local engine, the find query: {local[0]} ({local[1]}) s, {local_matches:,} matches\n")
    user_data, local_users = "", {}
    if args.users:
        people = users(args.users)
        folder = root / "users"
        folder.mkdir()
        step = -(-people.num_rows // FILES)
        for index in range(FILES):
            pq.write_table(people.slice(index * step, step), folder / f"part-{index}.parquet")
        user_data = str(folder)
        schema = ceql.declare(USERS_DECLARATION)
        for name, text in (("funnel", FUNNEL), ("absence", ABSENCE), ("recognize", RECOGNIZE)):
            cpu, wall = time.process_time(), time.perf_counter()
            if name == "recognize":
                count = ceql.sql.run(text, {"ev": pq.read_table(folder)}).num_rows
            else:
                count = ceql.compile(text, schema).run(pq.read_table(folder), output="arrow").num_rows
            local_users[name] = (round(time.process_time() - cpu, 2), round(time.perf_counter() - wall, 2), count)
            print(f"local engine, {name} ({args.users:,} user events): {local_users[name][0]} ({local_users[name][1]}) s, {count:,} matches")
        print()
    rows = []
    for master in args.masters.split(","):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.spark_cost",
                "--one",
                master,
                str(data),
                str(root / f"out-{master[6:-1]}"),
                user_data,
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        if result.returncode:
            from ceql.spark.progress import job_failure

            log = root.parent / f"ceql-spark-cost-{master[6:-1]}.log"
            log.write_text(result.stderr)
            print(f"{master}: error: {job_failure(RuntimeError(result.stderr))} (the whole log: {log})")
            continue
        f = json.loads(result.stdout.strip().splitlines()[-1])
        f.update(cli_tiny(master, root))
        assert f["find_matches"] == f["find_flat_matches"] == local_matches, f
        assert f["batch_matches"] == f["stream_matches"], f
        rows.append(f)

    def show(pair) -> str:
        return f"{pair[0]} ({pair[1]})"

    print(
        "| master | start-up | tiny find, cold | tiny find, warm | session-only process | CLI tiny process |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for f in rows:
        print(
            f"| {f['master']} | {show(f['startup'])} | {show(f['tiny_cold'])} | {show(f['tiny_warm'])} "
            f"| {show(f['session_process'])} | {show(f['cli_tiny_process'])} |"
        )
    print()
    print(
        "| master | floor | find (matches) | find/floor | find, flat | its /floor | find, not written | its /floor "
        "| batch (time) | stream (time) | stream/batch |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for f in rows:
        print(
            f"| {f['master']} | {show(f['floor'])} | {show(f['find'])} ({f['find_matches']:,}) "
            f"| {f['find'][0] / f['floor'][0]:.2f} | {show(f['find_flat'])} | {f['find_flat'][0] / f['floor'][0]:.2f} "
            f"| {show(f['find_unwritten'])} "
            f"| {f['find_unwritten'][0] / f['floor'][0]:.2f} | {show(f['batch'])} | {show(f['stream'])} "
            f"| {f['stream'][0] / f['batch'][0]:.2f} |"
        )
    print()
    print("| master | floor: jobs, stages, tasks | find | stream (all micro-batches) |")
    print("|---|---:|---:|---:|")
    for f in rows:
        print(f"| {f['master']} | {', '.join(map(str, f['floor_jobs']))} | {', '.join(map(str, f['find_jobs']))} "
              f"| {', '.join(map(str, f['stream_jobs']))} |")
    if local_users:
        print()
        print("| master | funnel find (matches) | x local | self-join (matches) | find/self-join | NOT FOLLOWED BY (matches, tasks of its job) | x local | floor on the user events | NOT FOLLOWED BY / that floor |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for f in rows:
            print(
                f"| {f['master']} | {show(f['funnel'])} ({f['funnel_matches']:,}) | {f['funnel'][0] / max(local_users['funnel'][0], 0.01):.2f} "
                f"| {show(f['self_join'])} ({f['self_join_matches']:,}) | {f['funnel'][0] / f['self_join'][0]:.2f} "
                f"| {show(f['absence'])} ({f['absence_matches']:,}, {f['absence_jobs'][2]}) | {f['absence'][0] / max(local_users['absence'][0], 0.01):.2f} "
                f"| {show(f['users_floor'])} | {f['absence'][0] / f['users_floor'][0]:.2f} |"
            )
            assert f["funnel_matches"] == local_users["funnel"][2] and f["absence_matches"] == local_users["absence"][2], f
        print()
        print("| master | MATCH_RECOGNIZE, ceql.spark.sql (matches) | x local |")
        print("|---|---:|---:|")
        for f in rows:
            print(
                f"| {f['master']} | {show(f['recognize'])} ({f['recognize_matches']:,}) "
                f"| {f['recognize'][0] / max(local_users['recognize'][0], 0.01):.2f} |"
            )
            assert f["recognize_matches"] == local_users["recognize"][2], f
    print(json.dumps(rows), file=sys.stderr)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
