"""``dlscale catalog show NAME`` (issue 26 item 11): every preset of every kind prints
as TOML that loads back to the same object; a cluster or workload as a whole file, a
part as its table in a file that starts from a preset (``base = ...``)."""

import dataclasses

import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import CLUSTERS, WORKLOADS
from dlscale.perfmodel.catalog.show import PRESET_KINDS
from dlscale.perfmodel.machine.config import load_cluster, load_workload

PRESETS = [(kind, name) for kind, (reg, _, _) in PRESET_KINDS.items() for name in reg]


def _part(obj, table):
    for attr in table.split(".") if table else []:
        obj = getattr(obj, attr)
    return obj


def _nones(obj):
    return {f.name for f in dataclasses.fields(obj) if f.init and getattr(obj, f.name) is None}


def _host(home, table, obj):
    """A preset to start from whose part at ``table`` is unset where ``obj``'s is: TOML
    has no "none", so a field left out keeps the base's value."""
    presets = CLUSTERS if home == "cluster" else WORKLOADS
    for name in ("summit", "resnet50", *presets):
        base = _part(presets[name], table) if name in presets else None
        if name in presets and (base is None or _nones(obj) <= _nones(base)):
            return name
    raise AssertionError(f"no {home} preset without {_nones(obj)} at {table}")


@pytest.mark.parametrize("kind,name", PRESETS, ids=[f"{k}:{n}" for k, n in PRESETS])
def test_every_preset_round_trips(kind, name, tmp_path, capsys):
    registry, table, home = PRESET_KINDS[kind]
    out = tmp_path / "shown.toml"
    assert main(["catalog", "show", name, "--kind", kind, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == out.read_text()
    path = tmp_path / "loaded.toml"
    text = printed if not table else f'base = "{_host(home, table, registry[name])}"\n' + printed
    path.write_text(text)
    loaded = (load_cluster if home == "cluster" else load_workload)(path)
    assert _part(loaded, table) == registry[name]


def test_a_shown_cluster_predicts_as_the_preset(tmp_path, capsys):
    f = tmp_path / "summit.toml"
    assert main(["catalog", "show", "summit", "-o", str(f)]) == 0
    capsys.readouterr()
    assert main(["predict", "summit", "resnet50", "--nodes", "1,64"]) == 0
    preset = capsys.readouterr().out
    assert main(["predict", str(f), "resnet50", "--nodes", "1,64"]) == 0
    assert capsys.readouterr().out == preset


def test_a_name_of_several_kinds_says_so(capsys):
    assert main(["catalog", "show", "resnet50"]) == 0
    head = capsys.readouterr().out.splitlines()[:2]
    assert head[0].startswith("# workload preset 'resnet50'")
    assert head[1] == "# also a model preset: --kind model"


@pytest.mark.parametrize("argv,match", [
    (["catalog", "show"], "catalog show: give the NAME"),
    (["catalog", "show", "sumit"], "preset: unknown name 'sumit'"),
    (["catalog", "show", "summit", "--kind", "device"], "device: unknown name 'summit'"),
    (["catalog", "machines", "summit"], "catalog machines: takes no NAME"),
    (["catalog", "machines", "--kind", "node"], "--kind: only with `catalog show NAME`"),
    (["catalog", "show", "summit", "--format", "json"], "--format json: catalog show prints TOML"),
])
def test_misuse_is_one_line(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_the_parser_knows_every_kind():
    from dlscale.commands import catalog

    assert catalog.PRESET_KINDS == tuple(PRESET_KINDS)


@pytest.mark.parametrize("name,spec", [("summit", "lognormal:0.0148"), ("stampede2-knl", "none")])
def test_an_undescribed_noise_says_what_applies(name, spec, tmp_path, capsys):
    """A preset's empty ``noise`` means "not described: the cited default applies"; the
    dump says so in a comment, not as ``noise = ""``, and loads back to the same
    cluster (fails before: ``noise = ""`` was printed)."""
    f = tmp_path / "c.toml"
    assert main(["catalog", "show", name, "--kind", "cluster", "-o", str(f)]) == 0
    text = capsys.readouterr().out
    assert 'noise = ""' not in text
    note = [ln for ln in text.splitlines() if ln.startswith("# noise:")]
    assert len(note) == 1 and "default applies: " + spec in note[0], note
    assert load_cluster(f) == CLUSTERS[name]


def test_a_described_noise_is_written_as_it_is(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text('base = "summit"\nnoise = "lognormal:0.03"\n')
    from dlscale.perfmodel.catalog.show import _noise_note
    from dlscale.perfmodel.machine.tomldump import to_toml

    c = load_cluster(f)
    assert 'noise = "lognormal:0.03"' in _noise_note(c, to_toml(c))
