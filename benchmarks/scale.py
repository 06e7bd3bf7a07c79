"""Scale benchmark: the ``synthesize`` flow from 10,000 to 1,000,000 rows, Dask workers, DP-SGD step cost.

Run on demand (not part of the tests), from the repository root:

    python benchmarks/scale.py                                   # everything, writes benchmarks/results/scale.{md,json}
    python benchmarks/scale.py --only e2e --sizes 10000 100000   # some parts; results merge into the JSON

Parts (``--only``):

``e2e``
    For each size, a table of that many rows resampled from UCI Adult with jitter plus a short
    fake note (benchmarks/scale_data.py; Parquet, row groups of 50,000) goes through the whole
    ``synthesize`` flow (scrub → mask → dpgen → watermark → gate → publish → MLflow) in a fresh
    process, partitions of ``--partition-rows`` on prefect-dask (one LocalCluster worker, threads),
    production settings (OS CSPRNG noise, ε = 1, utility check on). dpgen runs about 300 DP-SGD
    steps whatever the size, at expected batch min(max(512, n/100), 4096) (``synth_settings``). The Prefect API is started before
    the clock starts. Measured: end-to-end seconds; peak RSS of the run's process tree (sampled
    every 0.2 s; the Prefect server process reported apart); per stage (Prefect task runs,
    partitions summed) seconds, rows/s and the peak RSS while it ran; CPU seconds of the run.
``dask``
    The partitioned stages (scrub, mask, gate counts, merge) of the flow at ``--dask-rows`` rows in
    partitions of ``--dask-partition-rows``, on a LocalCluster with 1 worker and with 2 workers.
``dpsgd``
    dpgen's autoregressive net on Adult codes: seconds per DP-SGD step (``train_dpsgd``: Poisson
    sampling from the CSPRNG, book-keeping clipping (Opacus ghost clipping for models it does not
    cover), CSPRNG noise, Adam) over seconds per
    non-private step of the same model, batch size and optimizer, at 1 and 2 torch threads; and
    the same DP-SGD over 2 processes (``dpsyn.synth.distributed``, gloo) against 1.

Other processes may share the CPUs: load averages and CPU seconds are recorded with each number.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

STAGES = {  # Prefect task name -> stage
    "plan-partitions": "plan", "scrub-partition": "scrub", "mask-partition": "mask",
    "real-statistics-partition": "gate counts", "merge-partitions": "merge", "fit-synthesizer": "fit (DP-SGD)",
    "sample": "sample", "watermark": "watermark", "validate": "validate", "publish": "publish",
}
SUBFLOWS = {"prepare-partitions", "bench-prepare", "warm-up"}
STAGE_ORDER = ["plan", "scrub", "mask", "gate counts", "merge", "fit (DP-SGD)", "sample", "watermark", "validate",
               "publish", "bookkeeping"]


def _env(home: Path) -> dict:
    env = dict(os.environ)
    env.update(DPSYN_HOME=str(home), PREFECT_HOME=str(home / "prefect"),
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               DO_NOT_TRACK="1", TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="", GIT_PYTHON_REFRESH="quiet",
               PREFECT_LOGGING_LEVEL="WARNING", PYTHONWARNINGS="ignore",
               DPSYN_WATERMARK_KEY="00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
    env.pop("PREFECT_API_URL", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def synth_settings(n: int, threads: int | None) -> dict:
    """dpgen settings of the e2e runs: about 300 DP-SGD steps whatever n (whole epochs), at expected batch
    min(max(512, n/100), 4096). Once a step's batch is large, more rows need no more steps nor larger steps:
    only each step's Poisson sampling (one draw per row) grows with n."""
    batch = min(max(512, n // 100), 4096)
    per_epoch = -(-n // batch)
    cfg = {"epochs": max(1, round(300 / per_epoch)), "batch_size": batch}
    if threads:
        cfg["threads"] = threads
    return cfg


# -- child: one flow run -------------------------------------------------------------------------


def child_flow(args) -> None:
    """Run one synthesize flow (after warming up the Prefect API) and print a JSON line of timings."""
    spec = json.loads(args.child)
    from prefect import flow

    @flow(name="warm-up")
    def warm_up() -> int:
        return 1

    warm_up()  # starts the temporary Prefect API: not part of the measured time
    from dpsyn.config import SynthesizeConfig

    cfg = SynthesizeConfig(**spec["config"])
    if spec.get("prepare_only"):
        from flows import partitioned

        @flow(name="bench-prepare", validate_parameters=False)
        def bench_prepare(config) -> dict:
            from tasks import stages

            work = stages.make_workdir()
            try:
                return partitioned.prepare(config, work)["batch"]
            finally:
                stages.remove_workdir(work)

        run = bench_prepare
    else:
        from flows.synthesize import synthesize

        run = synthesize
    t0 = time.time()
    cpu0 = os.times()
    print(json.dumps({"event": "start", "t": t0}), flush=True)
    state = run(cfg, return_state=True)
    t1 = time.time()
    cpu1 = os.times()
    result = state.result(raise_on_failure=False)
    ok = state.is_completed()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system) + (cpu1.children_user - cpu0.children_user) + (
        cpu1.children_system - cpu0.children_system)
    tasks = _task_runs(t0)
    out = {"event": "done", "ok": ok, "seconds": t1 - t0, "t0": t0, "t1": t1, "cpu_seconds": cpu, "tasks": tasks,
           "error": None if ok else type(result).__name__ if isinstance(result, BaseException) else str(state.name)}
    if ok and isinstance(result, dict):
        out["gate_passed"] = result.get("gate_passed")
        out["epsilon_spent"] = result.get("epsilon_spent")
        out["partitions"] = result.get("partitions") or result.get("training_batch", {}).get("partitions")
    print(json.dumps(out), flush=True)


def _task_runs(after: float) -> list[dict]:
    """(name, start, end) of every task run that started after ``after`` (epoch seconds)."""
    from datetime import UTC

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterStartTime

    since = datetime.fromtimestamp(after - 1, tz=UTC)
    out, offset = [], 0
    with get_client(sync_client=True) as c:
        while True:
            page = c.read_task_runs(task_run_filter=TaskRunFilter(start_time=TaskRunFilterStartTime(after_=since)),
                                    limit=200, offset=offset)
            for tr in page:
                if tr.start_time is None or tr.end_time is None:
                    continue
                out.append({"name": tr.name.rsplit("-", 1)[0], "start": tr.start_time.timestamp(),
                            "end": tr.end_time.timestamp()})
            if len(page) < 200:
                break
            offset += 200
    return out


# -- parent: measure a child -------------------------------------------------------------------


def _is_prefect_server(p) -> bool:
    try:
        cmd = " ".join(p.cmdline())
    except Exception:
        return False
    return "uvicorn" in cmd or ("prefect" in cmd and "server" in cmd)


def run_measured(spec: dict, home: Path, log: Path) -> dict:
    """Run ``child_flow`` in a fresh process; sample its process tree's RSS every 0.2 s."""
    import psutil

    home.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    load0 = os.getloadavg()
    samples: list[tuple[float, float, float]] = []  # t, pipeline RSS (MiB), Prefect server RSS (MiB)
    with open(log, "w") as errf:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=_env(home), cwd=REPO, text=True)
        root = psutil.Process(proc.pid)
        import threading

        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        while proc.poll() is None:
            pipe = server = 0
            try:
                procs = [root] + root.children(recursive=True)
            except psutil.Error:
                procs = []
            for p in procs:
                try:
                    rss = p.memory_info().rss
                except psutil.Error:
                    continue
                if _is_prefect_server(p):
                    server += rss
                else:
                    pipe += rss
            samples.append((time.time(), pipe / 2**20, server / 2**20))
            time.sleep(0.2)
        reader.join(timeout=10)
    events = [json.loads(x) for x in lines if x.startswith("{")]
    done = next((e for e in events if e.get("event") == "done"), None)
    if done is None:
        return {"ok": False, "error": f"child exited with {proc.returncode} (see {log})", "loadavg_before": load0}
    t0, t1 = done["t0"], done["t1"]
    inside = [s for s in samples if t0 <= s[0] <= t1]
    res = {k: done[k] for k in ("ok", "seconds", "cpu_seconds", "error") if k in done}
    res.update({k: done.get(k) for k in ("gate_passed", "epsilon_spent", "partitions")})
    res["peak_rss_mib"] = max((s[1] for s in inside), default=0.0)
    res["peak_prefect_server_rss_mib"] = max((s[2] for s in inside), default=0.0)
    res["loadavg_before"], res["loadavg_after"] = load0, os.getloadavg()
    stages: dict[str, dict] = {}
    for tr in done["tasks"]:
        if tr["name"] in SUBFLOWS:  # the task run that stands for a subflow: its tasks are counted themselves
            continue
        name = STAGES.get(tr["name"], "bookkeeping")
        st = stages.setdefault(name, {"seconds": 0.0, "first": tr["start"], "last": tr["end"], "tasks": 0})
        st["seconds"] += tr["end"] - tr["start"]
        st["first"], st["last"] = min(st["first"], tr["start"]), max(st["last"], tr["end"])
        st["tasks"] += 1
    for st in stages.values():
        during = [s[1] for s in samples if st["first"] <= s[0] <= st["last"]]
        if not during:  # shorter than the sampling interval: the samples on either side
            during = [s[1] for s in samples if st["first"] - 0.25 <= s[0] <= st["last"] + 0.25]
        st["peak_rss_mib"] = max(during, default=0.0)
        st["span_seconds"] = st["last"] - st["first"]
        st["first"] -= t0
        st["last"] -= t0
    res["stages"] = stages
    return res


# -- parts -------------------------------------------------------------------------------------


def _table(n: int, work: Path) -> tuple[Path, Path]:
    import scale_data

    data = work / "data"
    schema = scale_data.make_schema(data)
    path = data / f"adult_scale_{n}.parquet"
    if not path.exists():
        t = time.time()
        scale_data.make_table(n, path, seed=0)
        print(f"  made {path.name} in {time.time() - t:.0f}s", flush=True)
    return path, schema


def part_e2e(args, results: dict) -> None:
    for n in args.sizes:
        data, schema = _table(n, args.work)
        home = args.work / f"home-e2e-{n}"
        cfg = {"data": str(data), "table_schema": str(schema), "out": str(args.work / f"out-{n}"), "overwrite": True,
               "synthesizer": "dpgen", "synthesizer_config": synth_settings(n, args.threads),
               "privacy": {"epsilon": 1.0},
               "scale": {"partition_rows": args.partition_rows, "n_workers": 1}}
        print(f"e2e {n:,} rows ...", flush=True)
        r = run_measured({"config": cfg}, home, args.work / f"e2e-{n}.log")
        r.update(rows=n, partition_rows=args.partition_rows, synthesizer_config=cfg["synthesizer_config"],
                 date=datetime.now().isoformat(timespec="minutes"))
        results.setdefault("e2e", {})[str(n)] = r
        _save(args, results)
        print(f"  {n:,} rows: {r.get('seconds', 0):.0f}s, peak RSS {r.get('peak_rss_mib', 0):.0f} MiB, ok={r['ok']}",
              flush=True)


def part_dask(args, results: dict) -> None:
    n = args.dask_rows
    data, schema = _table(n, args.work)
    for workers in (1, 2):
        cfg = {"data": str(data), "table_schema": str(schema), "out": str(args.work / "out-dask"), "overwrite": True,
               "privacy": {"epsilon": 1.0},
               "scale": {"partition_rows": args.dask_partition_rows, "n_workers": workers, "dask": True}}
        print(f"dask {workers} worker(s), {n:,} rows ...", flush=True)
        r = run_measured({"config": cfg, "prepare_only": True}, args.work / f"home-dask-{workers}",
                         args.work / f"dask-{workers}.log")
        r.update(rows=n, partition_rows=args.dask_partition_rows, workers=workers,
                 date=datetime.now().isoformat(timespec="minutes"))
        results.setdefault("dask", {})[str(workers)] = r
        _save(args, results)
        print(f"  {workers} worker(s): {r.get('seconds', 0):.0f}s", flush=True)


def _adult_codes(n: int, work: Path):
    import numpy as np
    import pandas as pd

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.masking import mask_table
    from dpsyn.pipeline.partition import plan_partitions, read_partition
    from dpsyn.schema import load_schema

    data, schema_path = _table(n, work)
    schema = load_schema(str(schema_path))
    frames = [mask_table(read_partition(data, schema, p), schema)[0] for p in plan_partitions(data, schema, 200_000)]
    df = pd.concat(frames, ignore_index=True)
    enc = DiscreteEncoder(schema)
    return np.ascontiguousarray(enc.encode(df[enc.names])), enc.sizes


def _ar_loss(sizes):
    from dpsyn.synth.dpgen import _one_hot

    def loss_fn(model, xb, criterion):
        return sum(criterion(lg, xb[:, j]) for j, lg in enumerate(model(_one_hot(xb, sizes))))

    return loss_fn


def child_dpsgd(args) -> None:
    """One DP-SGD vs non-private timing at the given threads (fresh process: torch threads are process-wide)."""
    import warnings

    import torch

    from dpsyn.privacy import NoiseSource, PrivacyAccountant
    from dpsyn.synth.dpgen import _ARNet
    from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd

    warnings.filterwarnings("ignore")
    spec = json.loads(args.child_dpsgd)
    torch.set_num_threads(spec["threads"])
    codes, sizes = _adult_codes(spec["rows"], Path(spec["work"]))
    data = torch.from_numpy(codes)
    n, batch, epochs = len(data), spec["batch"], spec["epochs"]
    q, steps = steps_and_rate(n, batch_size=batch, epochs=epochs)
    loss_fn = _ar_loss(sizes)
    torch.manual_seed(0)
    # non-private: the same model, optimizer and (fixed-size) batch; mean loss, one backward
    model = _ARNet(sizes, 64)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    crit = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):  # warm-up
        idx = torch.randint(n, (batch,), generator=gen)
        opt.zero_grad()
        loss_fn(model, data[idx], crit).backward()
        opt.step()
    t = time.perf_counter()
    for _ in range(steps):
        idx = torch.randint(n, (batch,), generator=gen)
        opt.zero_grad()
        loss_fn(model, data[idx], crit).backward()
        opt.step()
    plain = (time.perf_counter() - t) / steps
    # DP-SGD: dpsyn's one loop, production noise (OS CSPRNG); σ calibrated as a run would
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    sigma = acct.calibrate(sample_rate=q, steps=steps)
    noise = NoiseSource(secure=True)
    t = time.perf_counter()
    trained = train_dpsgd(_ARNet(sizes, 64), data=data, loss_fn=loss_fn, accountant=acct, noise=noise,
                          noise_multiplier=sigma, batch_size=batch, epochs=epochs, max_grad_norm=1.0, lr=1e-2,
                          label="bench", public_rows=n)
    dp = (time.perf_counter() - t) / steps
    # the parts of a DP step that do not depend on the model's arithmetic: the Poisson sample (as train_dpsgd
    # draws it) and the CSPRNG noise for every parameter
    t = time.perf_counter()
    for _ in range(20):
        noise.poisson_sample(n, q)
    sampling = (time.perf_counter() - t) / 20
    shapes = [p.shape for p in trained.parameters() if p.requires_grad]
    t = time.perf_counter()
    for _ in range(20):
        noise.normal_list(shapes, sigma)
    noise_s = (time.perf_counter() - t) / 20
    print(json.dumps({"rows": n, "batch": batch, "steps": steps, "threads": spec["threads"], "plain_step_s": plain,
                      "dp_step_s": dp, "poisson_sampling_s": sampling, "ratio": dp / plain,
                      "ratio_without_sampling": (dp - sampling) / plain, "clipping": trained.dp_clipping_,
                      "noise_s": noise_s, "parameters": sum(int(p.numel()) for p in trained.parameters()),
                      "epsilon": acct.epsilon(), "history": acct.history()}), flush=True)


