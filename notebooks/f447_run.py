# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python (symcc-ulfm .venv)
#     language: python
#     name: symcc-ulfm
# ---

# %% [markdown]
# # F447: one fault-tolerant concolic campaign, judged and sealed
#
# Runs one campaign on `ranks` ipyparallel MPI engines (`mpiexec --with-ft ulfm`), all engines
# at once; the failure schedule kills ranks on purpose. Then the independent oracle judges the
# state directory, the figures are drawn from the logs, and the run directory is sealed
# (`SHA256SUMS.txt`). Any failed check fails the notebook, so papermill exits non-zero.
#
# `make evidence` runs this notebook into `evidence/<run-id>/run.ipynb` and re-seals the run
# after papermill has written the executed notebook; see `evidence/README.md`. Run here or by
# papermill without `run_dir`, it writes `runs/notebook/<run-id>/` (ignored by git). A run
# directory holds `INCOMPLETE` until the last cell seals it: an interrupted or failed run keeps
# it, and `symcc-ulfm verify` calls such a run incomplete.

# %% tags=["parameters"]
ranks = 10
warm_spares = 2
workers_per_master = 3
failure_schedule = "0:2,1:3"
deadline_s = 15.0
stop_after = 0  # a budget by count: end once every worker has this many results in one generation (launch --stop-after)
executor = "concolic"
target = "bundle"
executor_options = {}
hosts = ""
minimum_hosts = 1
seed = 0
worker_kinds = ""  # e.g. "havoc:1,concolic:2": the kind of each worker slot of a group (launch --worker-kinds)
keep = "all"  # "novel": only candidates that add coverage (or first hold a finding) enter the corpus
slice_s = 5.0  # a fuzzer worker's lease
isolation = "namespaces"  # "none": run target code without namespaces (launch --isolation none)
seeds_dir = None  # a directory of seed inputs instead of the executor's own (as `launch --seeds`)
run_dir = None  # default: runs/notebook/<run-id>/ of the checkout (ignored by git); make evidence passes one
# False drops `--with-ft ulfm` from mpiexec while the policy still demands ULFM: the ranks'
# capability check then refuses plain MPI and this notebook fails (a demonstration, never a fallback).
with_ft = True
# On a Slurm cluster (docs/slurm.md): "mpi" runs mpiexec from this kernel; inside an allocation (salloc,
# or Jupyter started by sbatch) the engines go to its nodes. "slurm" submits the engines as an sbatch job
# from a kernel outside one, with mpiexec --with-ft ulfm in the job (never srun's direct launch, which has
# no ULFM); sbatch_options are its #SBATCH options, controller_ip an address of this machine the nodes reach.
engine_launcher = "mpi"
sbatch_options = ""  # e.g. "--nodes=2 --ntasks-per-node=5 --partition=long --time=00:30:00"
controller_ip = ""
replay_repeat = 10  # each finding is replayed this many times, each in a fresh sandbox (replay --repeat)
min_reproduction_rate = 0.8  # the measured rate every replayable finding must reach (replay --min-rate)

# %%
import json
import os

import altair as alt
from IPython.display import HTML, Markdown, display

from symcc_ulfm import plots
from symcc_ulfm.core.modes import modes_from_env
from symcc_ulfm.evidence import mechanism, provenance, rundir, timeline
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.evidence.verify import verify
from symcc_ulfm.executors.seed_dirs import read_seeds
from symcc_ulfm.launch.engines import Engines, engine_mpi_args, slurm_template
from symcc_ulfm.launch.launcher import plan
from symcc_ulfm.tools import replay, stats_files, status, status_views
from symcc_ulfm.tools.sources import open_source

alt.renderers.enable("svg")
policy = rundir.policy_from_parameters(
    ranks=ranks, warm_spares=warm_spares, workers_per_master=workers_per_master,
    failure_schedule=failure_schedule, deadline_s=deadline_s, stop_after=stop_after, executor=executor, target=target,
    executor_options=executor_options, hosts=hosts, minimum_hosts=minimum_hosts, seed=seed,
    worker_kinds=worker_kinds, keep=keep, slice_s=slice_s, isolation=isolation,
)
# the target's code runs in a sandbox child, never in this kernel; the lease is fitted to one run of the executor
seeds = read_seeds(seeds_dir) if seeds_dir else None  # a plain, AFL++ or libFuzzer directory
engines_runner = Engines(with_ft=with_ft, launcher=engine_launcher, sbatch_options=sbatch_options,
                         controller_ip=controller_ip)
