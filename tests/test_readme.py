"""The README's commands and configuration examples stay true."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _block_after(heading: str) -> str:
    part = README.split(heading, 1)[1]
    return re.search(r"```toml\n(.*?)```", part, re.S).group(1)


def test_config_examples_in_readme_match_the_files():
    cluster = (ROOT / "examples/configs/cluster-full.toml").read_text()
    workload = (ROOT / "examples/configs/workload-full.toml").read_text()
    assert _block_after("### Cluster: a complete example").strip() == cluster.strip()
    assert _block_after("### Workload: a complete example").strip() == workload.strip()


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -e '.[test]'" in README and "pip install -q -e '.[test]'" in ci
    assert "python -m pytest -q" in README and "python -m pytest -q" in ci


def test_readme_says_to_activate_the_venv_before_its_bare_commands():
    """Issue 26 item 15: the quick start runs ``.venv/bin/dlscale``, every later block a
    bare ``dlscale``, with no word on the environment in between."""
    blocks = [m.group(1) for m in re.finditer(r"^```sh\n(.*?)^```", README, re.S | re.M)]
    bare = next(i for i, b in enumerate(blocks) if re.search(r"^dlscale ", b, re.M))
    first_bare = README.index(blocks[bare])
    assert "source .venv/bin/activate" in README[:first_bare]