def child_distributed(args) -> None:
    """DP-SGD of dpgen's net in 1 process (train_dpsgd) and over 2 gloo processes: seconds per step, ε."""
    import functools
    import warnings

    import torch

    from dpsyn.privacy import NoiseSource, PrivacyAccountant
    from dpsyn.synth.distributed import train_dpsgd_distributed
    from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd

    warnings.filterwarnings("ignore")
    spec = json.loads(args.child_distributed)
    codes, sizes = _adult_codes(spec["rows"], Path(spec["work"]))
    data = torch.from_numpy(codes)
    n, batch, epochs = len(data), spec["batch"], spec["epochs"]
    q, steps = steps_and_rate(n, batch_size=batch, epochs=epochs)
    out = {"rows": n, "batch": batch, "steps": steps}
    for world in (1, 2):
        acct = PrivacyAccountant(epsilon=1.0, delta=1e-6)
        sigma = acct.calibrate(sample_rate=q, steps=steps)
        t = time.perf_counter()
        if world == 1:
            torch.set_num_threads(1)
            from dpsyn.synth.dpgen import _ARNet

            train_dpsgd(_ARNet(sizes, 64), data=data, loss_fn=_ar_loss(sizes), accountant=acct,
                        noise=NoiseSource(secure=True), noise_multiplier=sigma, batch_size=batch, epochs=epochs,
                        max_grad_norm=1.0, lr=1e-2, label="bench", public_rows=len(data))
        else:
            from dpsyn.synth.dpgen import _ARNet

            train_dpsgd_distributed(functools.partial(_ARNet, sizes, 64), data=data, loss_fn=ARLoss(sizes),
                                    accountant=acct, noise_multiplier=sigma, batch_size=batch, epochs=epochs,
                                    max_grad_norm=1.0, lr=1e-2, label="bench", world_size=2,
                                    public_rows=len(data))
        out[f"seconds_{world}p"] = time.perf_counter() - t
        out[f"epsilon_{world}p"] = acct.epsilon()
        out[f"history_{world}p"] = acct.history()
    print(json.dumps(out), flush=True)