modes = modes_from_env(os.environ)
launch = plan(engines_runner, modes, policy, seeds=seeds)
policy = launch.policy
run = rundir.open_run_dir(run_dir) if run_dir else rundir.new_run_dir(policy)
state = launch.prepare(run.state)
record = provenance.capture_policy(policy, seeds_dir=seeds_dir)
provenance.write(run.provenance, record)
print(f"run {run.run_id}\n  dir {run.root}\n  policy {policy.sha256}\n"
      f"  source tree {record['source_tree']['sha256']}\n  seeds {record['seed_input']}")
if engine_launcher == "slurm":
    print("  engines: an sbatch job running\n" + slurm_template(policy, modes, with_ft, sbatch_options))
else:
    print("  engines: mpiexec " + " ".join(engine_mpi_args(policy, modes, with_ft)))

# %% [markdown]
# ## The campaign on all engines
#
# Provenance is re-verified live right before the campaign starts. The live view below says
# what start-up waits for (the controller, the MPI engines coming up, the ranks starting), then
# follows the campaign from its durable files (`symcc-ulfm status` reads the same), with a small
# chart of corpus and coverage; it says "finished" only once the engines have returned. The
# cluster is stopped in every case; then the oracle judges the state directory. The plan, the
# state directory and the verdict are `symcc-ulfm launch`'s own (`symcc_ulfm.launch.launcher`);
# only the job runs on the engines instead of one `mpiexec`.

# %%
tracker = status.Tracker(state.root, modes)
table, figure = display(HTML(""), display_id=True), display(HTML(""), display_id=True)
live = status_views.LiveView(tracker, stats_files.StatsWriter(tracker, f"notebook f447_run {run.run_id}"),
                       show=lambda page: table.update(HTML(page)), draw=figure.update)


def live_check():
    provenance.verify_live(record, unit="campaign")
    provenance.write(run.provenance, record)


engines_runner.cluster_id, engines_runner.before_campaign = run.run_id, live_check  # now that they exist
engines_runner.progress, engines_runner.startup = live, live.waiting
campaign = launch.run()  # the campaign on the engines, then the oracle's verdict
engines, verdict = campaign.job, campaign.verdict
run.engines.write_text(json.dumps(engines.to_json(), indent=1, sort_keys=True) + "\n")
run.engines_output.write_text(engines.output)
print(f"engines up in {engines.startup_seconds:.1f} s; campaign {engines.seconds:.1f} s; "
      f"died {engines.classification['died']} (scheduled {engines.classification['scheduled_victims']}); "
      f"failed {engines.classification['failed']}")

# %% [markdown]
# ## The oracle

# %%
run.oracle.write_bytes((state.root / "oracle.json").read_bytes())
rows = [(k, verdict.get(k)) for k in ("passed", "result_sha256", "final_generation", "receipts", "promoted",
                                      "final_active", "masters", "workers", "surviving_hosts", "wal_analyzed",
                                      "wal_generated", "wal_unique", "wal_novel", "public_objects", "endpoint_edges")]
rows += [("findings", f"{verdict.get('findings_unique')} unique, {verdict.get('findings_hits')} hits")]
rows += [("engine " + str(e["rank"]), e["status"]) for e in engines.classification["engines"]]
rows += [("problem", p) for p in verdict["problems"]] + [("note", n) for n in verdict["notes"]]
display(Markdown("| | |\n|---|---|\n" + "\n".join(f"| {k} | `{v}` |" for k, v in rows)))
# what each worker kind found first (the oracle's own recount of the WAL)
attribution = (verdict.get("summary") or {}).get("attribution", {})  # a run that could not be judged has none
if attribution:
    lent = verdict.get("lent_slices", {})  # slices analysis workers ran while they had nothing to analyze
    display(Markdown("| worker kind | corpus inputs found first | of them adding coverage | findings | leases "
                     "| of them lent |\n|---|---|---|---|---|---|\n" + "\n".join(
                         f"| {kind} | {row['inputs']} | {row['novel']} | {row['findings']} | {row['works']} "
                         f"| {lent.get(kind, 0)} |" for kind, row in attribution.items())))

