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
# # A comparison study: systems x targets x trials, FuzzBench's statistics
#
# Reads what the study runner wrote into a study directory (`protocol.json`,
# `cells/*/result.json`, `selection.json`, `analysis/compare.json` and `analysis/mechanism.json`)
# and shows which cells count, per target each system's final coverage (median, IQR) against the reference (two-sided
# Mann-Whitney U, Vargha-Delaney A12: above 0.5 the system reaches more), coverage over time with
# bands, time to first finding (Kaplan-Meier, censored at the window), ranks, every claim the
# data cannot carry with its reason, and what each worker kind of the campaign cells added. The
# analysis is recomputed from the cells here and must equal the recorded one, so a failed check
# fails the notebook (papermill exits non-zero).

# %% tags=["parameters"]
study_dir = None  # the study directory (required)

# %%
import json
from pathlib import Path

import altair as alt
from IPython.display import Markdown, display

from symcc_ulfm import plots
from symcc_ulfm.compare import study_files, tables

alt.renderers.enable("svg")
assert study_dir is not None, "pass -p study_dir DIR"
root = Path(study_dir).absolute()
study = tables.load_study(root)
protocol, result = study["protocol"], study["analysis"]
print(f"study {root}\n  {len(protocol['targets'])} targets x {len(protocol['systems'])} systems x "
      f"{protocol['trials']} trials, {protocol['window_s']} s windows on {protocol['cores']} cores; reference "
      f"{protocol['reference']}, min_trials {protocol['min_trials']}")
display(Markdown("| protocol | |\n|---|---|\n" + "\n".join(f"| {k} | `{json.dumps(v)}` |" for k, v in protocol.items())))

# %% [markdown]
# ## The oracle check
#
# `selection.json` and `analysis/compare.json` must be exactly what the analysis computes from the
# cells' results (and the attempts the selection recorded), and `analysis/mechanism.json` what the
# campaign cells' states give.

# %%
selection, recomputed = study_files.compute_analysis(root, protocol, study["plan"])
recorded = result
assert json.loads(json.dumps(selection)) == study["selection"], "selection.json differs from the recomputed selection"
assert json.loads(json.dumps(recomputed)) == recorded, "analysis/compare.json differs from the recomputed analysis"
print(f"oracle check: selection and analysis recomputed from {len(study['results'])} cell results: equal")
mechanism = study_files.compute_mechanism(root, protocol, selection)
if study["mechanism"] is None:
    print("analysis/mechanism.json: not recorded (a study made before it was): computed here from the cells")
else:
    assert json.loads(json.dumps(mechanism)) == study["mechanism"], \
        "analysis/mechanism.json differs from the recomputed mechanism"
    print(f"oracle check: the mechanism of {len(mechanism['cells'])} campaign cells recomputed from their states: equal")

# %% [markdown]
# ## Selection and refusals

# %%
shown = tables.markdown_tables(study)
display(Markdown(f"### Selection\n\n{shown['selection']}"))
display(Markdown(f"### Refused claims\n\n{shown['refusals']}"))

# %% [markdown]
# ## Per target: final coverage against the reference

# %%
for target in result["targets"]:
    display(Markdown(f"### {target}\n\n{shown[f'target:{target}']}"))
for title, name in (("Time to first finding", "survival"), ("Findings", "findings"), ("Ranks", "ranks")):
    display(Markdown(f"### {title}\n\n{shown[name]}"))

# %% [markdown]
# ## What each kind of a campaign added
#
# For every counted campaign cell, from its campaign's state (`cells/<cell>/system/state`): the
# redundant-edge ratio (of the edges the analysis kinds' kept inputs reach, the share the fuzzer
# kinds' reach too), the hand-off times between the kinds, each kind's share of the CPU time and
# its edges reached first per CPU second; per target and system the median and IQR over the
# trials (`analysis/mechanism.json`). A system of one kind has no ratio. Definitions and limits:
# docs/worker-kinds.md, "What each kind adds".

# %%
display(Markdown(tables.mechanism_table(mechanism)))

# %% [markdown]
# ## Figures
#
# Saved as `figures/compare-*.svg` and `.png` in the study directory.

# %%
charts = plots.compare_charts(tables.chart_rows(study))
for name, chart in charts.items():
    plots.save_chart(chart, root / tables.FIGURES_DIR, name)
    display(chart)
missing = [f"{name}.{ext}" for name in charts for ext in ("svg", "png")
           if not (root / tables.FIGURES_DIR / f"{name}.{ext}").is_file()]
assert not missing, f"figures missing: {missing}"
print(f"{len(charts)} figures in {root / tables.FIGURES_DIR}")
