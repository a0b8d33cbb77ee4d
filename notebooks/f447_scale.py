# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (symcc-ulfm .venv)
#     language: python
#     name: symcc-ulfm
# ---

# %% [markdown]
# # F447: how many workers are worth it — a preregistered scaling study
#
# Runs (or continues, or only loads) the matrix of a preregistered protocol: every tier of
# workers once per paired block, blocks and the order inside each block randomised from the
# protocol's seed, each cell a campaign without injected failures, provenance re-verified
# before every cell. Then the analysis (`selection.json`, `analysis/`), its tables, the
# figures, and the seal. Refused models are shown with their recorded reason, never fitted
# anyway. Any failed check fails the notebook, so papermill exits non-zero.
#
# `make scale` runs this notebook into `runs/scale-<time>-<protocol>/scale.ipynb` and re-seals
# the study after papermill has written the executed notebook.

# %% tags=["parameters"]
protocol_path = "protocols/default.json"  # relative to the checkout, or absolute
study_dir = None  # default: runs/scale-<UTC time>-<protocol sha8>/ of the checkout
resume = False  # True: continue the matrix already in study_dir (a finished one is only loaded)

# %%
import json
from pathlib import Path

import altair as alt
from IPython.display import Markdown, display
from tqdm import tqdm

from symcc_ulfm import plots
from symcc_ulfm.errors import MatrixCellsFailed
from symcc_ulfm.evidence.rundir import repo_root
from symcc_ulfm.evidence.seal import seal
from symcc_ulfm.experiment import analysis, study, views
from symcc_ulfm.experiment import protocol as protocols
from symcc_ulfm.experiment.matrix import REPORT_FILE, run_matrix

alt.renderers.enable("svg")
protocol_file = Path(protocol_path) if Path(protocol_path).is_absolute() else repo_root() / protocol_path
protocol = protocols.load(protocol_file)
plan = protocols.plan(protocol)
root = Path(study_dir).absolute() if study_dir else study.new_study_dir(repo_root() / "runs", protocol_file)
print(f"study {root}\n  protocol {protocol_file} sha256 {plan['protocol_sha256']}\n  {len(plan['cells'])} cells "
      f"planned: tiers {protocol['tiers']} x {protocol['repeats']} blocks, {protocol['window_s']} s windows")
display(Markdown("| protocol | |\n|---|---|\n" + "\n".join(f"| {k} | `{json.dumps(v)}` |" for k, v in protocol.items())))

# %% [markdown]
# ## The matrix
#
# Cells run in the planned order; finished cells are skipped on resume and an incomplete one
# is moved aside to `cells/.incomplete/`. A cell that fails internally is recorded (it counts
# against reliability); the notebook carries on to the analysis and fails at the very end.

# %%
done = sum((root / "cells" / c["cell"] / "COMPLETE").is_file() for c in plan["cells"])
cells_failed = None
with tqdm(total=len(plan["cells"]), initial=done, unit="cell", mininterval=5) as bar:
    def advance(result):
        bar.update(1)
        bar.set_postfix(cell=f"{result['block']}-{result['tier']}", status=result["status"])

    try:
        # each cell's exact mpiexec command is kept in its result.json; here only the progress
        report = run_matrix(protocol_file, root, resume=resume, on_cell=advance,
                            echo=lambda line: None if line.startswith("+ ") else print(line))
    except MatrixCellsFailed as exc:
        cells_failed = exc
        report = json.loads((root / REPORT_FILE).read_text())
print(report["summary"])

# %% [markdown]
# ## Analysis
#
# Means with normal 95% CIs over the performance blocks (complete blocks without a failed
# cell), Student-t 95% CIs of the paired relative change against the lowest tier, Wilson 95%
# intervals of the internal failure rate over the complete blocks, the USL and coverage
# saturation models, the recommended ceiling with every refusal, and the time to first finding
# per tier (censored at the window) with Mann-Whitney U and Vargha-Delaney A12 between tiers.

# %%
loaded = study.load_study(root)
tables = views.markdown_tables(loaded)
for title, name in (("Per tier", "summary"), ("Paired change against the lowest tier", "paired"),
                    ("Reliability", "reliability"), ("Models and ceiling", "models"), ("Selection", "selection"),
                    ("Time to first finding", "findings")):
    display(Markdown(f"### {title}\n\n{tables[name]}"))

# %% [markdown]
# ## Figures
#
# Throughput per tier (cells as dots, mean and 95% CI in blue, the fitted USL in red, drawn only
# over the measured range), paired changes, retention and endpoint coverage.

# %%
rows = views.chart_rows(loaded)
for name, chart in plots.scale_charts(rows).items():
    plots.save_chart(chart, root / study.FIGURES_DIR, name)
    display(chart)

# %%
expected = ["plan.json", "provenance.json", REPORT_FILE, "selection.json",
            *(f"analysis/{name}.json" for name in analysis.OUTPUTS),
            *(f"{study.FIGURES_DIR}/{name}.{ext}" for name in plots.scale_charts(rows) for ext in ("svg", "png"))]
missing = [rel for rel in expected if not (root / rel).is_file()]
assert not missing, f"missing: {missing}"
models = loaded["models"]
fits = {"usl_unique_per_s": ("gamma", "sigma", "kappa"), "usl_generated_per_s": ("gamma", "sigma", "kappa"),
        "coverage_endpoint_edges": ("g_inf", "rho")}
for name, parameters in fits.items():  # a refused model is recorded with its reason and has no numbers
    fit = models[name]
    if fit["refused"]:
        assert f"{name}: {fit['refused']}" in models["refusals"] and fit["detail"], name
        assert all(fit[p] is None for p in (*parameters, "threshold")), name
for name, component in (("usl_unique_per_s", "usl_threshold"), ("coverage_endpoint_edges", "coverage_threshold")):
    fit = models[name]  # the ceiling uses a threshold only when it is fitted and inside the measured range
    usable = not fit["refused"] and fit["threshold"] is not None and not fit["extrapolated"]
    assert models["ceiling"]["components"][component]["used"] == usable, name
print(f"analysis files present; {len(models['refusals'])} refusals recorded; ceiling {models['ceiling']['ceiling']}")

# %% [markdown]
# ## Seal
#
# `SHA256SUMS.txt` covers every file of the study; `study.verify_study` re-checks the seal,
# recomputes every cell's oracle result from its state and the whole analysis from the cells.
# `make scale` seals again after papermill has written this notebook into the study.

# %%
sealed = seal(root)
check = study.verify_study(root)
print(f"sealed {sealed['files']} files; verify: {'PASS' if check['passed'] else 'FAIL'} "
      f"({check['cells_checked']} cells) result_sha256={check['result_sha256']}")
assert check["passed"], "\n".join(check["problems"])
print(f"re-verify: cd {root} && sha256sum -c --strict SHA256SUMS.txt; "
      f"python -m symcc_ulfm.experiment.study verify {root}")

# %%
assert cells_failed is None, f"matrix cells failed internally (exit 3), the study is sealed: {cells_failed}"
