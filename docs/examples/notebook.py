"""A notebook in a script: load a store with the Python API, look at its trials as a
DataFrame, print the headline and draw each configuration's metric with matplotlib.

    python docs/examples/notebook.py STORE [FIGURE.png]

In Jupyter, run the cells (``# %%``) one by one: ``store.headline()``, ``store.kpis()`` and
``store.record()`` then render as HTML. docs/api.md explains every call;
tests/test_api.py runs this script on a store of seeded values.
"""

# %%
import sys

import matplotlib

matplotlib.use("Agg")  # a file, not a window: remove in a notebook
import matplotlib.pyplot as plt

import benchlang

path = sys.argv[1] if len(sys.argv) > 1 else "results.sqlite"
figure_path = sys.argv[2] if len(sys.argv) > 2 else "trials.png"
store = benchlang.open_store(path)

# %% One row per trial: the factors' levels, every measure, host, series, round, status ...
trials = store.trials(measured_only=True)
ok = trials[trials["status"] == "ok"]
print(ok.groupby("label", observed=True)["time"].describe()[["count", "50%", "min", "max"]])

# %% The same headline `benchlang analyze` ends with (HTML in Jupyter).
print(store.headline())

# %% Each configuration's trials, series by series.
labels = list(ok["label"].cat.categories)
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.boxplot([ok.loc[ok["label"] == label, "time"] for label in labels])
ax.set_xticks(range(1, len(labels) + 1), labels, rotation=20)
ax.set_ylabel("time (s)")
ax.set_title(f"{len(ok)} trials of {store.plan_hash[:19]}")
fig.tight_layout()
fig.savefig(figure_path, dpi=100)
print(f"wrote {figure_path}")