# %%
failures = [f"oracle: {p}" for p in verdict["problems"]] + engines.problems()
assert verdict["passed"] and engines.as_scheduled, "run FAILED:\n" + "\n".join(failures)

# %% [markdown]
# ## What each kind added
#
# For a hybrid run (`worker_kinds`), per worker kind: the edges its kept inputs reach, those it
# reached first (in commit order), the edges both the analysis and the fuzzer side reached (the
# redundant-edge ratio: of one side's edges, the share the other side reached too) and who reached
# them first, hand-off times between the kinds, and the CPU time of each kind
# (`symcc_ulfm.evidence.mechanism`; `symcc-ulfm mechanism` prints the same; the definitions and
# their limits are in docs/worker-kinds.md, "What each kind adds"), computed from the state directory.

# %%
added = mechanism.mechanism(state.root)
if worker_kinds:
    display(Markdown(mechanism.markdown(added)))
else:
    print(f"single kind ({policy.executor} in every worker slot): nothing to compare between kinds; "
          f"{added['edges']} edges, CPU {added['cpu_seconds']} s")

# %% [markdown]
# ## Findings, each replayed
#
# Every unique finding (kind and signature) with its hits (distinct inputs) and first time,
# then its input executed again `replay_repeat` times, contained, each time in a fresh sandbox, with
# the campaign's own executor: the measured rate of attempts giving the same kind and signature
# must reach `min_reproduction_rate` (one run proves little: a finding may depend on timing or on
# the address-space layout). Both tables are kept in the run (`findings.json`).

# %%
listed = replay.list_findings(state.root, modes)
replays = {r["id"]: r for r in replay.replay_all(open_source(state.root, modes), repeat=replay_repeat,
                                                  min_rate=min_reproduction_rate, record=False)}
run.findings.write_text(json.dumps({**listed, "replays": list(replays.values())}, indent=1, sort_keys=True) + "\n")


def _rate(row):
    measured = row["reproduction"]
    return "not replayed" if measured is None else \
        f"{measured['verdict']} {measured['reproduced']}/{measured['attempts']}"


table = [f"| {f['id']} | {f['kind']} | {f['hits']} | {f.get('first_seen_s', '–')} | `{f['signature']}` | "
         f"{_rate(replays[f['id']])} |" for f in listed["findings"]]
display(Markdown("| id | kind | hits | first (s) | signature | replay |\n|---|---|---:|---:|---|---|\n"
                 + ("\n".join(table) or "| – | no finding | | | | |")))
assert listed["unique"] == verdict["findings_unique"] and listed["hits"] == verdict["findings_hits"]
unreliable = [{k: r[k] for k in ("id", "signature", "reproduction", "outcomes")} for r in replays.values()
              if r["reproduction"] is not None and r["reproduction"]["rate"] < min_reproduction_rate]
assert not unreliable, f"findings below a reproduction rate of {min_reproduction_rate}: {unreliable}"

# %% [markdown]
# ## Figures
#
# Membership per generation (failures as red crosses, promotions as green triangles),
# throughput and novel coverage over time, and the work each master committed.

# %%
data = timeline.timeline(state.root)
for name, chart in plots.all_charts(data).items():
    plots.save_chart(chart, run.figures, name)
    display(chart)

# %% [markdown]
# ## Seal
#
# `SHA256SUMS.txt` covers every other file of the run. When papermill writes this notebook
# into the run directory, `make evidence` seals again after papermill has finished.

# %%
sealed = seal(run.root)
check = verify(run.root)
print(f"sealed {sealed['files']} files; verify: {'PASS' if check['passed'] else 'FAIL'} "
      f"result_sha256={check['result_sha256']}")
assert check["passed"], "\n".join(check["problems"])
assert check["result_sha256"] == verdict["result_sha256"]
print(f"re-verify: cd {run.root} && sha256sum -c SHA256SUMS.txt; symcc-ulfm verify {run.root}")