class ARLoss:
    """dpgen's loss (sum over columns of the per-sample cross-entropy), picklable for the gloo processes."""

    def __init__(self, sizes):
        self.sizes = list(sizes)

    def __call__(self, model, xb, criterion):
        from dpsyn.synth.dpgen import _one_hot

        return sum(criterion(lg, xb[:, j]) for j, lg in enumerate(model(_one_hot(xb, self.sizes))))


def _child_json(flag: str, spec: dict, log: Path) -> dict:
    load0 = os.getloadavg()
    with open(log, "w") as errf:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), flag, json.dumps(spec)],
                              stdout=subprocess.PIPE, stderr=errf, text=True, cwd=REPO, env=_env(Path(spec["work"])))
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if not lines:
        return {"ok": False, "error": f"exit code {proc.returncode} (see {log})"}
    return {**json.loads(lines[-1]), "loadavg_before": load0, "loadavg_after": os.getloadavg()}


def part_dpsgd(args, results: dict) -> None:
    n, epochs = args.dpsgd_rows, args.dpsgd_epochs
    _table(n, args.work)
    out = results.setdefault("dpsgd", {})
    for batch in args.dpsgd_batch:
        for threads in args.dpsgd_threads:
            print(f"dpsgd step time, batch {batch}, {threads} thread(s) ...", flush=True)
            out[f"threads_{threads}_batch_{batch}"] = _child_json(
                "--child-dpsgd", {"rows": n, "batch": batch, "epochs": epochs, "threads": threads,
                                  "work": str(args.work)}, args.work / f"dpsgd-{threads}-{batch}.log")
            _save(args, results)
    if args.dpsgd_distributed:
        batch = args.dpsgd_batch[0]
        print("distributed DP-SGD, 2 processes vs 1 ...", flush=True)
        out["distributed"] = _child_json("--child-distributed", {"rows": n, "batch": batch, "epochs": epochs,
                                                                 "work": str(args.work)}, args.work / "distributed.log")
        _save(args, results)


