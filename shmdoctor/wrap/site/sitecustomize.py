"""Loaded by every Python process `shmdoctor run` starts (this folder is first on its PYTHONPATH): records each torch
DataLoader's settings and one batch's bytes (_shmdoctor_site), then runs the sitecustomize this one hides (Debian's,
a virtualenv's, the user's own), as Python would have. Any Python 3; silent whatever happens to its own part."""

import os
import sys

_HERE = os.path.dirname(__file__)  # the PYTHONPATH entry run wrote (a resolved path), as sys.path holds it


try:
    import _shmdoctor_site  # type: ignore[import-not-found]  # stays in sys.modules for spawned workers

    _shmdoctor_site.install()
except Exception:
    pass
sys.path[:] = [p for p in sys.path if p != _HERE]  # the child's sys.path as it would be without us


def _chain():
    """The next sitecustomize on sys.path, run as `sitecustomize`; its own errors are Python's to report, as ever."""
    try:
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    except Exception:
        return
    if spec is None or spec.loader is None:
        return
    import importlib.util  # only where there is one to run: a few ms of start-up

    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_chain()
