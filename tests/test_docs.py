"""The documentation site builds cleanly, with every notebook executed and its figures in it.

One build (``sphinx-build -W``, as ``make docs`` runs it) into a temporary folder: any
warning fails it.  The notebooks are executed by the build, at small scale
(``ACCEPTSIM_NOTEBOOK_SCALE=small``, set by ``docs/conf.py``), as a user runs them:
no cell may raise, each notebook's page must show its figures, and where a notebook
prints a conclusion the executed copy must contain it.

Marked ``docs``: ``make test-docs`` runs this module (and ``.ci/run`` after ``make
test``); ``make test`` leaves it out (pyproject.toml's ``-m``), the build alone takes
longer than a minute and a half.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))

#: text each notebook must print (its conclusion), beyond running without error
EXPECTED = {
    "architectures.ipynb": ["'select_cpu_grows_with_idle': True"],
    "multicore.ipynb": ["'exclusive_concentrates_before_1_21_6': True",
                        "'stall_hurts_reuseport_more': True",
                        "'one_worker_at_light_load': True",
                        "'a_shared_cpu_keeps_the_holder_longer': True"],
    "prototype_policy.ipynb": ["policy_vs_static rows: 3", "share-of-queues", "regret cases: 6"],
    "sweep.ipynb": ["gain_10_vs_1"],
    "validate.ipynb": ["off_mape_within_15pct: True", "direction right at",
                       "every_quota_mape_within_10pct: True", "cfs_within_5pct: True",
                       "pooled_policy_effect_within_noise: True",
                       "'haproxy_best_right_at_every_rate': True",
                       "'recommended_within_2_se_of_best': True"],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "html"
    env = {k: v for k, v in os.environ.items() if k != "ACCEPTSIM_NOTEBOOK_SCALE"}
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(ROOT / "docs"), str(out)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-5000:]
    return out


def test_every_page_is_built(site: Path) -> None:
    for page in ("index", "getting_started", "model", "design", "policy_results", "api",
                 "howto/sweep", "howto/validate", "howto/policy", "howto/add_server"):
        assert (site / f"{page}.html").is_file(), page


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_each_notebook_ran_and_its_page_shows_its_figures(site: Path, path: Path) -> None:
    page = (site / "notebooks" / f"{path.stem}.html").read_text()
    images = re.findall(r'<img [^>]*src="\.\./_images/[^"]+\.png"', page)
    assert images, f"{path.name}: no figure in its page"
    executed = json.loads((site.parent / "jupyter_execute" / "notebooks" / path.name).read_text())
    outputs = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    text = "".join(
        "".join(o.get("data", {}).get("text/plain", "")) + "".join(o.get("text", ""))
        for o in outputs
    )
    for expected in EXPECTED.get(path.name, []):
        assert expected in text, f"{path.name} did not print {expected!r}"
    if path.stem != "validate":  # measured runs: the same data at every scale
        # a page built small says so where its numbers are (acceptsim.notebook.scale_note)
        assert "Small scale (ACCEPTSIM_NOTEBOOK_SCALE=small" in text, path.name


def test_the_api_reference_documents_simulate_from_its_docstring(site: Path) -> None:
    page = (site / "api.html").read_text()
    assert 'id="acceptsim.models.experiment.simulate"' in page
    assert 'id="acceptsim.models.config.RunConfig"' in page
    from acceptsim.models.experiment import simulate

    first_line = simulate.__doc__.strip().splitlines()[0]
    assert first_line.split()[0] in page


def test_the_record_table_is_written_from_the_metrics_declaration(site: Path) -> None:
    from acceptsim.models.record import METRICS

    page = (site / "getting_started.html").read_text()
    for metric in METRICS:
        assert f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{metric.name}" \
            in page, metric.name