# -- results -------------------------------------------------------------------------------------


def _save(args, results: dict) -> None:
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    env = "OMP_NUM_THREADS=1 " if os.environ.get("OMP_NUM_THREADS") == "1" else ""
    command = f"{env}python benchmarks/scale.py " + " ".join(sys.argv[1:])
    results.pop("command", None)
    if command not in results.setdefault("commands", []) and "--render-only" not in command:
        results["commands"].append(command)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str))
    args.out.with_suffix(".md").write_text(render(results))


def render(results: dict) -> str:
    from math import log

    lines = ["# Scale benchmark", "", f"Machine: {results.get('machine', '?')}. Results of these invocations, "
             "merged in `benchmarks/results/scale.json` (the work folder and `--out` arguments are omitted):", ""]
    lines += [f"    {c}" for c in results.get("commands", [])]
    lines += ["",
             "**Shared CPUs.** Other jobs ran on the same 2 CPUs during these measurements: wall times are "
             "inflated by them (load average before → after, and CPU seconds of the run, are given with each "
             "number). CPU seconds do not depend on other load.", ""]
    e2e = results.get("e2e", {})
    if e2e:
        lines += ["## End to end: the `synthesize` flow", "",
                  "| rows | partitions | seconds | CPU seconds | peak RSS (run) | peak RSS (Prefect server) | gate | ε spent | load avg |",
                  "|---:|---:|---:|---:|---:|---:|---|---:|---|"]
        for n, r in sorted(e2e.items(), key=lambda kv: int(kv[0])):
            if not r.get("ok"):
                lines.append(f"| {int(n):,} | | failed: {r.get('error')} | | | | | | |")
                continue
            lb, la = r.get("loadavg_before", [0])[0], r.get("loadavg_after", [0])[0]
            parts = r.get("partitions") or r.get("stages", {}).get("scrub", {}).get("tasks", "-")
            lines.append(f"| {int(n):,} | {parts} | {r['seconds']:.0f} | {r['cpu_seconds']:.0f} | "
                         f"{r['peak_rss_mib']:.0f} MiB | {r['peak_prefect_server_rss_mib']:.0f} MiB | "
                         f"{'pass' if r.get('gate_passed') else 'fail'} | {r.get('epsilon_spent') or 0:.3f} | "
                         f"{lb:.1f} → {la:.1f} |")
        ok = {int(n): r for n, r in e2e.items() if r.get("ok")}
        if 100_000 in ok and 1_000_000 in ok:
            slope = log(ok[1_000_000]["seconds"] / ok[100_000]["seconds"]) / log(10)
            cslope = log(ok[1_000_000]["cpu_seconds"] / ok[100_000]["cpu_seconds"]) / log(10)
            lines += ["", f"Log-log slope of end-to-end time from 100,000 to 1,000,000 rows: **{slope:.2f}** "
                      f"(wall), {cslope:.2f} (CPU seconds)."]
        lines += ["", "Per stage (Prefect task runs; partitioned stages summed over partitions; rows/s = input rows / "
                  "summed seconds; peak RSS of the run's process tree while the stage ran):", ""]
        sizes = sorted(ok)
        lines.append("| stage | " + " | ".join(f"{n:,} rows: s, rows/s, peak RSS" for n in sizes) + " |")
        lines.append("|---|" + "---|" * len(sizes))
        for st in STAGE_ORDER:
            cells = []
            for n in sizes:
                s = ok[n]["stages"].get(st)
                rss = f"{s['peak_rss_mib']:.0f} MiB" if s and s["peak_rss_mib"] else "– MiB"
                cells.append("–" if s is None else f"{s['seconds']:.1f} s, {n / max(s['seconds'], 1e-9):,.0f}/s, {rss}")
            lines.append(f"| {st} | " + " | ".join(cells) + " |")
        cfgs = {n: ok[n].get("synthesizer_config") for n in sizes}
        if ok:
            lines += ["", "dpgen settings: " + "; ".join(f"{n:,}: {c}" for n, c in cfgs.items()) + ". Partitions of "
                      f"{next(iter(ok.values())).get('partition_rows', 0):,} rows, 1 Dask LocalCluster worker "
                      "(threads); Dask only for inputs of more than one partition."]
    dask = results.get("dask", {})
    if dask:
        lines += ["", "## Dask: 2 workers against 1 (partitioned stages only)", "",
                  "| workers | rows | partitions of | seconds | CPU seconds | peak RSS | load avg |", "|---:|---:|---:|---:|---:|---:|---|"]
        for w, r in sorted(dask.items()):
            if not r.get("ok"):
                lines.append(f"| {w} | | | failed: {r.get('error')} | | | |")
                continue
            lines.append(f"| {w} | {r['rows']:,} | {r['partition_rows']:,} | {r['seconds']:.0f} | {r['cpu_seconds']:.0f} | "
                         f"{r['peak_rss_mib']:.0f} MiB | {r['loadavg_before'][0]:.1f} → {r['loadavg_after'][0]:.1f} |")
    dp = results.get("dpsgd", {})
    if dp:
        lines += ["", "## DP-SGD step against a non-private step (dpgen's net, same batch and optimizer)", "",
                  "| torch threads | rows | batch | steps | non-private s/step | DP-SGD s/step | ratio | Poisson sampling s/step | ratio without sampling | load avg |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for k in sorted((k for k in dp if k.startswith("threads_")), key=lambda k: (dp[k].get("batch", 0), k)):
            r = dp[k]
            if "ratio" not in r:
                continue
            lines.append(f"| {r['threads']} | {r['rows']:,} | {r['batch']:,} | {r['steps']} | {r['plain_step_s'] * 1e3:.1f} ms | "
                         f"{r['dp_step_s'] * 1e3:.1f} ms | **{r['ratio']:.2f}** | {r['poisson_sampling_s'] * 1e3:.1f} ms | "
                         f"{r['ratio_without_sampling']:.2f} | {r['loadavg_before'][0]:.1f} → {r['loadavg_after'][0]:.1f} |")
        d = dp.get("distributed")
        if d and "seconds_1p" in d:
            lines += ["", f"Distributed DP-SGD (gloo, 2 processes × 1 thread) against 1 process × 1 thread, "
                      f"{d['rows']:,} rows, batch {d['batch']:,}, {d['steps']} steps: {d['seconds_2p']:.1f} s against "
                      f"{d['seconds_1p']:.1f} s (process start-up included); ε {d['epsilon_2p']:.6f} against "
                      f"{d['epsilon_1p']:.6f}, histories {'equal' if d['history_1p'] == d['history_2p'] else 'DIFFERENT'}."]
    lines += _bars(results)
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"* {x}" for x in results["notes"]]
    return "\n".join(lines) + "\n"


