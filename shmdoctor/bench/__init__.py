"""shmdoctor bench: the confirming DataLoader benchmark.

Each config runs in its own child process (child.py) watched by the parent (isolate.py, sampler.py): a worker's
bus error or an OOM kill is a result, not the end of the sweep. sweep.py picks the configs, decides when a config's
per-batch time is stable and which config to recommend; render.py and plot.py show the outcome.
"""