def _bars(results: dict) -> list[str]:
    """The issue's Done-when bars, judged from the numbers above (nothing assumed)."""
    from math import log

    out = ["", "## Against the Done-when bars", ""]
    ok = {int(n): r for n, r in results.get("e2e", {}).items() if r.get("ok")}
    big = ok.get(1_000_000)
    if big:
        total = big["peak_rss_mib"] + big["peak_prefect_server_rss_mib"]
        out.append(f"* 1,000,000 rows end to end in at most 20 minutes: {big['seconds'] / 60:.1f} min wall "
                   f"({big['cpu_seconds'] / 60:.1f} CPU-minutes): **{'met' if big['seconds'] <= 1200 else 'missed'}**.")
        out.append(f"* peak RSS at most 4 GiB: {big['peak_rss_mib']:,.0f} MiB for the run's processes, "
                   f"{total:,.0f} MiB with the Prefect server: **{'met' if total <= 4096 else 'missed'}**.")
    else:
        out.append("* 1,000,000 rows end to end: no finished run recorded.")
    if 100_000 in ok and 1_000_000 in ok:
        slope = log(ok[1_000_000]["seconds"] / ok[100_000]["seconds"]) / log(10)
        out.append(f"* log-log slope of end-to-end time, 100,000 → 1,000,000 rows, at most 1.1: {slope:.2f}: "
                   f"**{'met' if slope <= 1.1 else 'missed'}** (wall clock on shared CPUs; see the CPU-seconds "
                   "slope above).")
    ratios = [(k, r) for k, r in results.get("dpsgd", {}).items() if k.startswith("threads_") and "ratio" in r]
    if ratios:
        best = min(ratios, key=lambda kr: kr[1]["ratio"])[1]
        out.append(f"* a DP-SGD step at most 2× a non-private step: best measured {best['ratio']:.2f}× (batch "
                   f"{best['batch']:,}, {best['threads']} thread(s)): **{'met' if best['ratio'] <= 2 else 'missed'}**.")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--only", nargs="+", choices=["e2e", "dask", "dpsgd"], default=["e2e", "dask", "dpsgd"])
    ap.add_argument("--partition-rows", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=None, help="dpgen torch threads in the e2e runs (default: all)")
    ap.add_argument("--dask-rows", type=int, default=100_000)
    ap.add_argument("--dask-partition-rows", type=int, default=25_000)
    ap.add_argument("--dpsgd-rows", type=int, default=100_000)
    ap.add_argument("--dpsgd-batch", type=int, nargs="+", default=[1000, 4096])
    ap.add_argument("--dpsgd-threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--dpsgd-distributed", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--dpsgd-epochs", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "dpsyn-scale-bench")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "scale")
    ap.add_argument("--render-only", action="store_true", help="rewrite the Markdown from the JSON")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-dpsgd", help=argparse.SUPPRESS)
    ap.add_argument("--child-distributed", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_flow(args)
        return 0
    if args.child_dpsgd:
        child_dpsgd(args)
        return 0
    if args.child_distributed:
        child_distributed(args)
        return 0
    path = args.out.with_suffix(".json")
    results = json.loads(path.read_text()) if path.exists() else {}
    if args.render_only:
        args.out.with_suffix(".md").write_text(render(results))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    for part, fn in (("dpsgd", part_dpsgd), ("dask", part_dask), ("e2e", part_e2e)):
        if part in args.only:
            fn(args, results)
    print(f"wrote {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
